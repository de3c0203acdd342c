/*
 * unit_tmp.h - scratch directories for the unit tests: one per suite
 * under $TMPDIR (or /tmp), removed with everything in it at the end.
 */
#ifndef UNIT_TMP_H
#define UNIT_TMP_H

#include <stddef.h>

/* Create <TMPDIR>/<name>.XXXXXX into root (size bytes); fails the test
 * if it cannot. */
void unit_tmp_make(char *root, size_t size, const char *name);

/* Remove root and everything below it. */
void unit_tmp_remove(const char *root);

#endif
