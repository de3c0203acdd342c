/*
 * unit_tmp.c - scratch directories for the unit tests (see unit_tmp.h).
 */
#include "t/unit/unit_tmp.h"

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NFTW_FDS 16

void unit_tmp_make(char *root, size_t size, const char *name)
{
    const char *base = getenv("TMPDIR");

    snprintf(root, size, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
    ck_assert_ptr_nonnull(mkdtemp(root));
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void unit_tmp_remove(const char *root)
{
    nftw(root, rm_one, NFTW_FDS, FTW_DEPTH | FTW_PHYS);
}
