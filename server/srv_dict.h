/*
 * srv_dict.h - a hash table keyed by byte strings (channel and pattern
 * names of pub/sub), chained, grown by doubling. Keys are hashed with
 * SipHash-1-3 under a random per-process key, so clients choosing channel
 * names cannot force collisions. Each entry carries a copy of its key, a
 * pointer and a number for the owner. Single-threaded: one process, one
 * thread per table.
 */
#ifndef SRV_DICT_H
#define SRV_DICT_H

#include <stddef.h>
#include <stdint.h>

typedef struct srv_dict_entry {
    struct srv_dict_entry *next; /* bucket chain */
    uint64_t hash;
    void *val;  /* the owner's */
    size_t aux; /* the owner's */
    size_t klen;
    char key[]; /* klen bytes, not NUL-terminated */
} srv_dict_entry;

typedef struct srv_dict {
    srv_dict_entry **tab; /* NULL while empty */
    size_t size;          /* buckets: 0 or a power of two */
    size_t count;
} srv_dict;

/* Iteration state; see srv_dict_iter_next. */
typedef struct srv_dict_iter {
    const srv_dict *d;
    size_t bucket;
    srv_dict_entry *next;
} srv_dict_iter;

/* The hash of a key (the same for every table of this process). */
uint64_t srv_dict_hash(const void *key, size_t len);

/* The entry with this key and hash (from srv_dict_hash), or NULL. */
srv_dict_entry *srv_dict_find(const srv_dict *d, const void *key, size_t len,
                              uint64_t hash);

/*
 * Add an entry for a key that is not in the table (the caller checked),
 * with val NULL and aux 0. Returns it, or NULL when out of memory (the
 * table is then unchanged). The table owns the entry.
 */
srv_dict_entry *srv_dict_add(srv_dict *d, const void *key, size_t len,
                             uint64_t hash);

/* Unlink and free an entry of the table. The table is freed when it
 * becomes empty. */
void srv_dict_remove(srv_dict *d, srv_dict_entry *e);

/* Free every entry (calling fn on each first, if fn) and the table. */
void srv_dict_clear(srv_dict *d, void (*fn)(srv_dict_entry *e));

/*
 * Iterate: init, then next until NULL. The entry just returned may be
 * removed during the iteration; nothing may be added, and no other entry
 * removed, until it ends.
 */
void srv_dict_iter_init(srv_dict_iter *it, const srv_dict *d);
srv_dict_entry *srv_dict_iter_next(srv_dict_iter *it);

#endif
