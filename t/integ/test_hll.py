"""Checks PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST against redis-server reply by reply and the HLL values byte for byte (GET after the same operations): 0, 1, 10 ... 10^6 elements, the sparse->dense promotion (by size and by hll-sparse-max-bytes), merges of every encoding mix, cached cardinalities, corrupt and foreign values, RESP2 and RESP3."""

import os
import random

from larder_diff import diff_main

MILLION = int(os.environ.get('LARDER_HLL_MILLION', '1000000'))
HDR = b'HYLL'


def fill(p, key, n, batch=5000, prefix='e', check_every=1):
    """PFADD n elements to key on both in batches; the bytes agree after
    every batch (every check_every-th for big n)."""
    i, b = 0, 0
    while i < n:
        m = min(batch, n - i)
        p.call('PFADD', key, *['%s%d' % (prefix, j) for j in range(i, i + m)])
        i += m
        b += 1
        if b % check_every == 0:
            p.call('GET', key)
    p.call('GET', key)


def test_counts_and_bytes(p):
    for n in (0, 1, 2, 10, 100, 1000, 3000, 10000, 100000):
        k = 'h%d' % n
        p.call('PFADD', k)
        p.call('GET', k)
        fill(p, k, n, batch=max(1, n // 7) if n < 1000 else 1000)
        p.call('PFDEBUG', 'ENCODING', k)
        p.call('PFCOUNT', k)
        p.call('GET', k)                # the cached cardinality bytes
        p.call('PFCOUNT', k)
        p.call('PFADD', k, 'e0')        # nothing new
        p.call('GET', k)
    p.call('PFCOUNT', 'h10', 'h100', 'h1000', 'nokey')
    p.call('PFCOUNT', 'nokey')
    p.call('EXISTS', 'nokey')


def test_million(p):
    fill(p, 'big', MILLION, batch=10000, check_every=10)
    p.call('PFCOUNT', 'big')
    p.call('GET', 'big')


def test_element_shapes(p):
    r = random.Random(5)
    els = [b'', b'\x00', b'a' * 7, b'a' * 8, b'a' * 9, b'\xff' * 15,
           b'x' * 1000] + [bytes(r.getrandbits(8) for _ in range(r.randint(0, 40)))
                           for _ in range(500)]
    for e in els:
        p.call('PFADD', 's', e)
    p.call('GET', 's')
    p.call('PFCOUNT', 's')
    p.call('PFADD', 's2', *els)
    p.call('GET', 's2')


def test_promotion_by_size(p):
    for limit in ('100', '0', '3000'):
        p.call('CONFIG', 'SET', 'hll-sparse-max-bytes', limit)
        p.call('CONFIG', 'GET', 'hll-sparse-max-bytes')
        p.call('DEL', 'p')
        for i in range(60):
            p.call('PFADD', 'p', 'x%d' % i)
            p.call('PFDEBUG', 'ENCODING', 'p')
        p.call('GET', 'p')
    p.call('CONFIG', 'SET', 'hll-sparse-max-bytes', '3000')


def test_merge(p):
    fill(p, 'sp1', 50, prefix='a')
    fill(p, 'sp2', 70, prefix='b')
    fill(p, 'dn1', 5000, batch=1000, prefix='c')
    p.call('PFMERGE', 'm1', 'sp1', 'sp2')           # sparse stays sparse
    p.call('PFDEBUG', 'ENCODING', 'm1')
    p.call('GET', 'm1')
    p.call('PFMERGE', 'm2', 'sp1', 'dn1')           # a dense source
    p.call('PFDEBUG', 'ENCODING', 'm2')
    p.call('GET', 'm2')
    p.call('PFMERGE', 'sp1', 'sp2')                 # into an existing one
    p.call('GET', 'sp1')
    p.call('PFMERGE', 'm3')                         # nothing: empty HLL
    p.call('GET', 'm3')
    p.call('PFMERGE', 'm3', 'nokey', 'sp2', 'nokey2')
    p.call('GET', 'm3')
    p.call('PFCOUNT', 'm1', 'm2', 'm3')
    p.call('PFMERGE', 'dn1', 'sp2')
    p.call('GET', 'dn1')
    p.call('SET', 'str', 'abc')
    p.call('RPUSH', 'lst', 'x')
    p.call('PFMERGE', 'm4', 'sp2', 'str')
    p.call('PFMERGE', 'str', 'sp2')
    p.call('PFMERGE', 'm4', 'lst')
    p.call('EXISTS', 'm4')
    p.call('EXPIRE', 'sp2', '1000')
    p.call('PFMERGE', 'sp2', 'sp1')
    p.call('TTL', 'sp2')
    p.call('PFADD', 'sp2', 'zzz')
    p.call('TTL', 'sp2')


def test_wrong_and_corrupt(p):
    p.call('SET', 'str', 'abc')
    p.call('RPUSH', 'lst', 'x')
    p.call('SET', 'short', 'HYL')
    p.call('SET', 'badenc', HDR + b'\x02' + b'\0' * 11)
    p.call('SET', 'baddense', HDR + b'\x00' + b'\0' * 11 + b'\0' * 100)
    # sparse covering 16383 registers, cache stale
    p.call('SET', 'corrupt', HDR + b'\x01\0\0\0' + b'\0' * 7 + b'\x80' +
           b'\x7f\xfe')
    # sparse with a fresh cached cardinality: served without looking
    p.call('SET', 'cached', HDR + b'\x01\0\0\0' + b'\x2a' + b'\0' * 7 +
           b'\x7f\xfe')
    for k in ('str', 'lst', 'short', 'badenc', 'baddense', 'corrupt',
              'cached'):
        p.call('PFADD', k, 'a')
        p.call('PFCOUNT', k)
        p.call('PFCOUNT', k, 'nokey')
        p.call('PFMERGE', 'dst', k)
        for sub in ('ENCODING', 'DECODE', 'GETREG', 'TODENSE', 'NOPE'):
            p.call('PFDEBUG', sub, k)
        p.call('GET', k)
    p.call('EXISTS', 'dst')


def test_pfdebug(p):
    fill(p, 'd', 40)
    p.call('PFDEBUG', 'DECODE', 'd')
    p.call('PFDEBUG', 'decode', 'd')
    p.call('PFDEBUG', 'ENCODING', 'd')
    p.call('PFDEBUG', 'NOPE', 'd')
    p.call('PFDEBUG', 'ENCODING', 'nokey')
    p.call('PFDEBUG', 'NOPE', 'nokey')
    p.call('PFDEBUG', 'GETREG', 'd')        # converts it
    p.call('PFDEBUG', 'ENCODING', 'd')
    p.call('GET', 'd')
    p.call('PFDEBUG', 'DECODE', 'd')
    p.call('PFDEBUG', 'TODENSE', 'd')
    fill(p, 'd2', 10)
    p.call('PFDEBUG', 'TODENSE', 'd2')
    p.call('GET', 'd2')
    p.call('PFDEBUG', 'ENCODING')
    p.call('PFDEBUG', 'ENCODING', 'd', 'x')
    for c in (p.l, p.r):
        c.settimeout(60)    # Redis's self-test takes a second or two
    p.call('PFSELFTEST')
    p.call('PFSELFTEST', 'x')


def test_resp3(p):
    p.connect(3)
    fill(p, 'r', 300, batch=50)
    p.call('PFCOUNT', 'r')
    p.call('PFCOUNT', 'r', 'nokey')
    p.call('PFMERGE', 'r2', 'r')
    p.call('PFDEBUG', 'ENCODING', 'r')
    p.call('PFDEBUG', 'DECODE', 'r')
    p.call('PFDEBUG', 'GETREG', 'r2')
    p.call('PFADD', 'r', 'new')


if __name__ == '__main__':
    diff_main(globals())
