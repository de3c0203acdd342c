/*
 * dbmap_micro.c - the cost of the database map on the read path, counted
 * in instructions (bench/dbmap_cachegrind builds and runs it under
 * cachegrind against two storage builds): N times a read transaction
 * that looks one key up, in an environment never swapped, or (with
 * "swapped" as argv[3]) one where a SWAPDB of two other databases wrote
 * a map record. Not built by `make`: the script compiles it.
 */
#include "storage/st_codec.h"
#include "storage/st_env.h"
#include "storage/st_keyspace.h"
#include "storage/st_txn.h"
#ifdef WITH_DBMAP
#include "storage/st_dbmap.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEYS 1000
#define MAP_SIZE (1ull << 28)
#define NAME 16

int main(int argc, char **argv)
{
    st_env_opts o = {
        .dir = argv[1], .databases = 16, .nosync = 1, .map_size = MAP_SIZE
    };
    int n = argc > 2 ? atoi(argv[2]) : 0;
    st_env *e;
    st_txn *t;
    st_keyref k;

    if (argc < 3 || st_env_open(&o, &e)) {
        fprintf(stderr, "usage: dbmap_micro DIR N [swapped]\n");
        return 1;
    }
    st_txn_begin(e, 1, &t);
    for (int i = 0; i < KEYS; i++) {
        char name[NAME];
        int len = snprintf(name, sizeof name, "k%d", i);
        st_codec_keyref_init(&k, 0, name, (size_t)len);
        st_keyspace_string_set(t, &k, "v", 1, 0);
    }
#ifdef WITH_DBMAP
    if (argc > 3 && !strcmp(argv[3], "swapped"))
        st_dbmap_swap(t, 1, 2);
#endif
    st_txn_commit(&t);
    for (int i = 0; i < n; i++) {
        char name[NAME];
        st_rec r;
        int len = snprintf(name, sizeof name, "k%d", i % KEYS);
        st_txn_begin(e, 0, &t);
        st_codec_keyref_init(&k, 0, name, (size_t)len);
        st_keyspace_lookup(t, &k, 0, &r);
        st_txn_commit(&t);
    }
    st_env_close(&e);
    return 0;
}
