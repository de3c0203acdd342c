/*
 * st_rank.c - a counted B+-tree kept in LMDB records beside the elements
 * it counts, for O(log n) ranks, positions and uniform random samples.
 *
 * LMDB's own B-tree knows nothing of positions: over plain element
 * records "the rank of x" or "the element at rank r" is a walk, O(n). So
 * a collection of more than ST_RANK_SMALL elements also keeps count
 * nodes, records of the elements' own database keyed
 *
 *     collection id | ST_RANK_MARK | level (1 byte) | suffix
 *
 * whose value is (elements below it, children). A level-1 node (a leaf)
 * covers the elements whose key suffix (the key after the id) lies from
 * its own suffix up to the next leaf's; a level-L node covers the level
 * L-1 nodes the same way. The first node of every level has the empty
 * suffix, a node's suffix is also its first child's (levels nest), and
 * the top level is a single node, the root. Every node but the root has
 * ST_RANK_MIN..ST_RANK_FANOUT children, the root 2..FANOUT: inserts split
 * a node that outgrows FANOUT at its middle child, deletes merge a node
 * that falls below MIN with a sibling under the same parent, or move the
 * boundary between them when the two would not fit in one.
 *
 * Why this shape:
 * - Nodes are found by key, not by pointer: the level-L node holding x is
 *   the greatest level-L key <= (id, MARK, L, x), one LMDB seek. No child
 *   pointers or node ids to allocate, fix up or leak; a node is one small
 *   record, so an update rewrites O(levels) records in place.
 * - Same database, same id prefix: an element change and its counts
 *   commit or vanish together (crash safe by LMDB's own atomicity, in the
 *   caller's write transaction); COPY and the lazy freer copy and free
 *   them with the elements as they are; the MARK sorts them after every
 *   element of the collection, so element walks just stop there.
 * - A B-tree bounds every node by construction. A skip list taking its
 *   levels from member hashes would need no rebalancing, but members are
 *   chosen by clients and the hash is not secret: crafted members would
 *   flatten it into a list. Ranks over rank blocks of one level (what
 *   this replaces) cost O(n / block + block).
 * - Fan-out 128: 3 or 4 levels at 10^6 elements. A rank or a position
 *   costs one seek and at most FANOUT sibling steps per level (steps in a
 *   page are cheap, seeks are not; positions walk from the nearer end);
 *   an update costs one seek and one in-place write per level below the
 *   root, plus a split every ~FANOUT/2 inserts (FANOUT reads, 3 writes)
 *   or a merge or borrow as often on deletes. Against fan-out 64
 *   (bench/rank-micro, PERFORMANCE.md) inserts spend ~15% less CPU, ranks
 *   ~15% more, positions and picks the same: writes are the commoner
 *   path, and collections up to 128 (Redis's listpack limit) then keep
 *   no nodes at all.
 * - The root's element count would be the cardinality, which the
 *   collection record keeps: it is not stored, so the root is written
 *   only when its children change - one write fewer per update. It is
 *   the collection's last node: updates recognise it by a cursor step,
 *   and reads start from it (found with one seek) walking back.
 * - Collections of at most ST_RANK_SMALL elements keep no nodes: walking
 *   at most FANOUT elements costs what reading counts would, and most
 *   hashes and sets are small (their writes stay as cheap as before).
 *   Whether nodes exist is a function of the cardinality alone: they are
 *   built when it reaches SMALL + 1 and dropped when it falls to SMALL.
 *
 * Details. A node keeps its suffix after the element it came from is
 * deleted: it still separates the same ranges. A key suffix longer than
 * SUFFIX_MAX is cut to fit a node key; a cut suffix still separates
 * correctly when the element before it does not share the cut bytes,
 * which split points are chosen to respect. Only a node whose children
 * all share their first SUFFIX_MAX bytes cannot split and stays
 * oversize: for zsets that takes long members with one score, one
 * 479-byte prefix and the same first 7 digest bytes; for hashes and
 * sets, one 64-bit scan hash and ~480 common bytes.
 */
#include "storage/st_rank.h"
#include "storage/st_err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MARK_AT ST_COLL_ID_BYTES
#define MARK_BYTES 8
#define LEVEL_AT (MARK_AT + MARK_BYTES)
#define NODE_HEAD (LEVEL_AT + 1)
#define ELEM_HEAD (MARK_AT + MARK_BYTES) /* shortest element key */
#define SUFFIX_MAX (ST_LMDB_MAXKEY - NODE_HEAD)
#define LEVEL_ABOVE UINT8_MAX /* sorts after every level */
#define VAL_WORDS 2
#define STACK_PICKS 64
/* Sampled positions at most this far apart are reached by stepping. */
#define GAP_STEPS ST_RANK_FANOUT

typedef struct node {
    uint8_t key[ST_LMDB_MAXKEY];
    size_t len;
    uint64_t elems; /* elements below (not kept for the root) */
    uint64_t kids;  /* children: elements for a leaf */
} node;

#define SUFFIX(n) ((n)->key + NODE_HEAD)
#define SUFLEN(n) ((n)->len - NODE_HEAD)

/* A big-endian u64 (inline: these checks run at every cursor step). */
static inline uint64_t rd_be64(const uint8_t *p)
{
    return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 |
           (uint64_t)p[3] << 32 | (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
           (uint64_t)p[6] << 8 | (uint64_t)p[7];
}

/* LMDB's default key order: bytes, then length. */
static int cmp_bytes(const void *a, size_t al, const void *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;

    if (c)
        return c;
    return (al > bl) - (al < bl);
}

static int cmp_val(const MDB_val *a, const MDB_val *b)
{
    return cmp_bytes(a->mv_data, a->mv_size, b->mv_data, b->mv_size);
}

/* A count node of `id` (at `level`; 0: any level). */
static int is_node(const MDB_val *k, uint64_t id, unsigned level)
{
    const uint8_t *p = k->mv_data;

    return k->mv_size >= NODE_HEAD && rd_be64(p) == id &&
           rd_be64(p + MARK_AT) == ST_RANK_MARK &&
           (level == 0 || p[LEVEL_AT] == level);
}

int st_rank_is_elem(const MDB_val *k, uint64_t id)
{
    const uint8_t *p = k->mv_data;

    return k->mv_size >= ELEM_HEAD && rd_be64(p) == id &&
           rd_be64(p + MARK_AT) != ST_RANK_MARK;
}

/* The key of suffix `sf` at `level` in buf: level 0 is the element key
 * space (id, suffix), above it a node key (suffix cut to SUFFIX_MAX). */
static size_t key_of(uint8_t *buf, uint64_t id, unsigned level,
                     const uint8_t *sf, size_t sl)
{
    size_t head = NODE_HEAD;

    st_codec_put_be64(buf, id);
    if (level == 0) {
        head = ST_COLL_ID_BYTES;
    } else {
        st_codec_put_be64(buf + MARK_AT, ST_RANK_MARK);
        buf[LEVEL_AT] = (uint8_t)level;
        if (sl > SUFFIX_MAX)
            sl = SUFFIX_MAX;
    }
    if (sl)
        memcpy(buf + head, sf, sl);
    return head + sl;
}

static void val_get(const MDB_val *v, uint64_t *elems, uint64_t *kids)
{
    uint64_t x[VAL_WORDS] = { 0, 0 };

    if (v->mv_size == sizeof x)
        memcpy(x, v->mv_data, sizeof x);
    *elems = x[0];
    *kids = x[1];
}

static void node_init(node *n, uint64_t id, unsigned level, const uint8_t *sf,
                      size_t sl)
{
    n->len = key_of(n->key, id, level, sf, sl);
    n->elems = n->kids = 0;
}

static void node_load(node *n, const MDB_val *k, const MDB_val *v)
{
    memcpy(n->key, k->mv_data, k->mv_size);
    n->len = k->mv_size;
    val_get(v, &n->elems, &n->kids);
}

static int node_put(const st_rank *r, const node *n)
{
    uint64_t x[VAL_WORDS] = { n->elems, n->kids };
    MDB_val k = { n->len, (void *)n->key }, v = { sizeof x, x };

    return st_mdb_put(r->txn, r->dbi, &k, &v, 0);
}

/* Rewrite node n in place; `cur` is on it. */
static int node_put_current(MDB_cursor *cur, const node *n)
{
    uint64_t x[VAL_WORDS] = { n->elems, n->kids };
    MDB_val k = { n->len, (void *)n->key }, v = { sizeof x, x };

    return st_mdb_cursor_put(cur, &k, &v, MDB_CURRENT);
}

static int node_del(const st_rank *r, const node *n)
{
    MDB_val k = { n->len, (void *)n->key };

    return st_mdb_del(r->txn, r->dbi, &k, NULL);
}

/* The top level (the root's), 0 when the collection keeps no nodes; the
 * cursor is left on the root (the last node of the collection). */
static int top_level(const st_rank *r, MDB_cursor *cur, unsigned *top)
{
    uint8_t key[NODE_HEAD];
    MDB_val k = { key_of(key, r->id, LEVEL_ABOVE, NULL, 0), key }, v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);

    if (rc == MDB_NOTFOUND)
        rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    else if (rc == 0)
        rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
    *top = 0;
    if (rc == 0 && is_node(&k, r->id, 0))
        *top = ((const uint8_t *)k.mv_data)[LEVEL_AT];
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* The top level of a collection of `card` that must have nodes if it is
 * bigger than ST_RANK_SMALL (the cursor then on the root). */
static int tree_top(const st_rank *r, MDB_cursor *cur, uint64_t card,
                    unsigned *top)
{
    int rc;

    *top = 0;
    if (card <= ST_RANK_SMALL)
        return 0;
    if ((rc = top_level(r, cur, top)))
        return rc;
    return *top ? 0 : ST_ECORRUPT;
}

/* Put `cur` on the level-`level` node holding suffix sf (the greatest
 * node key at most the suffix's) and load it into *out. */
static int node_find(const st_rank *r, MDB_cursor *cur, unsigned level,
                     const uint8_t *sf, size_t sl, node *out)
{
    MDB_val k, v;
    int rc;

    node_init(out, r->id, level, sf, sl);
    k.mv_size = out->len;
    k.mv_data = out->key;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    if (rc == 0 &&
        !(k.mv_size == out->len && memcmp(k.mv_data, out->key, out->len) == 0))
        rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
    else if (rc == MDB_NOTFOUND)
        rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
    /* The empty-suffix node of every level is at most any suffix. */
    if (rc == MDB_NOTFOUND || (rc == 0 && !is_node(&k, r->id, level)))
        return ST_ECORRUPT;
    if (rc)
        return rc;
    node_load(out, &k, &v);
    return 0;
}

/* Children of a level-`level` node: elements for a leaf, else nodes. */
static int is_child(const MDB_val *k, uint64_t id, unsigned level)
{
    return level == 1 ? st_rank_is_elem(k, id) : is_node(k, id, level - 1);
}

static uint64_t child_elems(const MDB_val *v, unsigned level)
{
    uint64_t elems, kids;

    if (level == 1)
        return 1;
    val_get(v, &elems, &kids);
    return elems;
}

static void child_suffix(const MDB_val *k, unsigned level, const uint8_t **s,
                         size_t *l)
{
    size_t head = level == 1 ? ST_COLL_ID_BYTES : NODE_HEAD;

    *s = (const uint8_t *)k->mv_data + head;
    *l = k->mv_size - head;
}

/* Put `cur` on the first child of the level-`level` node with suffix sf
 * (its first element, or the level-below node with the same suffix). */
static int first_child(const st_rank *r, MDB_cursor *cur, unsigned level,
                       const uint8_t *sf, size_t sl, MDB_val *k, MDB_val *v)
{
    uint8_t key[ST_LMDB_MAXKEY];
    int rc;

    k->mv_size = key_of(key, r->id, level - 1, sf, sl);
    k->mv_data = key;
    rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    if (rc == 0 && !is_child(k, r->id, level))
        rc = MDB_NOTFOUND;
    return rc;
}

/* May a level-`level` node start at child `c`, whose predecessor is `p`?
 * Node suffixes always may; an element's only if cutting it to a node
 * key leaves it above its predecessor. */
static int usable(unsigned level, const MDB_val *p, const MDB_val *c)
{
    const uint8_t *ps, *cs;
    size_t pl, cl;

    if (level > 1)
        return 1;
    child_suffix(p, level, &ps, &pl);
    child_suffix(c, level, &cs, &cl);
    return cl <= SUFFIX_MAX || pl < SUFFIX_MAX ||
           memcmp(ps, cs, SUFFIX_MAX) != 0;
}

/*
 * Walk the `n` children of level-`level` nodes from the one with suffix
 * sf (one node, or two adjacent siblings) and pick where a boundary can
 * go: the first usable child at index n / 2 or above, else the last one
 * below. *at gets its index (0: none usable), *left the elements before
 * it, *total all of them, `out` the key of a node starting there.
 */
static int choose_split(const st_rank *r, MDB_cursor *cur, unsigned level,
                        const uint8_t *sf, size_t sl, uint64_t n, uint64_t *at,
                        uint64_t *left, uint64_t *total, node *out)
{
    MDB_val k, v, prev = { 0, NULL };
    uint64_t i, sum = 0;
    int rc = first_child(r, cur, level, sf, sl, &k, &v), high = 0;

    *at = *left = 0;
    for (i = 0; rc == 0 && i < n; i++) {
        if (!is_child(&k, r->id, level))
            return ST_ECORRUPT;
        if (i > 0 && !high && usable(level, &prev, &k)) {
            const uint8_t *s;
            size_t l;
            child_suffix(&k, level, &s, &l);
            node_init(out, r->id, level, s, l);
            *at = i;
            *left = sum;
            high = i >= n / 2;
        }
        sum += child_elems(&v, level);
        prev = k;
        if (i + 1 < n)
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    if (rc == MDB_NOTFOUND)
        return ST_ECORRUPT; /* fewer children than counted */
    *total = sum;
    return rc;
}

/*
 * Node n at `level` has too many children (its counts are current):
 * split it, add the new node to the parent and split that in turn, or
 * grow a new root above the top level.
 */
static int split(const st_rank *r, MDB_cursor *cur, unsigned level,
                 unsigned *top, node *n)
{
    node right, parent;
    uint64_t at, left, total;
    int rc = choose_split(r, cur, level, SUFFIX(n), SUFLEN(n), n->kids, &at,
                          &left, &total, &right);

    if (rc || at == 0)
        return rc; /* at 0: no usable boundary */
    right.kids = n->kids - at;
    right.elems = total - left;
    n->kids = at;
    n->elems = left;
    if ((rc = node_put(r, n)) || (rc = node_put(r, &right)))
        return rc;
    if (level == *top) {
        node_init(&parent, r->id, level + 1, NULL, 0);
        parent.kids = 2;
        *top = level + 1;
        return node_put(r, &parent);
    }
    if ((rc = node_find(r, cur, level + 1, SUFFIX(n), SUFLEN(n), &parent)))
        return rc;
    parent.kids++;
    if ((rc = node_put_current(cur, &parent)))
        return rc;
    return parent.kids > ST_RANK_FANOUT ? split(r, cur, level + 1, top, &parent)
                                        : 0;
}

static int underflow(const st_rank *r, MDB_cursor *cur, unsigned level,
                     unsigned *top, node *n);

/*
 * Siblings a and b (adjacent, a first) at `level` under `parent`, one of
 * them short of children: merge b into a when they fit in one node (the
 * parent loses a child; a root left with one goes), else move the
 * boundary between them to the middle of their children.
 */
static int combine(const st_rank *r, MDB_cursor *cur, unsigned level,
                   unsigned *top, node *a, const node *b, node *parent)
{
    node nb;
    uint64_t at, left, total, kids = a->kids + b->kids;
    int rc;

    if (kids <= ST_RANK_FANOUT) {
        a->elems += b->elems;
        a->kids = kids;
        if ((rc = node_del(r, b)) || (rc = node_put(r, a)))
            return rc;
        parent->kids--;
        if (level + 1 == *top && parent->kids <= 1) {
            *top = level;
            return node_del(r, parent);
        }
        if ((rc = node_put(r, parent)))
            return rc;
        return level + 1 < *top && parent->kids < ST_RANK_MIN
                   ? underflow(r, cur, level + 1, top, parent)
                   : 0;
    }
    rc = choose_split(r, cur, level, SUFFIX(a), SUFLEN(a), kids, &at, &left,
                      &total, &nb);
    if (rc || at == 0)
        return rc;
    nb.kids = kids - at;
    nb.elems = total - left;
    a->kids = at;
    a->elems = left;
    if ((rc = node_del(r, b)) || (rc = node_put(r, a)))
        return rc;
    return node_put(r, &nb);
}

/* Node n at `level` (below the top) has too few children: combine it
 * with its next sibling under the same parent, else its previous one. */
static int underflow(const st_rank *r, MDB_cursor *cur, unsigned level,
                     unsigned *top, node *n)
{
    node parent, sib;
    MDB_val k = { n->len, n->key }, v;
    int rc;

    if ((rc = node_find(r, cur, level + 1, SUFFIX(n), SUFLEN(n), &parent)))
        return rc;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
    if (rc == 0)
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    if (rc == 0 && is_node(&k, r->id, level)) {
        int other = 0;
        node_load(&sib, &k, &v);
        if (level + 1 < *top) {
            /* The first child of another parent shares its key. */
            uint8_t pk[ST_LMDB_MAXKEY];
            MDB_val q = {
                key_of(pk, r->id, level + 1, SUFFIX(&sib), SUFLEN(&sib)), pk
            };
            rc = mdb_get(r->txn, r->dbi, &q, &v);
            if (rc && rc != MDB_NOTFOUND)
                return rc;
            other = rc == 0;
        }
        if (!other)
            return combine(r, cur, level, top, n, &sib, &parent);
    } else if (rc && rc != MDB_NOTFOUND) {
        return rc;
    }
    if (SUFLEN(n) != SUFLEN(&parent) ||
        memcmp(SUFFIX(n), SUFFIX(&parent), SUFLEN(n)) != 0) {
        k.mv_size = n->len;
        k.mv_data = n->key;
        if ((rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY)) ||
            (rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)))
            return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
        if (!is_node(&k, r->id, level))
            return ST_ECORRUPT;
        node_load(&sib, &k, &v);
        return combine(r, cur, level, top, &sib, n, &parent);
    }
    /* An only child: only a root may have one, and then it goes. */
    if (level + 1 == *top && parent.kids <= 1) {
        *top = level;
        return node_del(r, &parent);
    }
    return 0;
}

/*
 * Add one (inc) or take one from the counts of every node above element
 * `key` below the root, whose count is not kept. The root is recognised
 * on the way up as the collection's last node (nothing follows it): a
 * cursor step rather than a seek for the top level. *leaf gets the leaf,
 * counts updated, *top the root's level.
 */
static int path_add(const st_rank *r, MDB_cursor *cur, const MDB_val *key,
                    int inc, node *leaf, unsigned *top)
{
    const uint8_t *s = (const uint8_t *)key->mv_data + ST_COLL_ID_BYTES;
    size_t l = key->mv_size - ST_COLL_ID_BYTES;
    node up;
    MDB_val k, v;
    int rc, root;

    for (unsigned level = 1;; level++) {
        node *n = level == 1 ? leaf : &up;
        if ((rc = node_find(r, cur, level, s, l, n)))
            return rc;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        if (rc && rc != MDB_NOTFOUND)
            return rc;
        root = rc == MDB_NOTFOUND || !is_node(&k, r->id, 0);
        if (root)
            *top = level;
        if (root && level > 1)
            return 0;
        if (!root && (rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)))
            return rc;
        if (inc) {
            n->elems++;
            if (level == 1)
                n->kids++;
        } else {
            if (n->elems == 0 || (level == 1 && n->kids == 0))
                return ST_ECORRUPT;
            n->elems--;
            if (level == 1)
                n->kids--;
        }
        /* A leaf that is the root is a lone leaf: it keeps its counts. */
        if ((rc = root ? node_put(r, n) : node_put_current(cur, n)) || root)
            return rc;
    }
}

/* Delete every count node of the collection. */
static int drop_all(const st_rank *r, MDB_cursor *cur)
{
    uint8_t key[LEVEL_AT];
    MDB_val k = { sizeof key, key }, v;
    int rc;

    st_codec_put_be64(key, r->id);
    st_codec_put_be64(key + MARK_AT, ST_RANK_MARK);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && is_node(&k, r->id, 0)) {
        if ((rc = st_mdb_cursor_del(cur, 0)))
            break;
        rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
    }
    return rc == MDB_NOTFOUND || rc == EINVAL ? 0 : rc;
}

/* First nodes for a collection just grown to `card` elements: one leaf
 * over everything, split at once (which grows the root above it). */
static int build(const st_rank *r, MDB_cursor *cur, uint64_t card)
{
    node leaf;
    unsigned top = 1;
    int rc;

    node_init(&leaf, r->id, 1, NULL, 0);
    leaf.elems = leaf.kids = card;
    if ((rc = node_put(r, &leaf)))
        return rc;
    return split(r, cur, 1, &top, &leaf);
}

int st_rank_insert(const st_rank *r, uint64_t card, const MDB_val *key)
{
    MDB_cursor *cur;
    unsigned top;
    node leaf;
    int rc;

    if (card < ST_RANK_SMALL)
        return 0;
    if ((rc = mdb_cursor_open(r->txn, r->dbi, &cur)))
        return rc;
    if (card == ST_RANK_SMALL)
        rc = build(r, cur, card + 1);
    else if (!(rc = path_add(r, cur, key, 1, &leaf, &top)) &&
             leaf.kids > ST_RANK_FANOUT)
        rc = split(r, cur, 1, &top, &leaf);
    mdb_cursor_close(cur);
    return rc;
}

int st_rank_remove(const st_rank *r, uint64_t card, const MDB_val *key)
{
    MDB_cursor *cur;
    unsigned top;
    node leaf;
    int rc;

    if (card <= ST_RANK_SMALL)
        return 0;
    if ((rc = mdb_cursor_open(r->txn, r->dbi, &cur)))
        return rc;
    if (card == ST_RANK_SMALL + 1)
        rc = drop_all(r, cur);
    else if (!(rc = path_add(r, cur, key, 0, &leaf, &top)) &&
             leaf.kids < ST_RANK_MIN && top > 1)
        rc = underflow(r, cur, 1, &top, &leaf);
    mdb_cursor_close(cur);
    return rc;
}

int st_rank_same_leaf(const st_rank *r, uint64_t card, const MDB_val *a,
                      const MDB_val *b, int *same)
{
    MDB_cursor *cur;
    node na, nb;
    int rc;

    *same = 1;
    if (card <= ST_RANK_SMALL)
        return 0;
    if ((rc = mdb_cursor_open(r->txn, r->dbi, &cur)))
        return rc;
    if (!(rc = node_find(r, cur, 1,
                         (const uint8_t *)a->mv_data + ST_COLL_ID_BYTES,
                         a->mv_size - ST_COLL_ID_BYTES, &na)) &&
        !(rc = node_find(r, cur, 1,
                         (const uint8_t *)b->mv_data + ST_COLL_ID_BYTES,
                         b->mv_size - ST_COLL_ID_BYTES, &nb)))
        *same = na.len == nb.len && memcmp(na.key, nb.key, na.len) == 0;
    mdb_cursor_close(cur);
    return rc;
}

/*
 * Descend from the root towards key x. The root's children are walked
 * back from the last one (the record before the root, where tree_top()
 * left the cursor): the one holding x is the first at most x, and the
 * elements before it are the cardinality less those passed and its own.
 * Below, each level walks forward from the first child of the node found
 * one level up. *ps / *pl get the suffix of the leaf reached, *before
 * grows by the elements of the nodes stepped over.
 */
static int descend_to_key(const st_rank *r, MDB_cursor *cur, unsigned top,
                          uint64_t card, const MDB_val *x, uint8_t *ps,
                          size_t *pl, uint64_t *before)
{
    const uint8_t *xs = (const uint8_t *)x->mv_data + ST_COLL_ID_BYTES;
    size_t xl = x->mv_size - ST_COLL_ID_BYTES;
    int rc;

    for (unsigned level = top - 1; top && level >= 1; level--) {
        uint8_t bk[ST_LMDB_MAXKEY];
        MDB_val bound = { key_of(bk, r->id, level, xs, xl), bk }, k, v, c, cv;
        if (level + 1 == top) {
            uint64_t passed = 0, e;
            for (;;) {
                if ((rc = mdb_cursor_get(cur, &k, &v, MDB_PREV)))
                    return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
                if (!is_node(&k, r->id, level))
                    return ST_ECORRUPT;
                if (cmp_val(&k, &bound) <= 0)
                    break;
                passed += child_elems(&v, top);
            }
            e = child_elems(&v, top);
            if (passed + e > card)
                return ST_ECORRUPT;
            *before += card - passed - e;
            c = k;
        } else {
            if ((rc = first_child(r, cur, level + 1, ps, *pl, &k, &v)))
                return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
            c = k;
            cv = v;
            while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0 &&
                   is_node(&k, r->id, level) && cmp_val(&k, &bound) <= 0) {
                *before += child_elems(&cv, level + 1);
                c = k;
                cv = v;
            }
            if (rc && rc != MDB_NOTFOUND)
                return rc;
        }
        *pl = c.mv_size - NODE_HEAD;
        memcpy(ps, (const uint8_t *)c.mv_data + NODE_HEAD, *pl);
    }
    return 0;
}

int st_rank_below(const st_rank *r, uint64_t card, const MDB_val *key,
                  uint64_t *n)
{
    uint8_t ps[SUFFIX_MAX];
    size_t pl = 0;
    unsigned top;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    *n = 0;
    if ((rc = mdb_cursor_open(r->txn, r->dbi, &cur)))
        return rc;
    if (!(rc = tree_top(r, cur, card, &top)) &&
        !(rc = descend_to_key(r, cur, top, card, key, ps, &pl, n))) {
        for (rc = first_child(r, cur, 1, ps, pl, &k, &v);
             rc == 0 && st_rank_is_elem(&k, r->id) && cmp_val(&k, key) < 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT))
            (*n)++;
        if (rc == MDB_NOTFOUND)
            rc = 0;
    }
    mdb_cursor_close(cur);
    return rc;
}

/*
 * Put `cur` on the last child of the level-`level` node whose next
 * sibling has suffix ns (has_next 0: the node is the last of its level):
 * the record just before that sibling's first child.
 */
static int last_child(const st_rank *r, MDB_cursor *cur, unsigned level,
                      const uint8_t *ns, size_t nl, int has_next, MDB_val *k,
                      MDB_val *v)
{
    uint8_t key[ST_LMDB_MAXKEY];
    int rc;

    if (has_next) {
        k->mv_size = key_of(key, r->id, level - 1, ns, nl);
    } else if (level > 1) {
        k->mv_size = key_of(key, r->id, level, NULL, 0);
    } else {
        /* Past the last element: where the count nodes begin. */
        st_codec_put_be64(key, r->id);
        st_codec_put_be64(key + MARK_AT, ST_RANK_MARK);
        k->mv_size = LEVEL_AT;
    }
    k->mv_data = key;
    rc = mdb_cursor_get(cur, k, v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND)
        rc = mdb_cursor_get(cur, k, v, MDB_LAST);
    else if (rc == 0)
        rc = mdb_cursor_get(cur, k, v, MDB_PREV);
    if (rc == 0 && !is_child(k, r->id, level))
        rc = MDB_NOTFOUND;
    return rc;
}

/*
 * st_rank_seek() with the top level known (0: no nodes, the collection
 * is one leaf). From the root down, step over the children before the
 * one holding `pos`, from the nearer end of the parent (its element
 * count says which): half the steps of always walking forward. With
 * `at_root` the cursor is on the root (tree_top() left it there): walking
 * back, the root's last child is the record before it, no seek.
 */
static int seek_at(const st_rank *r, unsigned top, uint64_t card,
                   MDB_cursor *cur, int at_root, uint64_t pos, MDB_val *k,
                   MDB_val *v)
{
    uint8_t ps[SUFFIX_MAX], ns[SUFFIX_MAX];
    size_t pl = 0, nl = 0;
    uint64_t total = card, e;
    int has_next = 0, rc;

    for (unsigned level = top ? top : 1;; level--) {
        int back = pos >= total - pos;
        int from_root = back && at_root && level == top && top > 1;
        MDB_val after = { 0, NULL };
        if (from_root) {
            rc = mdb_cursor_get(cur, k, v, MDB_PREV);
            if (rc == 0 && !is_child(k, r->id, level))
                rc = MDB_NOTFOUND;
        } else if (back) {
            rc = last_child(r, cur, level, ns, nl, has_next, k, v);
        } else {
            rc = first_child(r, cur, level, ps, pl, k, v);
        }
        if (rc)
            return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
        if (level == 1) {
            /* The leaf's elements: pos from its start, or from its end. */
            uint64_t steps = back ? total - 1 - pos : pos;
            for (; rc == 0 && steps; steps--) {
                rc = mdb_cursor_get(cur, k, v, back ? MDB_PREV : MDB_NEXT);
                if (rc == 0 && !st_rank_is_elem(k, r->id))
                    rc = MDB_NOTFOUND;
            }
            return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
        }
        if (back) {
            /* Elements from pos to the parent's end, counted back. */
            uint64_t rem = total - pos;
            while (rem > (e = child_elems(v, level))) {
                rem -= e;
                after = *k;
                if ((rc = mdb_cursor_get(cur, k, v, MDB_PREV)))
                    return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
                if (!is_node(k, r->id, level - 1))
                    return ST_ECORRUPT;
            }
            pos = e - rem;
        } else {
            while (pos >= (e = child_elems(v, level))) {
                pos -= e;
                if ((rc = mdb_cursor_get(cur, k, v, MDB_NEXT)))
                    return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
                if (!is_node(k, r->id, level - 1))
                    return ST_ECORRUPT;
            }
        }
        total = e;
        pl = k->mv_size - NODE_HEAD;
        memcpy(ps, (const uint8_t *)k->mv_data + NODE_HEAD, pl);
        /* The next sibling bounds the chosen child's children from above;
         * it is needed only when the next level walks back. */
        if (pos < total - pos)
            continue;
        if (back && after.mv_data) {
            has_next = 1;
        } else if (!back) {
            rc = mdb_cursor_get(cur, &after, v, MDB_NEXT);
            if (rc && rc != MDB_NOTFOUND)
                return rc;
            has_next = rc == 0 && is_node(&after, r->id, level - 1);
        }
        if (after.mv_data && has_next) {
            nl = after.mv_size - NODE_HEAD;
            memcpy(ns, (const uint8_t *)after.mv_data + NODE_HEAD, nl);
        }
    }
}

int st_rank_seek(const st_rank *r, uint64_t card, MDB_cursor *cur, uint64_t pos,
                 MDB_val *k, MDB_val *v)
{
    unsigned top;
    int rc;

    if (pos >= card)
        return MDB_NOTFOUND;
    if ((rc = tree_top(r, cur, card, &top)))
        return rc;
    return seek_at(r, top, card, cur, 1, pos, k, v);
}

/* splitmix64: the sample's random stream, from the caller's seed. */
static uint64_t rnd_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0, without modulo bias. */
static uint64_t rnd_below(uint64_t *s, uint64_t n)
{
    uint64_t floor = (0 - n) % n, x;

    do
        x = rnd_next(s);
    while (x < floor);
    return x % n;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* Selection sampling (Knuth's algorithm S): one pass, each element taken
 * with probability (still wanted) / (still unseen). */
static int sample_pass(const st_rank *r, uint64_t card, uint64_t *s,
                       uint64_t count, st_rank_fn fn, void *ctx)
{
    MDB_cursor *cur;
    uint8_t start[ST_COLL_ID_BYTES];
    MDB_val k = { sizeof start, start }, v;
    uint64_t left = card;
    int rc;

    if ((rc = mdb_cursor_open(r->txn, r->dbi, &cur)))
        return rc;
    st_codec_put_be64(start, r->id);
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
         rc == 0 && count && left && st_rank_is_elem(&k, r->id);
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT), left--) {
        if (rnd_below(s, left) >= count)
            continue;
        count--;
        if (fn(ctx, &k, &v))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Distinct uniform positions, sorted: draw, sort, drop repeats, draw
 * again for the missing ones. */
static void draw_positions(uint64_t *s, uint64_t card, uint64_t *pos,
                           uint64_t count)
{
    uint64_t have = 0;

    while (have < count) {
        for (uint64_t i = have; i < count; i++)
            pos[i] = rnd_below(s, card);
        qsort(pos, count, sizeof *pos, cmp_u64);
        have = 1;
        for (uint64_t i = 1; i < count; i++)
            if (pos[i] != pos[have - 1])
                pos[have++] = pos[i];
    }
}

/* Visit sorted positions: a seek for each, or steps when it is near. */
static int visit_positions(const st_rank *r, uint64_t card, const uint64_t *pos,
                           uint64_t count, st_rank_fn fn, void *ctx)
{
    MDB_cursor *cur;
    MDB_val k, v;
    unsigned top;
    uint64_t at = 0;
    int rc, placed = 0;

    if ((rc = mdb_cursor_open(r->txn, r->dbi, &cur)))
        return rc;
    rc = tree_top(r, cur, card, &top);
    for (uint64_t i = 0; rc == 0 && i < count; i++) {
        if (placed && pos[i] - at <= GAP_STEPS) {
            for (; rc == 0 && at < pos[i]; at++)
                if ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0 &&
                    !st_rank_is_elem(&k, r->id))
                    rc = ST_ECORRUPT;
        } else {
            rc = seek_at(r, top, card, cur, !placed, pos[i], &k, &v);
            at = pos[i];
            placed = 1;
        }
        if (rc == 0 && fn(ctx, &k, &v))
            break;
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? ST_ECORRUPT : rc;
}

int st_rank_sample(const st_rank *r, uint64_t card, uint64_t seed,
                   uint64_t count, st_rank_fn fn, void *ctx)
{
    uint64_t stack[STACK_PICKS], *pos = stack, s = seed;
    int rc;

    /* Start from a mixed seed: seeds a multiple of the stream's step
     * apart would otherwise give shifted copies of one stream. */
    s = rnd_next(&s);
    if (card == 0)
        return MDB_NOTFOUND;
    if (count > card)
        count = card;
    if (count == 0)
        return 0;
    if (count >= card / ST_RANK_DENSE)
        return sample_pass(r, card, &s, count, fn, ctx);
    if (count > STACK_PICKS && !(pos = malloc(count * sizeof *pos)))
        return ENOMEM;
    draw_positions(&s, card, pos, count);
    rc = visit_positions(r, card, pos, count, fn, ctx);
    if (pos != stack)
        free(pos);
    return rc;
}

/* ---- verification (tests) ---- */

/*
 * Check the nodes of `level` against their children, read in order by a
 * second cursor: counts, bounds, nesting, the empty first suffix.
 */
static int verify_level(const st_rank *r, uint64_t card, unsigned level,
                        unsigned top, MDB_cursor *pc, MDB_cursor *cc)
{
    node n;
    MDB_val k, v, ck, cv;
    uint64_t nodes = 0;
    int rc = first_child(r, pc, level + 1, NULL, 0, &k, &v);
    int crc = first_child(r, cc, level, NULL, 0, &ck, &cv);

    if (rc || k.mv_size != NODE_HEAD)
        return ST_ECORRUPT; /* the first node has the empty suffix */
    while (rc == 0 && is_node(&k, r->id, level)) {
        uint64_t kids = 0, elems = 0;
        int last;
        node_load(&n, &k, &v);
        rc = mdb_cursor_get(pc, &k, &v, MDB_NEXT);
        if (rc && rc != MDB_NOTFOUND)
            return rc;
        last = rc != 0 || !is_node(&k, r->id, level);
        while (crc == 0 && is_child(&ck, r->id, level)) {
            const uint8_t *s;
            size_t l;
            child_suffix(&ck, level, &s, &l);
            if (!last && cmp_bytes(s, l, (const uint8_t *)k.mv_data + NODE_HEAD,
                                   k.mv_size - NODE_HEAD) >= 0)
                break;
            if (kids == 0 && level > 1 &&
                cmp_bytes(s, l, SUFFIX(&n), SUFLEN(&n)) != 0)
                return ST_ECORRUPT; /* levels must nest */
            kids++;
            elems += child_elems(&cv, level);
            crc = mdb_cursor_get(cc, &ck, &cv, MDB_NEXT);
        }
        if (crc && crc != MDB_NOTFOUND)
            return crc;
        if (n.kids != kids || kids > ST_RANK_FANOUT)
            return ST_ECORRUPT;
        if (level < top ? n.elems != elems || kids < ST_RANK_MIN
                        : elems != card || kids < 2)
            return ST_ECORRUPT;
        nodes++;
        if (last)
            break;
    }
    if (rc && rc != MDB_NOTFOUND)
        return rc;
    if (crc == 0 && is_child(&ck, r->id, level))
        return ST_ECORRUPT; /* children past the last node */
    return level == top && nodes != 1 ? ST_ECORRUPT : 0;
}

int st_rank_verify(const st_rank *r, uint64_t card, unsigned *levels)
{
    MDB_cursor *pc, *cc;
    unsigned top = 0;
    int rc;

    *levels = 0;
    if ((rc = mdb_cursor_open(r->txn, r->dbi, &pc)))
        return rc;
    if ((rc = mdb_cursor_open(r->txn, r->dbi, &cc))) {
        mdb_cursor_close(pc);
        return rc;
    }
    rc = top_level(r, pc, &top);
    *levels = top;
    if (rc == 0 && (card <= ST_RANK_SMALL ? top != 0 : top < 2))
        rc = ST_ECORRUPT;
    for (unsigned level = 1; rc == 0 && level <= top; level++)
        rc = verify_level(r, card, level, top, pc, cc);
    mdb_cursor_close(cc);
    mdb_cursor_close(pc);
    return rc;
}
