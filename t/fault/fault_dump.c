/*
 * fault_dump.c - open an LMDB data file (a power-cut image) read-only and
 * without a lock file, walk every record of every named database (so each
 * reachable page is read and checked by LMDB), and print the `keys`
 * database for the checker. Usage: fault_dump FILE
 *
 * fault_dump -b BOOTID DIR first boots DIR as the server's master does
 * (storage/st_durable.h: st_durable_boot with BOOTID as this boot's id,
 * so an image recorded under another id is treated as after a power
 * cut), then dumps DIR/data.mdb. Its flushes are no-ops (a scratch copy).
 *
 * Output, one item a line:
 *   durable STATE R N O         with -b: what the boot found and did, the
 *                               recorded, newest-on-disk, opened txn ids
 *   txnid N                     the transaction the chosen meta page names
 *   db NAME ENTRIES             per named database, after a full walk
 *   k HEXKEY HEXVALUE           every record of `keys`
 * Exit 0 when every walk succeeded; 1 with "error ..." on stdout otherwise.
 *
 * fault_dump -r DIR SECONDS instead holds a read transaction on the live
 * environment in DIR for SECONDS (a reader that pins its snapshot, as a
 * dead reader does until it is cleared): the control for file-growth
 * tests.
 */
#include <limits.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/st_durable.h"
#include "storage/st_err.h"

#define FAULT_MAX_DBS 32
#define FAULT_NAME_MAX 64
/* As the server's default (ST_DEFAULT_MAX_READERS): LMDB wants them equal
 * for a shared lock file. */
#define FAULT_MAX_READERS 1024

static void hex(const MDB_val *v)
{
    const unsigned char *p = v->mv_data;

    for (size_t i = 0; i < v->mv_size; i++)
        printf("%02x", p[i]);
}

static int fail(const char *what, int rc)
{
    printf("error %s: %s\n", what, mdb_strerror(rc));
    return 1;
}

/* Walk one database; print its records when `print` is set. */
static int walk(MDB_txn *txn, MDB_dbi dbi, const char *name, int print)
{
    MDB_cursor *c;
    MDB_val k, v;
    size_t n = 0;
    int rc;

    if ((rc = mdb_cursor_open(txn, dbi, &c)))
        return fail("mdb_cursor_open", rc);
    while ((rc = mdb_cursor_get(c, &k, &v, n ? MDB_NEXT : MDB_FIRST)) == 0) {
        n++;
        if (print) {
            printf("k ");
            hex(&k);
            printf(" ");
            hex(&v);
            printf("\n");
        }
    }
    mdb_cursor_close(c);
    if (rc != MDB_NOTFOUND)
        return fail(name, rc);
    printf("db %s %zu\n", name, n);
    return 0;
}

static int hold(const char *dir, const char *seconds)
{
    MDB_env *env;
    MDB_txn *txn;
    int rc;

    if ((rc = mdb_env_create(&env)))
        return fail("mdb_env_create", rc);
    mdb_env_set_maxdbs(env, FAULT_MAX_DBS);
    mdb_env_set_maxreaders(env, FAULT_MAX_READERS);
    if ((rc = mdb_env_open(env, dir, MDB_RDONLY, 0600)))
        return fail("mdb_env_open", rc);
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)))
        return fail("mdb_txn_begin", rc);
    printf("holding txnid %zu\n", (size_t)mdb_txn_id(txn));
    fflush(stdout);
    sleep((unsigned)atoi(seconds));
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return 0;
}

/*
 * An image is a scratch copy: booting it needs no durability, and its
 * flushes would write tens of MB to disk per image. This program's
 * definitions take the place of libc's, for liblmdb's calls too.
 */
int fsync(int fd)
{
    (void)fd;
    return 0;
}

int fdatasync(int fd)
{
    (void)fd;
    return 0;
}

/* -b BOOTID DIR: the master's boot step on DIR; 0 or 1 (printed). */
static int boot(const char *boot_id, const char *dir, char *file, size_t size)
{
    st_env_opts o = { .dir = dir, .boot_id = boot_id };
    st_durable_report r;
    int rc = st_durable_boot(&o, &r);

    if (rc) {
        printf("error st_durable_boot: %s\n", st_strerror(rc));
        return 1;
    }
    printf("durable %s %llu %llu %llu\n", st_durable_state_name(r.state),
           (unsigned long long)r.recorded_txn, (unsigned long long)r.newest_txn,
           (unsigned long long)r.open_txn);
    if ((size_t)snprintf(file, size, "%s/data.mdb", dir) >= size) {
        printf("error path too long\n");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    char names[FAULT_MAX_DBS][FAULT_NAME_MAX], file[PATH_MAX];
    const char *path;
    int nnames = 0, rc, bad = 0;
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi main_dbi;
    MDB_cursor *c;
    MDB_envinfo info;
    MDB_val k, v;

    if (argc == 4 && strcmp(argv[1], "-r") == 0)
        return hold(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "-b") == 0) {
        if (boot(argv[2], argv[3], file, sizeof file))
            return 1;
        path = file;
    } else if (argc == 2) {
        path = argv[1];
    } else {
        fprintf(stderr, "usage: fault_dump FILE | fault_dump -b BOOTID DIR | "
                        "fault_dump -r DIR SECONDS\n");
        return 2;
    }
    if ((rc = mdb_env_create(&env)))
        return fail("mdb_env_create", rc);
    mdb_env_set_maxdbs(env, FAULT_MAX_DBS);
    if ((rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY | MDB_NOLOCK,
                           0600)))
        return fail("mdb_env_open", rc);
    mdb_env_info(env, &info);
    printf("txnid %zu\n", (size_t)info.me_last_txnid);
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)))
        return fail("mdb_txn_begin", rc);
    if ((rc = mdb_dbi_open(txn, NULL, 0, &main_dbi)))
        return fail("mdb_dbi_open(main)", rc);
    if ((rc = mdb_cursor_open(txn, main_dbi, &c)))
        return fail("mdb_cursor_open(main)", rc);
    while ((rc = mdb_cursor_get(c, &k, &v, nnames ? MDB_NEXT : MDB_FIRST)) ==
               0 &&
           nnames < FAULT_MAX_DBS) {
        size_t len = k.mv_size < FAULT_NAME_MAX - 1 ? k.mv_size
                                                    : FAULT_NAME_MAX - 1;
        memcpy(names[nnames], k.mv_data, len);
        names[nnames][len] = '\0';
        /* A damaged image may hold any bytes: print names safely. */
        for (size_t i = 0; i < len; i++)
            if (names[nnames][i] <= ' ' || names[nnames][i] > '~')
                names[nnames][i] = '?';
        nnames++;
    }
    mdb_cursor_close(c);
    if (rc != 0 && rc != MDB_NOTFOUND)
        return fail("walking the main database", rc);
    for (int i = 0; i < nnames; i++) {
        MDB_dbi dbi;

        if ((rc = mdb_dbi_open(txn, names[i], 0, &dbi))) {
            bad |= fail(names[i], rc);
            continue;
        }
        bad |= walk(txn, dbi, names[i], strcmp(names[i], "keys") == 0);
    }
    /* The free-page database: its pages are reused by the next writer. */
    bad |= walk(txn, 0, "(free)", 0);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return bad;
}
