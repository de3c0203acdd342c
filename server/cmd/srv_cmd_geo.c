/*
 * srv_cmd_geo.c - geo commands on sorted sets whose scores are 52-bit
 * geohashes (srv_geo.h): GEOADD (ZADD behind it, as in Redis), GEOPOS,
 * GEODIST, GEOHASH, and one generic search behind GEOSEARCH,
 * GEOSEARCHSTORE, GEORADIUS(_RO) and GEORADIUSBYMEMBER(_RO): the cells
 * of the shape are walked in Redis's order, each as a score range of the
 * zset, members filtered by distance, then sorted or cut as asked.
 */
#include "server/cmd/srv_args.h"
#include "server/cmd/srv_cmd.h"
#include "server/cmd/srv_coll.h"
#include "server/cmd/srv_key.h"
#include "server/cmd/srv_txn.h"
#include "server/srv_conn.h"
#include "server/srv_geo.h"
#include "server/srv_notify.h"
#include "server/srv_reply.h"
#include "server/srv_util.h"
#include "storage/st_err.h"
#include "storage/st_keyspace.h"
#include "storage/st_zset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEOADD_TRIPLE 3
#define DIST_BUF 128
#define FIRST_POINTS 8

static const char ERR_UNIT[] =
    "ERR unsupported unit provided. please use M, KM, FT, MI";
static const char ERR_MEMBER[] = "ERR could not decode requested zset member";

/* Metres per unit of argv `a`, or -1 after replying the error. */
static double unit_or_reply(srv_conn *c, const srv_slice *a)
{
    if (srv_util_streq(a->ptr, a->len, "m"))
        return 1;
    if (srv_util_streq(a->ptr, a->len, "km"))
        return 1000;
    if (srv_util_streq(a->ptr, a->len, "ft"))
        return 0.3048;
    if (srv_util_streq(a->ptr, a->len, "mi"))
        return 1609.34;
    srv_reply_error(c, ERR_UNIT);
    return -1;
}

/* A double argument, with `err` (or the float error) when it is not. */
static int double_or_reply(srv_conn *c, const srv_slice *a, const char *err,
                           double *out)
{
    if (!srv_util_str2d(a->ptr, a->len, out)) {
        srv_reply_error(c, err ? err : SRV_ERR_NOT_FLOAT);
        return -1;
    }
    return 0;
}

/* argv[i], argv[i+1] as a valid longitude, latitude pair. */
static int lonlat_or_reply(srv_conn *c, int i, double *xy)
{
    if (double_or_reply(c, &c->argv[i], NULL, &xy[0]) ||
        double_or_reply(c, &c->argv[i + 1], NULL, &xy[1]))
        return -1;
    if (!srv_geo_valid(xy[0], xy[1])) {
        srv_reply_errorf(c, "ERR invalid longitude,latitude pair %f,%f", xy[0],
                         xy[1]);
        return -1;
    }
    return 0;
}

/* The position of `member` of zset o: 0, ST_ENOTFOUND or an error. */
static int member_xy(struct st_txn *t, const st_obj *o, const srv_slice *m,
                     double *xy)
{
    double score;
    int rc = st_zset_score(t, o, m->ptr, m->len, &score);

    if (rc == 0)
        srv_geo_decode(score, xy);
    return rc;
}

/* A distance as Redis replies it: four decimals, a bulk string. */
static void reply_distance(srv_conn *c, double d)
{
    char buf[DIST_BUF];
    int n = snprintf(buf, sizeof buf, "%.4f", d);

    srv_reply_bulk(c, buf, (size_t)n);
}

/* A coordinate: 17 decimals trimmed; a bulk in RESP2, a double in RESP3. */
static void reply_coord(srv_conn *c, double v)
{
    char buf[SRV_LDSTR_SIZE];
    int n = srv_util_ld2str(buf, sizeof buf, (long double)v);

    if (c->resp == 2) {
        srv_reply_bulk(c, buf, (size_t)n);
        return;
    }
    srv_reply_raw(c, ",", 1);
    srv_reply_raw(c, buf, (size_t)n);
    srv_reply_raw(c, "\r\n", 2);
}

/* Open argv[i] as a zset for reading: 1 found, 0 absent, -1 replied. */
static int open_zset(srv_conn *c, struct st_txn *t, int i, st_keyref *k,
                     st_obj *o)
{
    return srv_coll_open_or_reply(c, t, i, ST_TYPE_ZSET, k, o);
}

/* ------------------------------------------------------------------ */
/* GEOADD GEOPOS GEODIST GEOHASH */

/*
 * GEOADD key [NX|XX] [CH] lon lat member ...: every position is checked
 * first, then the command runs as ZADD key [options] score member ...
 * with the positions' scores (the ZADD body replies).
 */
void srv_cmd_geoadd(srv_conn *c)
{
    int first = 2, nx = 0, xx = 0, n, argc;
    srv_slice *orig = c->argv, *argv;
    char(*scores)[SRV_LLSTR_SIZE];
    int orig_argc = c->argc;

    for (; first < c->argc; first++) {
        const srv_slice *a = &c->argv[first];
        if (srv_util_streq(a->ptr, a->len, "nx"))
            nx = 1;
        else if (srv_util_streq(a->ptr, a->len, "xx"))
            xx = 1;
        else if (!srv_util_streq(a->ptr, a->len, "ch"))
            break;
    }
    if ((c->argc - first) % GEOADD_TRIPLE || (nx && xx)) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    n = (c->argc - first) / GEOADD_TRIPLE;
    argc = first + 2 * n;
    argv = malloc(sizeof *argv * (size_t)argc + sizeof *scores * (size_t)n + 1);
    if (!argv) {
        srv_reply_error(c, "ERR out of memory");
        return;
    }
    scores = (char(*)[SRV_LLSTR_SIZE])(void *)(argv + argc);
    memcpy(argv, c->argv, sizeof *argv * (size_t)first);
    for (int i = 0; i < n; i++) {
        double xy[2];
        int at = first + i * GEOADD_TRIPLE;
        if (lonlat_or_reply(c, at, xy)) {
            free(argv);
            return;
        }
        int len = srv_util_ll2str(scores[i],
                                  (long long)srv_geo_score(xy[0], xy[1]));
        argv[first + 2 * i].ptr = scores[i];
        argv[first + 2 * i].len = (size_t)len;
        argv[first + 2 * i + 1] = c->argv[at + 2];
    }
    c->argv = argv;
    c->argc = argc;
    srv_cmd_zadd(c);
    c->argv = orig;
    c->argc = orig_argc;
    free(argv);
}

void srv_cmd_geopos(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    int found;

    if (!t || (found = open_zset(c, t, 1, &k, &o)) < 0)
        return;
    srv_reply_array(c, c->argc - 2);
    for (int j = 2; j < c->argc; j++) {
        double xy[2];
        int rc = found ? member_xy(t, &o, &c->argv[j], xy) : ST_ENOTFOUND;
        if (rc == ST_ENOTFOUND) {
            srv_reply_null_array(c);
            continue;
        }
        if (rc) { /* the array is under way: an empty member stands in */
            srv_reply_null_array(c);
            continue;
        }
        srv_reply_array(c, 2);
        reply_coord(c, xy[0]);
        reply_coord(c, xy[1]);
    }
}

void srv_cmd_geodist(srv_conn *c)
{
    struct st_txn *t;
    double to_m = 1, a[2], b[2];
    st_keyref k;
    st_obj o;
    int found, ra, rb;

    if (c->argc == 5) {
        if ((to_m = unit_or_reply(c, &c->argv[4])) < 0)
            return;
    } else if (c->argc > 5) {
        srv_reply_error(c, SRV_ERR_SYNTAX);
        return;
    }
    if (!(t = srv_txn_read_or_reply(c)) ||
        (found = open_zset(c, t, 1, &k, &o)) < 0)
        return;
    if (!found) {
        srv_reply_null(c);
        return;
    }
    ra = member_xy(t, &o, &c->argv[2], a);
    rb = ra ? ra : member_xy(t, &o, &c->argv[3], b);
    if (ra == ST_ENOTFOUND || rb == ST_ENOTFOUND) {
        srv_reply_null(c);
        return;
    }
    if (ra || rb) {
        srv_txn_error(c, ra ? ra : rb);
        return;
    }
    reply_distance(c, srv_geo_distance(a[0], a[1], b[0], b[1]) / to_m);
}

void srv_cmd_geohash(srv_conn *c)
{
    struct st_txn *t = srv_txn_read_or_reply(c);
    st_keyref k;
    st_obj o;
    int found;

    if (!t || (found = open_zset(c, t, 1, &k, &o)) < 0)
        return;
    srv_reply_array(c, c->argc - 2);
    for (int j = 2; j < c->argc; j++) {
        const srv_slice *m = &c->argv[j];
        char hash[SRV_GEO_HASH_CHARS];
        double score;
        if (!found || st_zset_score(t, &o, m->ptr, m->len, &score)) {
            srv_reply_null(c);
            continue;
        }
        srv_geo_hash_string(score, hash);
        srv_reply_bulk(c, hash, sizeof hash);
    }
}

/* ------------------------------------------------------------------ */
/* the search */

#define S_COORDS 0x01u  /* GEORADIUS: centre from lon lat */
#define S_MEMBER 0x02u  /* GEORADIUSBYMEMBER: centre from a member */
#define S_NOSTORE 0x04u /* the _RO variants */
#define S_SEARCH 0x08u  /* GEOSEARCH's arguments */
#define S_STORE 0x10u   /* GEOSEARCHSTORE */

enum { SORT_NONE, SORT_ASC, SORT_DESC };

typedef struct geo_point {
    double lon, lat, dist, score;
    size_t off, len; /* member bytes in the points' text buffer */
} geo_point;

typedef struct geo_found {
    const srv_geo_shape *shape;
    geo_point *v;
    size_t n, cap;
    char *text;
    size_t tlen, tcap;
    long long limit; /* ANY: stop at this many (0: all) */
    int oom;
} geo_found;

static int found_add(void *ctx, const uint8_t *m, size_t ml, double score)
{
    geo_found *f = ctx;
    double xy[2], dist;

    srv_geo_decode(score, xy);
    if (!srv_geo_within(f->shape, xy[0], xy[1], &dist))
        return 0;
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : FIRST_POINTS;
        geo_point *v = realloc(f->v, cap * sizeof *v);
        if (!v) {
            f->oom = 1;
            return 1;
        }
        f->v = v;
        f->cap = cap;
    }
    if (f->tlen + ml > f->tcap) {
        size_t cap = f->tcap ? 2 * f->tcap : ml + FIRST_POINTS * 16;
        while (cap < f->tlen + ml)
            cap *= 2;
        char *p = realloc(f->text, cap);
        if (!p) {
            f->oom = 1;
            return 1;
        }
        f->text = p;
        f->tcap = cap;
    }
    memcpy(f->text + f->tlen, m, ml);
    f->v[f->n] = (geo_point){ xy[0], xy[1], dist, score, f->tlen, ml };
    f->tlen += ml;
    f->n++;
    return f->limit && (long long)f->n >= f->limit;
}

/* Walk the cells of the shape in order, as Redis does: a zeroed cell is
 * skipped, and so is one equal to the cell walked just before it. */
static int collect(struct st_txn *t, st_obj *o, geo_found *f)
{
    srv_geo_cell cells[SRV_GEO_CELLS];
    int last = 0, rc;

    srv_geo_cells(f->shape, cells);
    for (int i = 0; i < SRV_GEO_CELLS; i++) {
        uint64_t min, max, visited;
        if (cells[i].bits == 0 && cells[i].step == 0)
            continue;
        if (last && cells[i].bits == cells[last].bits &&
            cells[i].step == cells[last].step)
            continue;
        if (f->limit && (long long)f->n >= f->limit)
            break;
        srv_geo_cell_range(cells[i], &min, &max);
        st_zrange r = { .by = ST_ZBY_SCORE,
                        .min = (double)min,
                        .max = (double)max,
                        .maxex = 1,
                        .limit = UINT64_MAX };
        if ((rc = st_zset_walk(t, o, &r, 0, found_add, f, &visited)))
            return rc;
        if (f->oom)
            return ENOMEM;
        last = i;
    }
    return 0;
}

static int by_dist_asc(const void *a, const void *b)
{
    const geo_point *x = a, *y = b;

    return x->dist > y->dist ? 1 : x->dist == y->dist ? 0 : -1;
}

static int by_dist_desc(const void *a, const void *b)
{
    return -by_dist_asc(a, b);
}

/* A distance argument and its unit: argv[i] (`err` if not a number),
 * argv[i+1] the unit. */
static int distance_or_reply(srv_conn *c, int i, srv_geo_shape *s)
{
    if (double_or_reply(c, &c->argv[i], "ERR need numeric radius", &s->radius))
        return -1;
    if (s->radius < 0) {
        srv_reply_error(c, "ERR radius cannot be negative");
        return -1;
    }
    return (s->conversion = unit_or_reply(c, &c->argv[i + 1])) < 0 ? -1 : 0;
}

static int box_or_reply(srv_conn *c, int i, srv_geo_shape *s)
{
    if (double_or_reply(c, &c->argv[i], "ERR need numeric width", &s->width) ||
        double_or_reply(c, &c->argv[i + 1], "ERR need numeric height",
                        &s->height))
        return -1;
    if (s->height < 0 || s->width < 0) {
        srv_reply_error(c, "ERR height or width cannot be negative");
        return -1;
    }
    return (s->conversion = unit_or_reply(c, &c->argv[i + 2])) < 0 ? -1 : 0;
}

typedef struct geo_opts {
    int withdist, withhash, withcoord, any, sort, storedist;
    int frommember, fromloc, byradius, bybox;
    long long count;
    int store; /* argv index of the destination, 0: none */
} geo_opts;

static int is(const srv_slice *a, const char *w)
{
    return srv_util_streq(a->ptr, a->len, w);
}

/* The options after argv[base]; the centre of a GEOSEARCH is looked up in
 * `o` when found. 0, or -1 after replying. */
static int parse_opts_or_reply(srv_conn *c, struct st_txn *t, int base,
                               unsigned flags, int found, st_obj *o,
                               srv_geo_shape *s, geo_opts *g)
{
    int search = (flags & S_SEARCH) != 0;

    for (int i = base; i < c->argc; i++) {
        const srv_slice *a = &c->argv[i];
        int rem = c->argc - i - 1;
        if (is(a, "withdist"))
            g->withdist = 1;
        else if (is(a, "withhash"))
            g->withhash = 1;
        else if (is(a, "withcoord"))
            g->withcoord = 1;
        else if (is(a, "any"))
            g->any = 1;
        else if (is(a, "asc"))
            g->sort = SORT_ASC;
        else if (is(a, "desc"))
            g->sort = SORT_DESC;
        else if (is(a, "count") && rem >= 1) {
            if (srv_args_ll_or_reply(c, &c->argv[i + 1], &g->count))
                return -1;
            if (g->count <= 0) {
                srv_reply_error(c, "ERR COUNT must be > 0");
                return -1;
            }
            i++;
        } else if ((is(a, "store") || is(a, "storedist")) && rem >= 1 &&
                   !(flags & S_NOSTORE) && !search) {
            g->store = i + 1;
            g->storedist = is(a, "storedist");
            i++;
        } else if (is(a, "storedist") && search && (flags & S_STORE)) {
            g->storedist = 1;
        } else if (is(a, "frommember") && rem >= 1 && search && !g->fromloc) {
            int rc;
            if (found && (rc = member_xy(t, o, &c->argv[i + 1], s->xy))) {
                if (rc == ST_ENOTFOUND)
                    srv_reply_error(c, ERR_MEMBER);
                else
                    srv_txn_error(c, rc);
                return -1;
            }
            g->frommember = 1;
            i++;
        } else if (is(a, "fromlonlat") && rem >= 2 && search &&
                   !g->frommember) {
            if (lonlat_or_reply(c, i + 1, s->xy))
                return -1;
            g->fromloc = 1;
            i += 2;
        } else if (is(a, "byradius") && rem >= 2 && search && !g->bybox) {
            if (distance_or_reply(c, i + 1, s))
                return -1;
            s->type = SRV_GEO_RADIUS;
            g->byradius = 1;
            i += 2;
        } else if (is(a, "bybox") && rem >= 3 && search && !g->byradius) {
            if (box_or_reply(c, i + 1, s))
                return -1;
            s->type = SRV_GEO_BOX;
            g->bybox = 1;
            i += 3;
        } else {
            srv_reply_error(c, SRV_ERR_SYNTAX);
            return -1;
        }
    }
    return 0;
}

/* The option checks Redis makes after parsing. */
static int check_opts_or_reply(srv_conn *c, unsigned flags, const geo_opts *g)
{
    const srv_slice *name = &c->argv[0];

    if ((g->store || (flags & S_STORE)) &&
        (g->withdist || g->withhash || g->withcoord)) {
        srv_reply_errorf(c,
                         "ERR %s is not compatible with WITHDIST, WITHHASH "
                         "and WITHCOORD options",
                         flags & S_STORE ? "GEOSEARCHSTORE"
                                         : "STORE option in GEORADIUS");
        return -1;
    }
    if ((flags & S_SEARCH) && !(g->frommember || g->fromloc)) {
        srv_reply_errorf(c,
                         "ERR exactly one of FROMMEMBER or FROMLONLAT can be "
                         "specified for %.*s",
                         (int)name->len, name->ptr);
        return -1;
    }
    if ((flags & S_SEARCH) && !(g->byradius || g->bybox)) {
        srv_reply_errorf(c,
                         "ERR exactly one of BYRADIUS and BYBOX can be "
                         "specified for %.*s",
                         (int)name->len, name->ptr);
        return -1;
    }
    if (g->any && !g->count) {
        srv_reply_error(c, "ERR the ANY argument requires COUNT argument");
        return -1;
    }
    return 0;
}

static void reply_points(srv_conn *c, const geo_found *f, size_t n,
                         const geo_opts *g, double conversion)
{
    int extra = g->withdist + g->withhash + g->withcoord;

    srv_reply_array(c, (long long)n);
    for (size_t i = 0; i < n; i++) {
        const geo_point *p = &f->v[i];
        if (extra)
            srv_reply_array(c, extra + 1);
        srv_reply_bulk(c, f->text + p->off, p->len);
        if (g->withdist)
            reply_distance(c, p->dist / conversion);
        if (g->withhash)
            srv_reply_int(c, (long long)p->score);
        if (g->withcoord) {
            srv_reply_array(c, 2);
            reply_coord(c, p->lon);
            reply_coord(c, p->lat);
        }
    }
}

/* Replace argv[di] with a zset of the first n points (scores: their
 * hashes, or with STOREDIST their distances in the unit); none deletes
 * it. Then the keyspace event, as Redis: `event` on a stored result,
 * "del" when an empty one removed the key, nothing when there was none. */
static int store_points(srv_conn *c, struct st_txn *t, int di,
                        const geo_found *f, size_t n, const geo_opts *g,
                        double conversion, const char *event)
{
    st_keyref dk;
    st_obj d;
    int rc, created;

    srv_key_ref(c, di, &dk);
    rc = st_keyspace_delete(t, &dk, srv_cmd_now(c));
    if (rc && rc != ST_ENOTFOUND)
        return rc;
    if (n == 0) {
        if (rc == 0)
            srv_notify_arg(c, SRV_NOTIFY_GENERIC, "del", di);
        return 0;
    }
    rc = st_coll_open(t, &dk, ST_TYPE_ZSET, srv_cmd_now(c), &d);
    if (rc != ST_ENOTFOUND)
        return rc ? rc : ST_ECORRUPT;
    if ((rc = st_coll_create(t, &d)))
        return rc;
    for (size_t i = 0; i < n && !rc; i++) {
        const geo_point *p = &f->v[i];
        rc = st_zset_add(t, &d, f->text + p->off, p->len,
                         g->storedist ? p->dist / conversion : p->score,
                         &created);
    }
    if (rc || (rc = st_coll_save(t, &d, srv_cmd_now(c))))
        return rc;
    srv_notify_arg(c, SRV_NOTIFY_ZSET, event, di);
    return 0;
}

/*
 * The search family: the zset at argv[src], the shape from the command's
 * form (`flags`), the options after its fixed arguments.
 */
static void search_generic(srv_conn *c, int src, unsigned flags)
{
    srv_geo_shape shape = { 0 };
    geo_opts g = { 0 };
    geo_found f = { 0 };
    struct st_txn *t;
    const char *event = flags & S_SEARCH ? "geosearchstore" : "georadiusstore";
    int found, base, rc, writes;
    size_t n;
    st_keyref k;
    st_obj o;

    /* A STORE form writes: it needs the write transaction. */
    writes = (flags & S_STORE) != 0;
    if (!writes && !(flags & (S_NOSTORE | S_SEARCH)))
        for (int i = 0; i < c->argc - 1; i++)
            if (is(&c->argv[i], "store") || is(&c->argv[i], "storedist"))
                writes = 1;
    t = writes ? srv_txn_write_or_reply(c) : srv_txn_read_or_reply(c);
    if (!t || (found = open_zset(c, t, src, &k, &o)) < 0)
        return;
    if (flags & S_COORDS) {
        base = 6;
        shape.type = SRV_GEO_RADIUS;
        if (lonlat_or_reply(c, 2, shape.xy) || distance_or_reply(c, 4, &shape))
            return;
    } else if (flags & S_MEMBER) {
        base = 5;
        if (found) {
            shape.type = SRV_GEO_RADIUS;
            rc = member_xy(t, &o, &c->argv[2], shape.xy);
            if (rc) {
                if (rc == ST_ENOTFOUND)
                    srv_reply_error(c, ERR_MEMBER);
                else
                    srv_txn_error(c, rc);
                return;
            }
            if (distance_or_reply(c, 3, &shape))
                return;
        }
    } else {
        base = flags & S_STORE ? 3 : 2;
        if (flags & S_STORE)
            g.store = 1;
    }
    if (parse_opts_or_reply(c, t, base, flags, found, &o, &shape, &g) ||
        check_opts_or_reply(c, flags, &g))
        return;
    if (!found) {
        if (g.store) {
            if ((rc = store_points(c, t, g.store, &f, 0, &g, 1, event))) {
                srv_txn_error(c, rc);
                return;
            }
            srv_reply_int(c, 0);
        } else {
            srv_reply_array(c, 0);
        }
        return;
    }
    /* COUNT without an order means the nearest: ascending (not with ANY). */
    if (g.count && g.sort == SORT_NONE && !g.any)
        g.sort = SORT_ASC;
    f.shape = &shape;
    f.limit = g.any ? g.count : 0;
    rc = collect(t, &o, &f);
    if (rc) {
        srv_txn_error(c, rc);
        goto out;
    }
    n = g.count && (size_t)g.count < f.n ? (size_t)g.count : f.n;
    if (g.sort != SORT_NONE && f.n > 1)
        qsort(f.v, f.n, sizeof *f.v,
              g.sort == SORT_ASC ? by_dist_asc : by_dist_desc);
    if (!g.store) {
        reply_points(c, &f, n, &g, shape.conversion);
        goto out;
    }
    if ((rc = store_points(c, t, g.store, &f, n, &g, shape.conversion,
                           event))) {
        srv_txn_error(c, rc);
        goto out;
    }
    srv_reply_int(c, (long long)n);
out:
    free(f.v);
    free(f.text);
}

void srv_cmd_georadius(srv_conn *c) { search_generic(c, 1, S_COORDS); }
void srv_cmd_georadius_ro(srv_conn *c)
{
    search_generic(c, 1, S_COORDS | S_NOSTORE);
}
void srv_cmd_georadiusbymember(srv_conn *c) { search_generic(c, 1, S_MEMBER); }
void srv_cmd_georadiusbymember_ro(srv_conn *c)
{
    search_generic(c, 1, S_MEMBER | S_NOSTORE);
}
void srv_cmd_geosearch(srv_conn *c) { search_generic(c, 1, S_SEARCH); }
void srv_cmd_geosearchstore(srv_conn *c)
{
    search_generic(c, 2, S_SEARCH | S_STORE);
}
