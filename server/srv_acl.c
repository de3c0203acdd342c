/*
 * srv_acl.c - the ACL rules (see srv_acl.h): users and selectors, the
 * rule operations, their description, the check. Sets of users and their
 * text forms are srv_aclset.c's.
 *
 * Commands are known by their row in the command table (srv_cmd_table):
 * a row's index is its bit in a selector's command map. Redis's
 * description of a selector's commands is reproduced: start from +@all or
 * -@all (by the reserved "future commands" bit), add the categories that
 * fit best one after another, then the single commands that still differ
 * and the allowed first arguments; the rules are replayed on a scratch
 * selector as they are made, and must give the user's map exactly.
 */
#include "server/srv_acl.h"
#include "server/cmd/srv_cmd.h"
#include "server/srv_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define WORDS (SRV_ACL_CMD_BITS / 64)
#define FUTURE_BIT (SRV_ACL_CMD_BITS - 1)
#define BITS_PER_WORD 64

/* User flags, in the order ACL LIST and GETUSER show them. */
#define U_ENABLED 0x01u
#define U_DISABLED 0x02u
#define U_NOPASS 0x04u
#define U_SKIP_SANITIZE 0x08u
#define U_SANITIZE 0x10u

static const struct {
    unsigned flag;
    const char *name;
} user_flags[] = {
    { U_ENABLED, "on" },
    { U_DISABLED, "off" },
    { U_NOPASS, "nopass" },
    { U_SKIP_SANITIZE, "skip-sanitize-payload" },
    { U_SANITIZE, "sanitize-payload" },
};
#define NUSERFLAGS ((int)(sizeof user_flags / sizeof user_flags[0]))

/* Selector flags. */
#define S_ROOT 0x1u
#define S_ALLKEYS 0x2u
#define S_ALLCHANNELS 0x4u
#define S_ALLCOMMANDS 0x8u

/* Key pattern permissions. */
#define P_READ 0x1u
#define P_WRITE 0x2u
#define P_ALL (P_READ | P_WRITE)

static const struct {
    const char *name;
    unsigned flag;
} categories[] = {
    { "keyspace", A_KEYSPACE },
    { "read", A_READ },
    { "write", A_WRITE },
    { "set", A_SET },
    { "sortedset", A_SORTEDSET },
    { "list", A_LIST },
    { "hash", A_HASH },
    { "string", A_STRING },
    { "bitmap", A_BITMAP },
    { "hyperloglog", A_HYPERLOGLOG },
    { "geo", A_GEO },
    { "stream", A_STREAM },
    { "pubsub", A_PUBSUB },
    { "admin", A_ADMIN },
    { "fast", A_FAST },
    { "slow", A_SLOW },
    { "blocking", A_BLOCKING },
    { "dangerous", A_DANGEROUS },
    { "connection", A_CONNECTION },
    { "transaction", A_TRANSACTION },
    { "scripting", A_SCRIPTING },
};
#define NCATEGORIES ((int)(sizeof categories / sizeof categories[0]))

typedef struct str {
    char *s; /* NUL-terminated copy */
    size_t len;
} str;

typedef struct keypat {
    unsigned perm; /* P_* */
    str pat;
} keypat;

typedef struct firstargs {
    int id; /* command row */
    int n;
    str *args;
} firstargs;

typedef struct selector {
    unsigned flags; /* S_* */
    uint64_t allowed[WORDS];
    firstargs *fa; /* commands allowed with some first arguments only */
    int nfa;
    keypat *keys;
    int nkeys;
    str *chans;
    int nchans;
} selector;

struct srv_acl_user {
    str name;
    uint64_t id;
    unsigned flags; /* U_* */
    char (*pw)[SRV_ACL_HASH_LEN + 1];
    int npw;
    selector **sel; /* the root first */
    int nsel;
};

const char *srv_acl_strerror(int err)
{
    switch (err) {
    case SRV_ACL_EUNKNOWN: return "Unknown command or category name in ACL";
    case SRV_ACL_ESYNTAX: return "Syntax error";
    case SRV_ACL_EKEYAFTERALL:
        return "Adding a pattern after the * pattern (or the 'allkeys' flag) "
               "is not valid and does not have any effect. Try 'resetkeys' "
               "to start with an empty list of patterns";
    case SRV_ACL_ECHANAFTERALL:
        return "Adding a pattern after the * pattern (or the 'allchannels' "
               "flag) is not valid and does not have any effect. Try "
               "'resetchannels' to start with an empty list of channels";
    case SRV_ACL_ENOSUCHPASS:
        return "The password you are trying to remove from the user does not "
               "exist";
    case SRV_ACL_EBADHASH:
        return "The password hash must be exactly 64 characters and contain "
               "only lowercase hexadecimal characters";
    case SRV_ACL_EDUPUSER:
        return "Duplicate user found. A user can only be defined once in "
               "config files";
    case SRV_ACL_ESUBFIRSTARG:
        return "Allowing first-arg of a subcommand is not supported";
    case SRV_ACL_ENOMEM: return "Out of memory";
    default: return "Wrong format";
    }
}

/* ---- small helpers ---- */

static int str_set(str *d, const char *s, size_t len)
{
    if (!(d->s = malloc(len + 1)))
        return -1;
    memcpy(d->s, s, len);
    d->s[len] = '\0';
    d->len = len;
    return 0;
}

static int str_eq(const str *a, const char *s, size_t len)
{
    return a->len == len && memcmp(a->s, s, len) == 0;
}

/* Room for one more element of `size` bytes in *arr of n. 0 or -1. */
static int grow(void *arr, int n, size_t size)
{
    void **p = arr;
    void *q = realloc(*p, (size_t)(n + 1) * size);

    if (!q)
        return -1;
    *p = q;
    return 0;
}

static int buf_cat(srv_buf *b, const char *s)
{
    return srv_buf_append(b, s, strlen(s));
}

int srv_acl_has_spaces(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (isspace((unsigned char)s[i]) || s[i] == '\0')
            return 1;
    return 0;
}

/* ---- the command table's view ---- */

static const srv_command *table_rows(int *n)
{
    const srv_command *t = srv_cmd_table(n);

    if (*n >= FUTURE_BIT)
        abort(); /* a bug: raise SRV_ACL_CMD_BITS */
    return t;
}

static int row_id(const srv_command *cmd)
{
    int n;
    return (int)(cmd - table_rows(&n));
}

static int bit_get(const selector *s, int id)
{
    return (s->allowed[id / BITS_PER_WORD] >> (id % BITS_PER_WORD)) & 1u;
}

static void bit_set(selector *s, int id, int on)
{
    uint64_t b = 1ull << (id % BITS_PER_WORD);

    if (on) {
        s->allowed[id / BITS_PER_WORD] |= b;
    } else {
        s->allowed[id / BITS_PER_WORD] &= ~b;
        s->flags &= ~S_ALLCOMMANDS;
    }
}

static void firstargs_free(firstargs *f)
{
    for (int i = 0; i < f->n; i++)
        free(f->args[i].s);
    free(f->args);
}

static void reset_firstargs_of(selector *s, int id)
{
    for (int i = 0; i < s->nfa; i++)
        if (s->fa[i].id == id) {
            firstargs_free(&s->fa[i]);
            s->fa[i] = s->fa[--s->nfa];
            return;
        }
}

static void reset_firstargs(selector *s)
{
    for (int i = 0; i < s->nfa; i++)
        firstargs_free(&s->fa[i]);
    free(s->fa);
    s->fa = NULL;
    s->nfa = 0;
}

static const firstargs *firstargs_of(const selector *s, int id)
{
    for (int i = 0; i < s->nfa; i++)
        if (s->fa[i].id == id)
            return &s->fa[i];
    return NULL;
}

/* Allow cmd (a container: with all its subcommands) or not. */
static void change_perm(selector *s, const srv_command *cmd, int allow)
{
    int id = row_id(cmd);

    bit_set(s, id, allow);
    reset_firstargs_of(s, id);
    for (int i = 0; i < cmd->nsubs; i++)
        bit_set(s, row_id(&cmd->subs[i]), allow);
}

static void change_category(selector *s, unsigned cat, int allow)
{
    int n;
    const srv_command *t = table_rows(&n);

    for (int i = 0; i < n; i++)
        if (srv_cmd_categories(&t[i]) & cat)
            change_perm(s, &t[i], allow);
}

static void count_category(const selector *s, unsigned cat, unsigned long *on,
                           unsigned long *off)
{
    int n;
    const srv_command *t = table_rows(&n);

    *on = *off = 0;
    /* Top-level rows only, as Redis counts (its subcommands are not in
     * the dictionary it walks): a family with many subcommands must not
     * tip a category. */
    for (int i = 0; i < n; i++)
        if (!strchr(t[i].name, '|') && (srv_cmd_categories(&t[i]) & cat)) {
            if (bit_get(s, i))
                (*on)++;
            else
                (*off)++;
        }
}

/* ---- selectors ---- */

static void keys_reset(selector *s)
{
    for (int i = 0; i < s->nkeys; i++)
        free(s->keys[i].pat.s);
    free(s->keys);
    s->keys = NULL;
    s->nkeys = 0;
}

static void chans_reset(selector *s)
{
    for (int i = 0; i < s->nchans; i++)
        free(s->chans[i].s);
    free(s->chans);
    s->chans = NULL;
    s->nchans = 0;
}

static void selector_free(selector *s)
{
    if (!s)
        return;
    keys_reset(s);
    chans_reset(s);
    reset_firstargs(s);
    free(s);
}

static selector *selector_new(unsigned flags, int allchannels)
{
    selector *s = calloc(1, sizeof *s);

    if (s)
        s->flags = flags | (allchannels ? S_ALLCHANNELS : 0);
    return s;
}

static selector *selector_copy(const selector *src)
{
    selector *d = calloc(1, sizeof *d);

    if (!d)
        return NULL;
    d->flags = src->flags;
    memcpy(d->allowed, src->allowed, sizeof d->allowed);
    if (src->nkeys && !(d->keys = calloc((size_t)src->nkeys, sizeof *d->keys)))
        goto oom;
    for (; d->nkeys < src->nkeys; d->nkeys++) {
        d->keys[d->nkeys].perm = src->keys[d->nkeys].perm;
        if (str_set(&d->keys[d->nkeys].pat, src->keys[d->nkeys].pat.s,
                    src->keys[d->nkeys].pat.len))
            goto oom;
    }
    if (src->nchans &&
        !(d->chans = calloc((size_t)src->nchans, sizeof *d->chans)))
        goto oom;
    for (; d->nchans < src->nchans; d->nchans++)
        if (str_set(&d->chans[d->nchans], src->chans[d->nchans].s,
                    src->chans[d->nchans].len))
            goto oom;
    if (src->nfa && !(d->fa = calloc((size_t)src->nfa, sizeof *d->fa)))
        goto oom;
    for (; d->nfa < src->nfa; d->nfa++) {
        const firstargs *f = &src->fa[d->nfa];
        firstargs *g = &d->fa[d->nfa];
        g->id = f->id;
        if (!(g->args = calloc((size_t)f->n, sizeof *g->args)))
            goto oom;
        for (; g->n < f->n; g->n++)
            if (str_set(&g->args[g->n], f->args[g->n].s, f->args[g->n].len))
                goto oom;
    }
    return d;
oom:
    if (d->nfa < src->nfa && d->fa && d->fa[d->nfa].args)
        d->nfa++; /* free the half-copied one too */
    selector_free(d);
    return NULL;
}

static int add_firstarg(selector *s, int id, const char *arg, size_t len)
{
    firstargs *f = NULL;

    for (int i = 0; i < s->nfa; i++)
        if (s->fa[i].id == id)
            f = &s->fa[i];
    if (!f) {
        if (grow(&s->fa, s->nfa, sizeof *s->fa))
            return SRV_ACL_ENOMEM;
        f = &s->fa[s->nfa++];
        *f = (firstargs){ id, 0, NULL };
    }
    for (int i = 0; i < f->n; i++)
        if (f->args[i].len == len && strncasecmp(f->args[i].s, arg, len) == 0)
            return 0; /* there already */
    if (grow(&f->args, f->n, sizeof *f->args) ||
        str_set(&f->args[f->n], arg, len))
        return SRV_ACL_ENOMEM;
    f->n++;
    return 0;
}

/* A key pattern rule: ~pat or %R~pat, %W~pat, %RW~pat. */
static int add_key_pattern(selector *s, const char *op, size_t len)
{
    unsigned perm = 0;
    size_t off = 1;

    if (s->flags & S_ALLKEYS)
        return SRV_ACL_EKEYAFTERALL;
    if (op[0] == '%') {
        for (; off < len; off++) {
            char ch = (char)toupper((unsigned char)op[off]);
            if (ch == 'R' && !(perm & P_READ)) {
                perm |= P_READ;
            } else if (ch == 'W' && !(perm & P_WRITE)) {
                perm |= P_WRITE;
            } else if (op[off] == '~') {
                off++;
                break;
            } else {
                return SRV_ACL_ESYNTAX;
            }
        }
        if (!perm)
            return SRV_ACL_ESYNTAX;
    } else {
        perm = P_ALL;
    }
    if (srv_acl_has_spaces(op + off, len - off))
        return SRV_ACL_ESYNTAX;
    for (int i = 0; i < s->nkeys; i++)
        if (str_eq(&s->keys[i].pat, op + off, len - off)) {
            s->keys[i].perm |= perm;
            return 0;
        }
    if (grow(&s->keys, s->nkeys, sizeof *s->keys) ||
        str_set(&s->keys[s->nkeys].pat, op + off, len - off))
        return SRV_ACL_ENOMEM;
    s->keys[s->nkeys++].perm = perm;
    s->flags &= ~S_ALLKEYS;
    return 0;
}

static int add_channel(selector *s, const char *op, size_t len)
{
    if (s->flags & S_ALLCHANNELS)
        return SRV_ACL_ECHANAFTERALL;
    if (srv_acl_has_spaces(op + 1, len - 1))
        return SRV_ACL_ESYNTAX;
    for (int i = 0; i < s->nchans; i++)
        if (str_eq(&s->chans[i], op + 1, len - 1))
            return 0;
    if (grow(&s->chans, s->nchans, sizeof *s->chans) ||
        str_set(&s->chans[s->nchans], op + 1, len - 1))
        return SRV_ACL_ENOMEM;
    s->nchans++;
    s->flags &= ~S_ALLCHANNELS;
    return 0;
}

/* +cmd, +cmd|sub, +cmd|firstarg. */
static int allow_command(selector *s, const char *name, size_t len)
{
    const char *bar = NULL;
    const srv_command *cmd;

    for (size_t i = len; i > 0; i--)
        if (name[i - 1] == '|') {
            bar = name + i - 1;
            break;
        }
    if (!bar) {
        if (!(cmd = srv_cmd_lookup_name(name, len)))
            return SRV_ACL_EUNKNOWN;
        change_perm(s, cmd, 1);
        return 0;
    }
    size_t baselen = (size_t)(bar - name), sublen = len - baselen - 1;
    if (!(cmd = srv_cmd_lookup_name(name, baselen)))
        return SRV_ACL_EUNKNOWN;
    if (cmd->parent)
        return SRV_ACL_ESUBFIRSTARG;
    if (sublen == 0)
        return SRV_ACL_ESYNTAX;
    if (cmd->nsubs) {
        if (!(cmd = srv_cmd_lookup_name(name, len)))
            return SRV_ACL_EUNKNOWN;
        change_perm(s, cmd, 1);
        return 0;
    }
    return add_firstarg(s, row_id(cmd), bar + 1, sublen);
}

static int op_is(const char *op, size_t len, const char *word)
{
    return srv_util_streq(op, len, word);
}

/* One rule of a selector (ACLSetSelector). */
static int selector_apply(selector *s, const char *op, size_t len)
{
    if (op_is(op, len, "allkeys") || op_is(op, len, "~*")) {
        s->flags |= S_ALLKEYS;
        keys_reset(s);
    } else if (op_is(op, len, "resetkeys")) {
        s->flags &= ~S_ALLKEYS;
        keys_reset(s);
    } else if (op_is(op, len, "allchannels") || op_is(op, len, "&*")) {
        s->flags |= S_ALLCHANNELS;
        chans_reset(s);
    } else if (op_is(op, len, "resetchannels")) {
        s->flags &= ~S_ALLCHANNELS;
        chans_reset(s);
    } else if (op_is(op, len, "allcommands") || op_is(op, len, "+@all")) {
        memset(s->allowed, 0xff, sizeof s->allowed);
        s->flags |= S_ALLCOMMANDS;
        reset_firstargs(s);
    } else if (op_is(op, len, "nocommands") || op_is(op, len, "-@all")) {
        memset(s->allowed, 0, sizeof s->allowed);
        s->flags &= ~S_ALLCOMMANDS;
        reset_firstargs(s);
    } else if (op[0] == '~' || op[0] == '%') {
        return add_key_pattern(s, op, len);
    } else if (op[0] == '&') {
        return add_channel(s, op, len);
    } else if ((op[0] == '+' || op[0] == '-') && len >= 2 && op[1] == '@') {
        unsigned cat = srv_acl_category_flag(op + 2, len - 2);
        if (!cat)
            return SRV_ACL_EUNKNOWN;
        change_category(s, cat, op[0] == '+');
    } else if (op[0] == '+') {
        return allow_command(s, op + 1, len - 1);
    } else if (op[0] == '-') {
        const srv_command *cmd = srv_cmd_lookup_name(op + 1, len - 1);
        if (!cmd)
            return SRV_ACL_EUNKNOWN;
        change_perm(s, cmd, 0);
    } else {
        return SRV_ACL_ESYNTAX;
    }
    return 0;
}

/* "(rules)": a new selector from the words inside (quotes allowed). */
static int selector_from_text(const char *op, size_t len, int allchannels,
                              selector **out)
{
    size_t inner = len - 2;
    char *buf = malloc(inner + 1);
    int max = (int)(inner / 2) + 1, n, rc = 0;
    srv_slice *argv = calloc((size_t)max, sizeof *argv);
    selector *s = selector_new(0, allchannels);

    *out = NULL;
    if (!buf || !argv || !s) {
        rc = SRV_ACL_ENOMEM;
        goto done;
    }
    n = srv_resp_split_args(op + 1, inner, buf, argv, max);
    if (n < 0) {
        rc = SRV_ACL_ESYNTAX;
        goto done;
    }
    for (int i = 0; i < n && rc == 0; i++)
        if (argv[i].len)
            rc = selector_apply(s, argv[i].ptr, argv[i].len);
    if (rc == 0) {
        *out = s;
        s = NULL;
    }
done:
    selector_free(s);
    free(argv);
    free(buf);
    return rc;
}

/* ---- users ---- */

srv_acl_user *srv_acl_user_create(const char *name, size_t len, int allchannels)
{
    srv_acl_user *u = calloc(1, sizeof *u);

    if (!u || str_set(&u->name, name, len) ||
        !(u->sel = calloc(1, sizeof *u->sel)) ||
        !(u->sel[0] = selector_new(S_ROOT, allchannels))) {
        srv_acl_user_destroy(&u);
        return NULL;
    }
    u->nsel = 1;
    u->flags = U_DISABLED;
    return u;
}

void srv_acl_user_destroy(srv_acl_user **up)
{
    srv_acl_user *u = *up;

    if (!u)
        return;
    for (int i = 0; i < u->nsel; i++)
        selector_free(u->sel[i]);
    free(u->sel);
    free(u->pw);
    free(u->name.s);
    free(u);
    *up = NULL;
}

srv_acl_user *srv_acl_user_copy(const srv_acl_user *src)
{
    srv_acl_user *u = calloc(1, sizeof *u);

    if (!u || str_set(&u->name, src->name.s, src->name.len))
        goto oom;
    u->id = src->id;
    u->flags = src->flags;
    if (src->npw) {
        if (!(u->pw = malloc((size_t)src->npw * sizeof *u->pw)))
            goto oom;
        memcpy(u->pw, src->pw, (size_t)src->npw * sizeof *u->pw);
        u->npw = src->npw;
    }
    if (!(u->sel = calloc((size_t)src->nsel, sizeof *u->sel)))
        goto oom;
    for (; u->nsel < src->nsel; u->nsel++)
        if (!(u->sel[u->nsel] = selector_copy(src->sel[u->nsel])))
            goto oom;
    return u;
oom:
    srv_acl_user_destroy(&u);
    return NULL;
}

const char *srv_acl_user_name(const srv_acl_user *u, size_t *len)
{
    if (len)
        *len = u->name.len;
    return u->name.s;
}

uint64_t srv_acl_user_id(const srv_acl_user *u) { return u->id; }

void srv_acl_user_set_id(srv_acl_user *u, uint64_t id) { u->id = id; }

int srv_acl_user_enabled(const srv_acl_user *u)
{
    return (u->flags & U_ENABLED) != 0;
}

int srv_acl_user_nopass(const srv_acl_user *u)
{
    return (u->flags & U_NOPASS) != 0;
}

void srv_acl_hash_password(const char *data, size_t len, char *hex)
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < mdlen && i * 2 < SRV_ACL_HASH_LEN; i++) {
        hex[i * 2] = digits[md[i] >> 4];
        hex[i * 2 + 1] = digits[md[i] & 0xf];
    }
    hex[SRV_ACL_HASH_LEN] = '\0';
}

static int valid_hash(const char *h, size_t len)
{
    if (len != SRV_ACL_HASH_LEN)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            return 0;
    return 1;
}

static int find_password(const srv_acl_user *u, const char *hex)
{
    for (int i = 0; i < u->npw; i++)
        if (memcmp(u->pw[i], hex, SRV_ACL_HASH_LEN) == 0)
            return i;
    return -1;
}

int srv_acl_user_check_password(const srv_acl_user *u, const char *password,
                                size_t len)
{
    char hex[SRV_ACL_HASH_LEN + 1];
    int ok = 0;

    if (u->flags & U_DISABLED)
        return 0;
    if (u->flags & U_NOPASS)
        return 1;
    srv_acl_hash_password(password, len, hex);
    for (int i = 0; i < u->npw; i++)
        ok |= CRYPTO_memcmp(u->pw[i], hex, SRV_ACL_HASH_LEN) == 0;
    return ok;
}

/* Add (>pass, #hash) or remove (<pass, !hash) a password. */
static int change_password(srv_acl_user *u, const char *op, size_t len)
{
    char hex[SRV_ACL_HASH_LEN + 1];
    int at;

    if (op[0] == '>' || op[0] == '<') {
        srv_acl_hash_password(op + 1, len - 1, hex);
    } else {
        if (!valid_hash(op + 1, len - 1))
            return SRV_ACL_EBADHASH;
        memcpy(hex, op + 1, SRV_ACL_HASH_LEN);
        hex[SRV_ACL_HASH_LEN] = '\0';
    }
    at = find_password(u, hex);
    if (op[0] == '<' || op[0] == '!') {
        if (at < 0)
            return SRV_ACL_ENOSUCHPASS;
        memmove(u->pw + at, u->pw + at + 1,
                (size_t)(u->npw - at - 1) * sizeof *u->pw);
        u->npw--;
        return 0;
    }
    if (at < 0) {
        if (grow(&u->pw, u->npw, sizeof *u->pw))
            return SRV_ACL_ENOMEM;
        memcpy(u->pw[u->npw++], hex, sizeof hex);
    }
    u->flags &= ~U_NOPASS;
    return 0;
}

static void clear_selectors(srv_acl_user *u)
{
    for (int i = 1; i < u->nsel; i++)
        selector_free(u->sel[i]);
    u->nsel = 1;
}

int srv_acl_user_apply(srv_acl_user *u, const char *op, size_t len,
                       int allchannels)
{
    if (len == 0)
        return 0;
    if (op_is(op, len, "on")) {
        u->flags = (u->flags | U_ENABLED) & ~U_DISABLED;
    } else if (op_is(op, len, "off")) {
        u->flags = (u->flags | U_DISABLED) & ~U_ENABLED;
    } else if (op_is(op, len, "skip-sanitize-payload")) {
        u->flags = (u->flags | U_SKIP_SANITIZE) & ~U_SANITIZE;
    } else if (op_is(op, len, "sanitize-payload")) {
        u->flags = (u->flags | U_SANITIZE) & ~U_SKIP_SANITIZE;
    } else if (op_is(op, len, "nopass")) {
        u->flags |= U_NOPASS;
        u->npw = 0;
    } else if (op_is(op, len, "resetpass")) {
        u->flags &= ~U_NOPASS;
        u->npw = 0;
    } else if (op[0] == '>' || op[0] == '#' || op[0] == '<' || op[0] == '!') {
        return change_password(u, op, len);
    } else if (op[0] == '(' && op[len - 1] == ')') {
        selector *s;
        int rc = len >= 2 ? selector_from_text(op, len, allchannels, &s)
                          : SRV_ACL_ESYNTAX;
        if (rc)
            return rc;
        if (grow(&u->sel, u->nsel, sizeof *u->sel)) {
            selector_free(s);
            return SRV_ACL_ENOMEM;
        }
        u->sel[u->nsel++] = s;
    } else if (op_is(op, len, "clearselectors")) {
        clear_selectors(u);
    } else if (op_is(op, len, "reset")) {
        selector *root = u->sel[0];
        u->npw = 0;
        u->flags &= ~U_NOPASS;
        keys_reset(root);
        root->flags &= ~S_ALLKEYS;
        chans_reset(root);
        root->flags &= ~S_ALLCHANNELS;
        if (allchannels)
            root->flags |= S_ALLCHANNELS;
        u->flags = (u->flags | U_DISABLED | U_SANITIZE) &
                   ~(U_ENABLED | U_SKIP_SANITIZE);
        clear_selectors(u);
        selector_apply(root, "-@all", strlen("-@all"));
    } else {
        return selector_apply(u->sel[0], op, len);
    }
    return 0;
}

int srv_acl_user_unrestricted(const srv_acl_user *u)
{
    unsigned all = S_ALLCOMMANDS | S_ALLKEYS | S_ALLCHANNELS;

    return (u->sel[0]->flags & all) == all;
}

int srv_acl_user_nflags(const srv_acl_user *u)
{
    int n = 0;

    for (int i = 0; i < NUSERFLAGS; i++)
        n += (u->flags & user_flags[i].flag) != 0;
    return n;
}

const char *srv_acl_user_flag(const srv_acl_user *u, int i)
{
    for (int j = 0; j < NUSERFLAGS; j++)
        if ((u->flags & user_flags[j].flag) && i-- == 0)
            return user_flags[j].name;
    return NULL;
}

int srv_acl_user_npasswords(const srv_acl_user *u) { return u->npw; }

const char *srv_acl_user_password(const srv_acl_user *u, int i)
{
    return u->pw[i];
}

int srv_acl_user_nselectors(const srv_acl_user *u) { return u->nsel; }

/* ---- description ---- */

/* The command rules of a selector, Redis's way (see the top comment). */
static int describe_commands(const selector *s, srv_buf *out)
{
    selector fake = { 0 }, temp = { 0 };
    char applied[NCATEGORIES] = { 0 };
    int additive = !bit_get(s, FUTURE_BIT), n, rc = 0;
    const srv_command *t = table_rows(&n);
    size_t start = out->len;

    rc |= buf_cat(out, additive ? "-@all " : "+@all ");
    selector_apply(&fake, additive ? "-@all" : "+@all", strlen("-@all"));
    memcpy(temp.allowed, s->allowed, sizeof temp.allowed);
    for (;;) {
        int best = -1;
        unsigned long mindiff = ULONG_MAX, maxsame = 0;
        for (int j = 0; j < NCATEGORIES; j++) {
            unsigned long on, off, diff, same;
            if (applied[j])
                continue;
            count_category(&temp, categories[j].flag, &on, &off);
            diff = additive ? off : on;
            same = additive ? on : off;
            if (same > diff &&
                (diff < mindiff || (diff == mindiff && same > maxsame))) {
                best = j;
                mindiff = diff;
                maxsame = same;
            }
        }
        if (best < 0)
            break;
        change_category(&fake, categories[best].flag, additive);
        change_category(&temp, categories[best].flag, !additive);
        rc |= buf_cat(out, additive ? "+@" : "-@");
        rc |= buf_cat(out, categories[best].name);
        rc |= buf_cat(out, " ");
        applied[best] = 1;
    }
    for (int i = 0; i < n; i++) {
        int userbit = bit_get(s, i);
        if (userbit != bit_get(&fake, i)) {
            rc |= buf_cat(out, userbit ? "+" : "-");
            rc |= buf_cat(out, t[i].name);
            rc |= buf_cat(out, " ");
            change_perm(&fake, &t[i], userbit);
        }
        const firstargs *f = userbit ? NULL : firstargs_of(s, i);
        for (int j = 0; f && j < f->n; j++) {
            rc |= buf_cat(out, "+");
            rc |= buf_cat(out, t[i].name);
            rc |= buf_cat(out, "|");
            rc |= srv_buf_append(out, f->args[j].s, f->args[j].len);
            rc |= buf_cat(out, " ");
        }
    }
    if (out->len > start)
        out->len--; /* the last space */
    /* The rules must give the map back exactly; anything else is a bug
     * that would widen or narrow what the user may do. */
    if (memcmp(fake.allowed, s->allowed, sizeof fake.allowed) != 0)
        abort();
    reset_firstargs(&fake);
    reset_firstargs(&temp);
    return rc ? ENOMEM : 0;
}

/* With `exact`, a read-write pattern is "%RW~pat": "~*" would read back
 * as allkeys (Redis's "~* ~a" describes a user it cannot make). */
static int describe_pattern(const keypat *k, int exact, srv_buf *out)
{
    const char *prefix = k->perm == P_ALL    ? (exact ? "%RW~" : "~")
                         : k->perm == P_READ ? "%R~"
                                             : "%W~";
    return buf_cat(out, prefix) | srv_buf_append(out, k->pat.s, k->pat.len);
}

static int describe_selector(const selector *s, int exact, srv_buf *out)
{
    int rc = 0;

    if (s->flags & S_ALLKEYS) {
        rc |= buf_cat(out, "~* ");
    } else {
        for (int i = 0; i < s->nkeys; i++)
            rc |= describe_pattern(&s->keys[i], exact, out) | buf_cat(out, " ");
    }
    if (s->flags & S_ALLCHANNELS) {
        rc |= buf_cat(out, "&* ");
    } else {
        rc |= buf_cat(out, "resetchannels ");
        for (int i = 0; i < s->nchans; i++)
            rc |= buf_cat(out, "&") |
                  srv_buf_append(out, s->chans[i].s, s->chans[i].len) |
                  buf_cat(out, " ");
    }
    rc |= describe_commands(s, out);
    return rc ? ENOMEM : 0;
}

int srv_acl_user_describe(const srv_acl_user *u, int exact, srv_buf *out)
{
    int rc = 0;

    for (int i = 0; i < NUSERFLAGS; i++)
        if (u->flags & user_flags[i].flag)
            rc |= buf_cat(out, user_flags[i].name) | buf_cat(out, " ");
    for (int i = 0; i < u->npw; i++)
        rc |= buf_cat(out, "#") | buf_cat(out, u->pw[i]) | buf_cat(out, " ");
    for (int i = 0; i < u->nsel; i++) {
        if (i)
            rc |= buf_cat(out, " (");
        rc |= describe_selector(u->sel[i], exact, out);
        if (i)
            rc |= buf_cat(out, ")");
    }
    return rc ? ENOMEM : 0;
}

int srv_acl_user_selector_text(const srv_acl_user *u, int i, int which,
                               srv_buf *out)
{
    const selector *s = u->sel[i];
    int rc = 0;

    switch (which) {
    case SRV_ACL_TEXT_COMMANDS: return describe_commands(s, out);
    case SRV_ACL_TEXT_KEYS:
        if (s->flags & S_ALLKEYS)
            return buf_cat(out, "~*");
        for (int j = 0; j < s->nkeys; j++)
            rc |= (j ? buf_cat(out, " ") : 0) |
                  describe_pattern(&s->keys[j], 0, out);
        return rc ? ENOMEM : 0;
    default:
        if (s->flags & S_ALLCHANNELS)
            return buf_cat(out, "&*");
        for (int j = 0; j < s->nchans; j++)
            rc |= (j ? buf_cat(out, " ") : 0) | buf_cat(out, "&") |
                  srv_buf_append(out, s->chans[j].s, s->chans[j].len);
        return rc ? ENOMEM : 0;
    }
}

/* ---- the check ---- */

typedef struct key_check {
    const selector *s;
    const srv_slice *argv;
    int denied_at; /* argv index, or 0 */
} key_check;

/* Redis's ACLSelectorCheckKey: the access a spec needs (read for
 * ACCESS, write for INSERT, DELETE, UPDATE) against each pattern. */
static int check_key(void *arg, int pos, unsigned flags)
{
    key_check *k = arg;
    const srv_slice *key = &k->argv[pos];
    unsigned need = 0;

    if (flags & KS_ACCESS)
        need |= P_READ;
    if (flags & (KS_INSERT | KS_DELETE | KS_UPDATE))
        need |= P_WRITE;
    for (int i = 0; i < k->s->nkeys; i++) {
        const keypat *p = &k->s->keys[i];
        if ((p->perm & need) == need &&
            srv_util_glob_match(p->pat.s, p->pat.len, key->ptr, key->len, 0))
            return 0;
    }
    k->denied_at = pos;
    return 1;
}

static int channel_allowed(const selector *s, const char *ch, size_t len,
                           int literal)
{
    if (s->flags & S_ALLCHANNELS)
        return 1;
    for (int i = 0; i < s->nchans; i++) {
        const str *p = &s->chans[i];
        if (literal ? str_eq(p, ch, len)
                    : srv_util_glob_match(p->s, p->len, ch, len, 0))
            return 1;
    }
    return 0;
}

/* The channel arguments of cmd: [*first, argc) every `step`... here all
 * from argv[1]: one for PUBLISH/SPUBLISH, all for the SUBSCRIBEs; -1 if
 * cmd names no channel. */
static int channel_args(const srv_command *cmd, int argc, int *count,
                        int *literal)
{
    *literal = 0;
    if (cmd->proc == srv_cmd_publish || cmd->proc == srv_cmd_spublish) {
        *count = 1;
        return 1;
    }
    if (cmd->proc == srv_cmd_subscribe || cmd->proc == srv_cmd_ssubscribe ||
        cmd->proc == srv_cmd_psubscribe) {
        *literal = cmd->proc == srv_cmd_psubscribe;
        *count = argc - 1;
        return 1;
    }
    return -1;
}

static int has_keys(const srv_command *cmd)
{
    for (int i = 0; i < cmd->nkeyspecs; i++)
        if (!(cmd->keyspecs[i].flags & KS_NOT_KEY))
            return 1;
    return 0;
}

static int check_selector(const selector *s, const srv_command *cmd, int argc,
                          const srv_slice *argv, int *pos)
{
    int id = row_id(cmd);

    if (!(s->flags & S_ALLCOMMANDS) && !(cmd->flags & F_NOAUTH) &&
        !bit_get(s, id)) {
        const firstargs *f = firstargs_of(s, id);
        int at = cmd->parent ? 2 : 1, ok = 0;
        if (argc <= at || !f)
            return SRV_ACL_DENIED_CMD;
        for (int i = 0; i < f->n && !ok; i++)
            ok = f->args[i].len == argv[at].len &&
                 strncasecmp(f->args[i].s, argv[at].ptr, argv[at].len) == 0;
        if (!ok)
            return SRV_ACL_DENIED_CMD;
    }
    if (!(s->flags & S_ALLKEYS) && has_keys(cmd) &&
        srv_cmd_each_key(cmd, argc, argv, NULL, NULL) > 0) {
        key_check k = { s, argv, 0 };
        srv_cmd_each_key(cmd, argc, argv, check_key, &k);
        if (k.denied_at) {
            *pos = k.denied_at;
            return SRV_ACL_DENIED_KEY;
        }
    }
    int count, literal, first;
    if (!(s->flags & S_ALLCHANNELS) &&
        (first = channel_args(cmd, argc, &count, &literal)) > 0) {
        for (int j = first; j < first + count && j < argc; j++)
            if (!channel_allowed(s, argv[j].ptr, argv[j].len, literal)) {
                *pos = j;
                return SRV_ACL_DENIED_CHANNEL;
            }
    }
    return SRV_ACL_OK;
}

int srv_acl_check(const srv_acl_user *u, const srv_command *cmd, int argc,
                  const srv_slice *argv, int *errpos)
{
    int relevant = SRV_ACL_DENIED_CMD, last = 0;

    for (int i = 0; i < u->nsel; i++) {
        int pos = 0;
        int rc = check_selector(u->sel[i], cmd, argc, argv, &pos);
        if (rc == SRV_ACL_OK)
            return SRV_ACL_OK;
        if (rc > relevant || (rc == relevant && pos > last)) {
            relevant = rc;
            last = pos;
        }
    }
    *errpos = last;
    return relevant;
}

int srv_acl_check_channel(const srv_acl_user *u, const char *ch, size_t len,
                          int pattern)
{
    for (int i = 0; i < u->nsel; i++)
        if (channel_allowed(u->sel[i], ch, len, pattern))
            return 1;
    return 0;
}

int srv_acl_channels_kept(const srv_acl_user *old, const srv_acl_user *now)
{
    for (int i = 0; i < now->nsel; i++)
        if (now->sel[i]->flags & S_ALLCHANNELS)
            return 1;
    for (int i = 0; i < old->nsel; i++)
        for (int j = 0; j < old->sel[i]->nchans; j++) {
            const str *c = &old->sel[i]->chans[j];
            int found = 0;
            for (int k = 0; k < now->nsel && !found; k++)
                for (int l = 0; l < now->sel[k]->nchans && !found; l++)
                    found = str_eq(&now->sel[k]->chans[l], c->s, c->len);
            if (!found)
                return 0;
        }
    return 1;
}

/* ---- rule lists ---- */

int srv_acl_merge_selectors(const srv_slice *words, int n, srv_slice *rules,
                            srv_buf *joined, int *bad)
{
    size_t *offs = calloc((size_t)n + 1, sizeof *offs);
    int m = 0, open = -1;

    if (!offs)
        return -2;
    for (int i = 0; i < n; i++) {
        const srv_slice *w = &words[i];
        if (open < 0 && w->len && w->ptr[0] == '(' &&
            w->ptr[w->len - 1] != ')') {
            open = i;
            offs[m] = joined->len;
            if (srv_buf_append(joined, w->ptr, w->len))
                goto oom;
            continue;
        }
        if (open >= 0) {
            if (srv_buf_append(joined, " ", 1) ||
                srv_buf_append(joined, w->ptr, w->len))
                goto oom;
            if (w->len && w->ptr[w->len - 1] == ')') {
                rules[m].ptr = NULL; /* fixed up below */
                rules[m].len = joined->len - offs[m];
                m++;
                open = -1;
            }
            continue;
        }
        rules[m++] = *w;
    }
    if (open >= 0) {
        free(offs);
        *bad = open;
        return -1;
    }
    for (int i = 0; i < m; i++)
        if (!rules[i].ptr)
            rules[i].ptr = joined->data + offs[i];
    free(offs);
    return m;
oom:
    free(offs);
    return -2;
}

/* ---- categories ---- */

int srv_acl_ncategories(void) { return NCATEGORIES; }

const char *srv_acl_category_name(int i) { return categories[i].name; }

unsigned srv_acl_category_flag(const char *name, size_t len)
{
    for (int i = 0; i < NCATEGORIES; i++)
        if (srv_util_streq(name, len, categories[i].name))
            return categories[i].flag;
    return 0;
}
