"""Checks long strings (kept in spans: SET above 1 MiB, partial writes above 16 KiB) against redis-server reply by reply: random SET/APPEND/SETRANGE/GETRANGE/GET/STRLEN/GETDEL/GETEX/COPY/RENAME/INCR streams across the span boundaries, with and without compression, RESP2 and RESP3; and larder's own promise that a write at a high offset stores one span, not the value."""

import os
import random

from larder_diff import Pair, diff_main
from larder_test import Server, assert_eq, assert_true, larder_only

CHUNK = 2017            # ST_STRING_CHUNK
PATCH = 16384           # ST_STRING_PATCH_INLINE_MAX
INLINE = 1024 * 1024    # ST_STRING_INLINE_MAX
ROUNDS = int(os.environ.get('LARDER_BIGSTR_ROUNDS', '300'))
SPARSE_OFFSET = 500 * 1024 * 1024
SPARSE_MAX_FILE = 64 * 1024 * 1024


def offsets(r):
    return r.choice([0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK - 2,
                     3 * CHUNK, PATCH - 1, PATCH, PATCH + 1,
                     r.randint(0, 12 * CHUNK), r.randint(0, 100), 200000])


def value(r):
    n = r.choice([0, 1, 5, 100, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK + 3,
                  PATCH - 1, PATCH, PATCH + 1, r.randint(0, 12 * CHUNK),
                  INLINE if r.random() < 0.1 else 50,
                  INLINE + 1 if r.random() < 0.1 else 60])
    kind = r.random()
    if kind < 0.3:
        return b'\0' * n
    if kind < 0.6:
        return (b'abcdefg' * (n // 7 + 1))[:n]
    return r.randbytes(n)


def stream(p, seed, rounds=ROUNDS):
    r = random.Random(seed)
    keys = ['a', 'b', 'c']
    for _ in range(rounds):
        k, k2 = r.choice(keys), r.choice(keys)
        op = r.random()
        if op < 0.15:
            p.call('SET', k, value(r))
        elif op < 0.30:
            p.call('APPEND', k, value(r))
        elif op < 0.45:
            p.call('SETRANGE', k, offsets(r), value(r)[:r.randint(0, 40000)])
        elif op < 0.60:
            s, e = offsets(r), offsets(r)
            p.call('GETRANGE', k, r.choice([s, -s - 1]),
                   r.choice([e, -e - 1, -1]))
        elif op < 0.70:
            p.call('GET', k)
        elif op < 0.75:
            p.call('STRLEN', k)
        elif op < 0.78:
            p.call('GETDEL', k)
        elif op < 0.81:
            p.call('GETEX', k, 'EX', '1000')
            p.call('TTL', k)
        elif op < 0.85:
            p.call('COPY', k, k2, 'REPLACE')
        elif op < 0.88:
            p.call('RENAME', k, k2)
        elif op < 0.90:
            p.call('INCR', k)
        elif op < 0.92:
            p.call('SET', k, value(r), 'GET')
        elif op < 0.95:
            p.call('MGET', *keys)
        else:
            p.call('SETRANGE', k, r.randint(CHUNK, 8 * CHUNK), 'x')
    for k in keys:
        p.call('GET', k)


def test_random_stream(p):
    stream(p, 1)


def test_random_stream_resp3(p):
    p.connect(3)
    stream(p, 2)


def test_boundaries(p):
    """Values around the inline limit, growing by APPEND and SETRANGE."""
    for n in (CHUNK - 1, CHUNK, CHUNK + 1, PATCH - 1, PATCH, PATCH + 1,
              INLINE, INLINE + 1):
        k = 'b%d' % n
        p.call('SET', k, b'q' * n)
        p.call('STRLEN', k)
        p.call('APPEND', k, b'xy')
        p.call('GETRANGE', k, CHUNK - 3, CHUNK + 3)
        p.call('GETRANGE', k, PATCH - 3, PATCH + 3)
        p.call('SETRANGE', k, 3 * CHUNK + 7, b'tail')
        p.call('GET', k)
        p.call('GETRANGE', k, -10, -1)
        p.call('SETRANGE', k, 0, b'')
        p.call('SETRANGE', k, 2 * CHUNK, b'')
    p.call('SETRANGE', 'fresh', 2 * CHUNK - 1, b'ab')
    p.call('GET', 'fresh')
    p.call('SETRANGE', 'none', 5, b'')
    p.call('EXISTS', 'none')
    p.call('SETRANGE', 'big', 536870911, 'x')
    p.call('SETRANGE', 'big2', 536870912, 'x')
    p.call('SETRANGE', 'big2', 536870911, 'xy')
    p.call('STRLEN', 'big')
    p.call('GETRANGE', 'big', 536870900, -1)
    p.call('APPEND', 'big', 'y')
    p.call('DEL', 'big')


def test_compressed_pair():
    """The same stream with larder compressing values (and spans)."""
    p = Pair(larder_args=['--compress-threshold', '64'])
    try:
        p.flush()
        stream(p, 3, ROUNDS // 2)
    finally:
        p.close()


def test_sparse_write_stores_one_span():
    """SETRANGE at 500 MB on a new key: the data file stays small, the
    bytes read back, and after DEL the reaper frees the span."""
    larder_only()
    with Server(workers=1) as s, s.client() as c:
        assert_eq(c.call('SETRANGE', 'k', SPARSE_OFFSET, 'hi'),
                  SPARSE_OFFSET + 2)
        for i in range(1, 50):
            c.call('SETRANGE', 'k', SPARSE_OFFSET - i * 1000, 'x')
        size = os.path.getsize(os.path.join(s.dir, 'data.mdb'))
        assert_true(size < SPARSE_MAX_FILE,
                    'data.mdb is %d bytes after sparse writes' % size)
        assert_eq(c.call('STRLEN', 'k'), SPARSE_OFFSET + 2)
        assert_eq(c.call('GETRANGE', 'k', SPARSE_OFFSET - 1000, -1),
                  b'x' + b'\0' * 999 + b'hi')
        assert_eq(c.call('GETRANGE', 'k', 1000000, 1000009), b'\0' * 10)
        assert_eq(c.call('DEL', 'k'), 1)
        assert_eq(c.call('EXISTS', 'k'), 0)


if __name__ == '__main__':
    diff_main(globals())
