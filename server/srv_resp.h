/*
 * srv_resp.h - the RESP request parser: multibulk and inline requests,
 * parsed incrementally from a connection's read buffer. Arguments of a
 * multibulk request are slices of the buffer (no copy); inline arguments
 * are unescaped into a side buffer. Errors carry Redis's exact text.
 */
#ifndef SRV_RESP_H
#define SRV_RESP_H

#include <stddef.h>

/* Longest inline request or multibulk header line, as Redis. */
#define SRV_PROTO_INLINE_MAX (64 * 1024)
/* Largest multibulk count accepted. */
#define SRV_PROTO_MAX_ARGS 0x7fffffff

typedef struct srv_slice {
    char *ptr;
    size_t len;
} srv_slice;

enum srv_parse_result {
    SRV_PARSE_DONE = 0,   /* a whole command is in argv */
    SRV_PARSE_MORE = 1,   /* need more bytes */
    SRV_PARSE_ERROR = -1, /* protocol error: reply p->error, close */
    SRV_PARSE_NOMEM = -2,
};

typedef struct srv_parser {
    /* configuration */
    long long max_bulk; /* proto-max-bulk-len */
    /* state of the command being parsed, offsets from its first byte */
    int kind;       /* 0 none yet, '*' multibulk, 'i' inline */
    long long left; /* multibulk arguments still to read */
    long long bulk; /* length of the next bulk, -1 = header */
    size_t cur;     /* next unparsed byte */
    /* result */
    int argc;
    int argv_cap;
    size_t *off;     /* argument offsets (multibulk) */
    srv_slice *argv; /* filled when the command is done */
    char *inl;       /* inline arguments, unescaped */
    size_t inl_cap;
    size_t consumed;   /* bytes of the finished command */
    size_t need;       /* bytes the pending bulk needs in all */
    const char *error; /* protocol error text, without "-ERR " */
} srv_parser;

void srv_resp_parser_init(srv_parser *p, long long max_bulk);
void srv_resp_parser_fini(srv_parser *p);

/* Forget the command just handled (or the partial one). */
void srv_resp_parser_reset(srv_parser *p);

/*
 * Parse from buf[0..len), the unconsumed bytes of a read buffer, which
 * always starts at the current command's first byte. On DONE, p->argc and
 * p->argv describe it (pointing into buf or p->inl until the next call)
 * and p->consumed says how many bytes it took; argc may be 0 for an empty
 * line, which the caller skips. On MORE, p->need (if non-zero) says how
 * many bytes from buf's start the command will take at least, so the
 * caller can grow the buffer once for a big bulk.
 */
int srv_resp_parse(srv_parser *p, char *buf, size_t len);

/*
 * Look ahead, without a parser: if buf[0..len) starts with a complete
 * multibulk request, put its first (up to) `max` arguments in argv (slices
 * of buf), its argument count in *argc, and return its length in bytes.
 * Returns 0 when it is incomplete, inline or malformed: then srv_resp_parse
 * will say what it is. For hints only (prefetching what a pipeline will use).
 */
size_t srv_resp_peek(const char *buf, size_t len, srv_slice *argv, int max,
                     long long *argc);

/* Results of srv_resp_split_args besides an argument count. */
#define SRV_SPLIT_EQUOTES (-1)
#define SRV_SPLIT_ETOOMANY (-2)

/*
 * Split a line like Redis's inline protocol and config files: words
 * separated by spaces, "double quotes" with \n \r \t \b \a \xHH escapes,
 * 'single quotes' with \'. Arguments are unescaped into `out` (at least
 * len + 1 bytes; each argument is followed by a NUL there). Returns the
 * count, SRV_SPLIT_EQUOTES or SRV_SPLIT_ETOOMANY (more than maxargs).
 */
int srv_resp_split_args(const char *line, size_t len, char *out,
                        srv_slice *argv, int maxargs);

#endif
