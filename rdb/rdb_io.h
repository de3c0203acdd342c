/*
 * rdb_io.h - the byte level of the RDB format: a reader over memory or a
 * file descriptor (buffered, counting offsets and folding the CRC64 of
 * what it consumed), a writer into memory or a file descriptor, and the
 * primitives everything else is made of: length encoding, strings (raw,
 * integer-encoded, LZF-compressed), doubles (text and binary) and
 * little-endian integers.
 *
 * A reader or writer belongs to one thread. A reader that fails records
 * the first failure: its code, its byte offset and a sentence saying what
 * was wrong (err, err_off, why), for messages like "offset 1234: ...".
 */
#ifndef RDB_IO_H
#define RDB_IO_H

#include <stddef.h>
#include <stdint.h>

#include "rdb/rdb_lzf.h"

#define RDB_WHY_MAX 512

/* Length encoding (the two top bits of the first byte). */
#define RDB_LEN_6BIT 0
#define RDB_LEN_14BIT 1
#define RDB_LEN_32BIT 0x80
#define RDB_LEN_64BIT 0x81
#define RDB_LEN_ENCVAL 3
/* Special string encodings (RDB_LEN_ENCVAL, low six bits). */
#define RDB_ENC_INT8 0
#define RDB_ENC_INT16 1
#define RDB_ENC_INT32 2
#define RDB_ENC_LZF 3

/* Strings Redis tries as integers, and compresses from this length on. */
#define RDB_INT_TRY_MAX 11
#define RDB_LZF_MIN 21
#define RDB_LZF_MIN_GAIN 4

/* Text-double markers of the old zset encoding. */
#define RDB_DOUBLE_NAN 253
#define RDB_DOUBLE_POSINF 254
#define RDB_DOUBLE_NEGINF 255

/* A grow-only byte buffer. */
typedef struct rdb_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} rdb_buf;

/* Room for at least `len` bytes in total: 0 or ENOMEM. */
int rdb_buf_reserve(rdb_buf *b, size_t len);
/* Append; 0 or ENOMEM. */
int rdb_buf_append(rdb_buf *b, const void *p, size_t n);
void rdb_buf_free(rdb_buf *b);

/* Reads up to `cap` bytes into dst; *got 0 means the end. 0 or errno. */
typedef int (*rdb_fill_fn)(void *ctx, uint8_t *dst, size_t cap, size_t *got);

typedef struct rdb_reader {
    const uint8_t *p;   /* next unread byte of the window */
    const uint8_t *end; /* end of the window's valid bytes */
    const uint8_t *win; /* start of the window */
    uint64_t win_off;   /* stream offset of win[0] */
    uint64_t size;      /* bytes the stream holds (UINT64_MAX: unknown) */
    size_t max_string;  /* longest string (or blob) accepted */
    rdb_fill_fn fill;   /* NULL: the window is all there is */
    void *ctx;
    uint8_t *own; /* the window when the reader allocated it */
    size_t own_cap;
    uint64_t crc; /* CRC64 of consumed bytes before crc_mark */
    const uint8_t *crc_mark;
    int fd;  /* rdb_reader_fd's descriptor */
    int err; /* first failure: code, offset, sentence */
    uint64_t err_off;
    char why[RDB_WHY_MAX];
} rdb_reader;

/* A reader over `n` bytes at `p` (borrowed for the reader's life). */
void rdb_reader_mem(rdb_reader *r, const void *p, size_t n, size_t max_string);

/*
 * A reader of file descriptor `fd` (not closed by the reader) through a
 * window of `window` bytes; `size` is what the file holds (for early
 * "truncated" answers), UINT64_MAX if unknown. 0 or ENOMEM.
 */
int rdb_reader_fd(rdb_reader *r, int fd, size_t window, uint64_t size,
                  size_t max_string);

/* Free what the reader allocated. */
void rdb_reader_fini(rdb_reader *r);

/* Offset of the next byte to read. */
uint64_t rdb_reader_offset(const rdb_reader *r);

/* CRC64 of every byte consumed so far. */
uint64_t rdb_reader_crc(rdb_reader *r);

/*
 * Record a failure at the current offset (the first one wins) and return
 * `code`: for callers above the byte level that find a bad value.
 */
int rdb_reader_fail(rdb_reader *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Read exactly `n` bytes into dst. 0, RDB_ETRUNC or errno. */
int rdb_read(rdb_reader *r, void *dst, size_t n);
int rdb_read_u8(rdb_reader *r, uint8_t *v);
int rdb_read_le32(rdb_reader *r, uint32_t *v);
int rdb_read_le64(rdb_reader *r, uint64_t *v);

/*
 * A length; with `enc` non-NULL a special encoding is allowed (it sets
 * *enc to 1 and *len to the RDB_ENC_* number), otherwise it is corrupt.
 */
int rdb_read_len(rdb_reader *r, uint64_t *len, int *enc);

/*
 * A string in any of its encodings. *s and *n get its bytes: borrowed from a
 * memory reader's input when stored raw (valid for the reader's life),
 * else written into `scratch` (valid until scratch is reused). Integers
 * become their decimal text. Lengths past max_string give RDB_ETOOBIG.
 */
int rdb_read_string(rdb_reader *r, rdb_buf *scratch, const uint8_t **s,
                    size_t *n);

/* The 8-byte little-endian binary double of zset2. */
int rdb_read_double_bin(rdb_reader *r, double *d);

/* The text double of the old zset encoding (NaN included). */
int rdb_read_double_text(rdb_reader *r, double *d);

/* Reads past `n` bytes without keeping them (CRC still folded). */
int rdb_skip(rdb_reader *r, uint64_t n);

/* Writes `n` bytes somewhere; 0 or errno. */
typedef int (*rdb_flush_fn)(void *ctx, const uint8_t *p, size_t n);

typedef struct rdb_writer {
    rdb_buf buf;        /* bytes not yet flushed (all, in memory) */
    rdb_flush_fn flush; /* NULL: a memory writer */
    void *ctx;
    size_t flush_at;
    uint64_t flushed; /* bytes handed to flush */
    uint64_t crc;     /* CRC64 of the flushed bytes */
    int compress;     /* LZF for strings of RDB_LZF_MIN bytes on */
    int err;          /* sticky first error */
    int fd;
    rdb_buf lzf;    /* compression output */
    uint32_t *htab; /* compressor table, allocated on first use */
} rdb_writer;

/* A writer that keeps everything in w->buf. */
void rdb_writer_mem(rdb_writer *w, int compress);

/* A writer of file descriptor `fd` (not closed), flushing every
 * `chunk` bytes. */
void rdb_writer_fd(rdb_writer *w, int fd, size_t chunk, int compress);

/* Write out what is buffered (fd writer). 0 or the sticky error. */
int rdb_writer_flush(rdb_writer *w);

/* Free the writer's buffers (a memory writer's bytes go with them). */
void rdb_writer_fini(rdb_writer *w);

/* Bytes written so far, and their CRC64. */
uint64_t rdb_writer_bytes(const rdb_writer *w);
uint64_t rdb_writer_crc(rdb_writer *w);

/* The primitives; each returns 0 or the writer's sticky error. */
int rdb_put(rdb_writer *w, const void *p, size_t n);
int rdb_put_u8(rdb_writer *w, uint8_t v);
int rdb_put_le64(rdb_writer *w, uint64_t v);
int rdb_put_len(rdb_writer *w, uint64_t len);
/* A string as Redis saves it: small canonical integers integer-encoded,
 * long ones LZF-compressed when that saves RDB_LZF_MIN_GAIN bytes (and
 * compression is on), the rest raw. */
int rdb_put_string(rdb_writer *w, const void *p, size_t n);
/* A string saved raw or compressed, never integer-encoded (blobs). */
int rdb_put_blob(rdb_writer *w, const void *p, size_t n);
int rdb_put_double_bin(rdb_writer *w, double d);

/*
 * A canonical decimal integer: no sign but '-', no leading zero, no
 * "-0", fits int64 (the rule Redis uses for integer encodings). 1 and
 * *v, or 0.
 */
int rdb_string_to_ll(const uint8_t *s, size_t n, int64_t *v);

/* Decimal text of v into buf (at least RDB_LL_MAX bytes); its length. */
#define RDB_LL_MAX 21
size_t rdb_ll_to_string(int64_t v, char *buf);

#endif
