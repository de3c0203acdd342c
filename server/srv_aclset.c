/*
 * srv_aclset.c - sets of ACL users (see srv_aclset.h): a sorted array by
 * name, identities, and the text forms (the aclfile's, the shared
 * region's).
 */
#include "server/srv_aclset.h"
#include "server/srv_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for an aclfile error line: its file name and some words. */
#define MSG_MAX (4096 + 256)

struct srv_aclset {
    srv_acl_user **u; /* by name */
    int n, cap;
    uint64_t next_id;
};

static int buf_cat(srv_buf *b, const char *s)
{
    return srv_buf_append(b, s, strlen(s));
}

static int is_default(const srv_acl_user *u)
{
    size_t len;
    const char *name = srv_acl_user_name(u, &len);

    return len == strlen("default") && memcmp(name, "default", len) == 0;
}

static srv_acl_user *default_user(void)
{
    static const char *const rules[] = { "+@all", "~*", "&*", "on", "nopass" };
    srv_acl_user *u = srv_acl_user_create("default", strlen("default"), 0);

    for (size_t i = 0; u && i < sizeof rules / sizeof rules[0]; i++)
        srv_acl_user_apply(u, rules[i], strlen(rules[i]), 0);
    return u;
}

srv_aclset *srv_aclset_create(void)
{
    srv_aclset *s = calloc(1, sizeof *s);
    srv_acl_user *d = default_user();

    if (!s || !d) {
        free(s);
        srv_acl_user_destroy(&d);
        return NULL;
    }
    s->next_id = 1;
    if (srv_aclset_put(s, d, 1)) {
        srv_aclset_destroy(&s);
        return NULL;
    }
    return s;
}

void srv_aclset_destroy(srv_aclset **sp)
{
    srv_aclset *s = *sp;

    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        srv_acl_user_destroy(&s->u[i]);
    free(s->u);
    free(s);
    *sp = NULL;
}

srv_aclset *srv_aclset_copy(const srv_aclset *src)
{
    srv_aclset *s = calloc(1, sizeof *s);

    if (!s || (src->n && !(s->u = calloc((size_t)src->n, sizeof *s->u))))
        goto oom;
    s->cap = src->n;
    s->next_id = src->next_id;
    for (; s->n < src->n; s->n++)
        if (!(s->u[s->n] = srv_acl_user_copy(src->u[s->n])))
            goto oom;
    return s;
oom:
    srv_aclset_destroy(&s);
    return NULL;
}

int srv_aclset_count(const srv_aclset *s) { return s->n; }

srv_acl_user *srv_aclset_at(const srv_aclset *s, int i) { return s->u[i]; }

/* Name order: bytes, a shorter prefix first (Redis's rax order). */
static int name_cmp(const srv_acl_user *u, const char *name, size_t len)
{
    size_t ulen;
    const char *uname = srv_acl_user_name(u, &ulen);
    size_t n = ulen < len ? ulen : len;
    int c = memcmp(uname, name, n);

    if (c)
        return c;
    return ulen < len ? -1 : ulen > len;
}

/* The index of name in s, or -(insertion point) - 1. */
static int locate(const srv_aclset *s, const char *name, size_t len)
{
    int lo = 0, hi = s->n - 1;

    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = name_cmp(s->u[mid], name, len);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -lo - 1;
}

srv_acl_user *srv_aclset_find(const srv_aclset *s, const char *name, size_t len)
{
    int i = locate(s, name, len);

    return i >= 0 ? s->u[i] : NULL;
}

srv_acl_user *srv_aclset_find_id(const srv_aclset *s, uint64_t id)
{
    for (int i = 0; i < s->n; i++)
        if (srv_acl_user_id(s->u[i]) == id)
            return s->u[i];
    return NULL;
}

srv_acl_user *srv_aclset_default(const srv_aclset *s)
{
    return srv_aclset_find(s, "default", strlen("default"));
}

int srv_aclset_put(srv_aclset *s, srv_acl_user *u, int fresh)
{
    size_t ulen;
    const char *uname = srv_acl_user_name(u, &ulen);
    int i = locate(s, uname, ulen);

    if (i >= 0) {
        if (!fresh)
            srv_acl_user_set_id(u, srv_acl_user_id(s->u[i]));
        else
            srv_acl_user_set_id(u, s->next_id++);
        srv_acl_user_destroy(&s->u[i]);
        s->u[i] = u;
        return 0;
    }
    i = -i - 1;
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        srv_acl_user **nu = realloc(s->u, (size_t)cap * sizeof *nu);
        if (!nu) {
            srv_acl_user_destroy(&u);
            return ENOMEM;
        }
        s->u = nu;
        s->cap = cap;
    }
    memmove(s->u + i + 1, s->u + i, (size_t)(s->n - i) * sizeof *s->u);
    s->u[i] = u;
    s->n++;
    if (fresh || srv_acl_user_id(u) == 0)
        srv_acl_user_set_id(u, s->next_id++);
    return 0;
}

int srv_aclset_remove(srv_aclset *s, const char *name, size_t len)
{
    int i = locate(s, name, len);

    if (i < 0)
        return 0;
    srv_acl_user_destroy(&s->u[i]);
    memmove(s->u + i, s->u + i + 1, (size_t)(s->n - i - 1) * sizeof *s->u);
    s->n--;
    return 1;
}

uint64_t srv_aclset_next_id(const srv_aclset *s) { return s->next_id; }

void srv_aclset_set_next_id(srv_aclset *s, uint64_t id) { s->next_id = id; }

/* ---- text ---- */

int srv_aclset_write(const srv_aclset *s, int ids, srv_buf *out)
{
    char num[SRV_LLSTR_SIZE + 1];
    int rc = 0;

    if (ids) {
        snprintf(num, sizeof num, "%llu\n", (unsigned long long)s->next_id);
        rc |= buf_cat(out, num);
    }
    for (int i = 0; i < s->n; i++) {
        if (ids) {
            snprintf(num, sizeof num, "%llu ",
                     (unsigned long long)srv_acl_user_id(s->u[i]));
            rc |= buf_cat(out, num);
        }
        size_t nlen;
        const char *name = srv_acl_user_name(s->u[i], &nlen);
        rc |= buf_cat(out, "user ") | srv_buf_append(out, name, nlen) |
              buf_cat(out, " ") | srv_acl_user_describe(s->u[i], ids, out) |
              buf_cat(out, "\n");
    }
    return rc ? ENOMEM : 0;
}

/* Split a line at single spaces (an empty word between two). At most
 * `max` words; returns the count. */
static int split_spaces(const char *line, size_t len, srv_slice *words, int max)
{
    int n = 0;
    size_t start = 0;

    for (size_t i = 0; i <= len && n < max; i++)
        if (i == len || line[i] == ' ') {
            words[n].ptr = (char *)line + start;
            words[n].len = i - start;
            n++;
            start = i + 1;
        }
    return n;
}

/* Apply the rules of words[0..n) to u. 0 or the first rule's error,
 * with *bad its index among the merged rules. */
static int apply_words(srv_acl_user *u, const srv_slice *words, int n,
                       int allchannels, int keep_going, srv_buf *errs,
                       const char *fname, int lineno)
{
    srv_slice *rules = calloc((size_t)n + 1, sizeof *rules);
    srv_buf joined = { 0 };
    int bad, m, rc = 0, syntax_seen = 0;
    char head[MSG_MAX];

    if (!rules)
        return ENOMEM;
    m = srv_acl_merge_selectors(words, n, rules, &joined, &bad);
    if (m == -2) {
        rc = ENOMEM;
    } else if (m < 0) {
        rc = SRV_ACL_ESYNTAX;
        if (errs) {
            snprintf(head, sizeof head,
                     "%s:%d: Unmatched parenthesis in selector definition.",
                     fname, lineno);
            rc = buf_cat(errs, head) ? ENOMEM : SRV_ACL_ESYNTAX;
        }
    }
    for (int i = 0; i < m && (rc == 0 || keep_going); i++) {
        const char *op = rules[i].ptr;
        size_t len = rules[i].len;
        /* The aclfile's rules lose tabs and line ends at both ends. */
        while (len && strchr("\t\r\n", op[0]))
            op++, len--;
        while (len && strchr("\t\r\n", op[len - 1]))
            len--;
        int e = srv_acl_user_apply(u, op, len, allchannels);
        if (e == SRV_ACL_ENOMEM)
            return ENOMEM;
        if (e) {
            /* Redis names an unknown command (nothing secret in it);
             * of other errors only the first of a line, which may
             * explain the rest. */
            if (errs && e == SRV_ACL_EUNKNOWN)
                snprintf(head, sizeof head,
                         "%s:%d: Error in applying operation '%.*s': %s. ",
                         fname, lineno, (int)len, op, srv_acl_strerror(e));
            else if (errs && !syntax_seen)
                snprintf(head, sizeof head, "%s:%d: %s. ", fname, lineno,
                         srv_acl_strerror(e));
            else
                head[0] = '\0';
            if (e != SRV_ACL_EUNKNOWN)
                syntax_seen = 1;
            rc = e;
            if (errs && buf_cat(errs, head))
                rc = ENOMEM;
        }
    }
    srv_buf_free(&joined);
    free(rules);
    return rc;
}

int srv_aclset_read(const char *text, size_t len, srv_aclset **out)
{
    srv_aclset *s = calloc(1, sizeof *s);
    const char *p = text, *end = text + len;
    int first = 1, rc = 0;

    *out = NULL;
    if (!s)
        return ENOMEM;
    while (p < end && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        long long id;
        const char *sp = memchr(p, ' ', ll);

        if (first) {
            first = 0;
            if (!srv_util_str2ll(p, ll, &id) || id < 1)
                rc = SRV_ACL_ESYNTAX;
            s->next_id = (uint64_t)id;
        } else if (ll) {
            int max = (int)ll + 1, n;
            srv_slice *words = calloc((size_t)max, sizeof *words);
            srv_acl_user *u = NULL;
            if (!words) {
                rc = ENOMEM;
                break;
            }
            n = sp ? split_spaces(sp + 1, ll - (size_t)(sp + 1 - p), words, max)
                   : 0;
            if (!sp || !srv_util_str2ll(p, (size_t)(sp - p), &id) || id < 1 ||
                n < 2 || !srv_util_streq(words[0].ptr, words[0].len, "user"))
                rc = SRV_ACL_ESYNTAX;
            else if (!(u = srv_acl_user_create(words[1].ptr, words[1].len, 0)))
                rc = ENOMEM;
            else if ((rc = apply_words(u, words + 2, n - 2, 0, 0, NULL, NULL,
                                       0)) == 0) {
                srv_acl_user_set_id(u, (uint64_t)id);
                rc = srv_aclset_put(s, u, 0);
                u = NULL;
            }
            srv_acl_user_destroy(&u);
            free(words);
        }
        p += ll + 1;
    }
    if (rc == 0 && !srv_aclset_default(s))
        rc = SRV_ACL_ESYNTAX;
    if (rc) {
        srv_aclset_destroy(&s);
        return rc;
    }
    *out = s;
    return 0;
}

int srv_aclset_load(const char *text, size_t len, const char *fname,
                    uint64_t default_id, uint64_t next_id, int allchannels,
                    srv_aclset **out, srv_buf *err)
{
    srv_aclset *s = calloc(1, sizeof *s);
    const char *p = text, *end = text + len;
    char head[MSG_MAX];
    int lineno = 0, rc = 0;
    size_t err0 = err->len;

    *out = NULL;
    if (!s)
        return ENOMEM;
    s->next_id = next_id;
    while (p < end && rc == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *line = p;
        p += ll + 1;
        lineno++;
        while (ll && strchr(" \t\r\n", line[0]))
            line++, ll--;
        while (ll && strchr(" \t\r\n", line[ll - 1]))
            ll--;
        if (ll == 0)
            continue;
        int max = (int)ll + 1, n;
        srv_slice *words = calloc((size_t)max, sizeof *words);
        srv_acl_user *u = NULL;
        if (!words) {
            rc = ENOMEM;
            break;
        }
        n = split_spaces(line, ll, words, max);
        if (n < 2 || words[0].len != strlen("user") ||
            memcmp(words[0].ptr, "user", words[0].len) != 0) {
            snprintf(head, sizeof head,
                     "%s:%d should start with user keyword followed by the "
                     "username. ",
                     fname, lineno);
            rc = buf_cat(err, head);
        } else if (srv_acl_has_spaces(words[1].ptr, words[1].len)) {
            snprintf(head, sizeof head,
                     "'%s:%d: username '%.*s' contains invalid characters. ",
                     fname, lineno, (int)words[1].len, words[1].ptr);
            rc = buf_cat(err, head);
        } else if (srv_aclset_find(s, words[1].ptr, words[1].len)) {
            snprintf(head, sizeof head,
                     "WARNING: Duplicate user '%.*s' found on line %d. ",
                     (int)words[1].len, words[1].ptr, lineno);
            rc = buf_cat(err, head);
        } else if (!(u = srv_acl_user_create(words[1].ptr, words[1].len,
                                             allchannels))) {
            rc = ENOMEM;
        } else {
            int e = apply_words(u, words + 2, n - 2, allchannels, 1, err, fname,
                                lineno);
            if (e == ENOMEM)
                rc = ENOMEM;
            else if (is_default(u))
                srv_acl_user_set_id(u, default_id);
            if (rc == 0)
                rc = srv_aclset_put(s, u, srv_acl_user_id(u) == 0);
            u = NULL;
        }
        srv_acl_user_destroy(&u);
        free(words);
    }
    if (rc == 0 && !srv_aclset_default(s)) {
        srv_acl_user *d = default_user();
        if (!d)
            rc = ENOMEM;
        else {
            srv_acl_user_set_id(d, default_id);
            rc = srv_aclset_put(s, d, 0);
        }
    }
    if (rc) {
        srv_aclset_destroy(&s);
        return ENOMEM;
    }
    if (err->len > err0) {
        srv_aclset_destroy(&s);
        if (buf_cat(err, "WARNING: ACL errors detected, no change to the "
                         "previously active ACL rules was performed"))
            return ENOMEM;
        return -1;
    }
    *out = s;
    return 0;
}
