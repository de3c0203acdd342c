"""Checks SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO against redis-server reply by reply (RESP2 and RESP3): random streams over short and span-crossing strings, every numeric argument's bad values, BITFIELD overflow modes fuzzed over every width, offsets at 2^32-1 and beyond 512 MB."""

import os
import random

from larder_diff import diff_main, numeric_edges

CHUNK_BITS = 2017 * 8           # ST_STRING_CHUNK, in bits
PATCH_BITS = 16384 * 8          # ST_STRING_PATCH_INLINE_MAX, in bits
ROUNDS = int(os.environ.get('LARDER_BITMAP_ROUNDS', '1500'))
# LARDER_TEST_HEAVY=1 adds BITOP over 512 MB of set bits (scheduled runs).
HEAVY = os.environ.get('LARDER_TEST_HEAVY') == '1'
KEYS = ['a', 'b', 'c', 'l']


def bit_offset(r):
    return r.choice([0, 1, 7, 8, 9, 63, 64, r.randint(0, 200),
                     CHUNK_BITS - 1, CHUNK_BITS, CHUNK_BITS + 1,
                     r.randint(0, 3 * CHUNK_BITS), 2 * CHUNK_BITS + 5,
                     PATCH_BITS - 1, PATCH_BITS, PATCH_BITS + 9,
                     r.randint(0, 12 * CHUNK_BITS)])


def index(r, span):
    v = r.choice([0, 1, 2, -1, -2, r.randint(-span, span),
                  r.randint(0, 3 * span), 2 * span])
    return str(v)


def unit(r):
    return r.choice([[], [], ['BYTE'], ['BIT'], ['bit'], ['byte']])


def field_type(r):
    return r.choice(['i%d' % r.randint(1, 64), 'u%d' % r.randint(1, 63),
                     'i8', 'u8', 'i64', 'u63', 'i1', 'u1', 'i16'])


def bf_ops(r, readonly=False):
    ops = []
    for _ in range(r.randint(0, 4)):
        k = r.random()
        off = r.choice([str(bit_offset(r)), '#%d' % r.randint(0, 40)])
        if k < 0.4 or readonly:
            ops += ['GET', field_type(r), off]
        elif k < 0.65:
            ops += ['SET', field_type(r), off,
                    str(r.choice([0, 1, -1, 127, 128, -129, 255, 256,
                                  r.randint(-2 ** 63, 2 ** 63 - 1)]))]
        elif k < 0.9:
            ops += ['INCRBY', field_type(r), off,
                    str(r.choice([1, -1, 100, -100, 2 ** 62,
                                  r.randint(-2 ** 63, 2 ** 63 - 1)]))]
        else:
            ops += ['OVERFLOW', r.choice(['WRAP', 'SAT', 'FAIL', 'wrap'])]
    return ops


def command(r):
    k = r.choice(KEYS)
    x = r.random()
    if x < 0.18:
        return ['SETBIT', k, bit_offset(r), r.choice(['0', '1', '1'])]
    if x < 0.28:
        return ['GETBIT', k, bit_offset(r)]
    if x < 0.42:
        return ['BITCOUNT', k] + r.choice([[], [index(r, 3000),
                                                index(r, 3000)] + unit(r)])
    if x < 0.56:
        bit = r.choice(['0', '1'])
        return ['BITPOS', k, bit] + r.choice(
            [[], [index(r, 3000)], [index(r, 3000), index(r, 3000)],
             [index(r, 3000), index(r, 3000)] + unit(r)])
    if x < 0.66:
        op = r.choice(['AND', 'OR', 'XOR', 'NOT', 'and'])
        n = 1 if op == 'NOT' and r.random() < 0.8 else r.randint(1, 3)
        return ['BITOP', op, r.choice(KEYS)] + [r.choice(KEYS)
                                               for _ in range(n)]
    if x < 0.78:
        return ['BITFIELD', k] + bf_ops(r)
    if x < 0.82:
        return ['BITFIELD_RO', k] + bf_ops(r, r.random() < 0.8)
    if x < 0.86:
        return ['GET', k]
    if x < 0.90:
        n = r.choice([0, 1, 3, 100, 20000])
        return ['SET', k, bytes(r.choice([0, 255, r.getrandbits(8)])
                                for _ in range(n))]
    if x < 0.92:
        return ['APPEND', k, r.choice(['\x00\xff', 'xyz'])]
    if x < 0.94:
        return ['STRLEN', k]
    if x < 0.96:
        return ['DEL', k]
    return ['EXISTS', k]


def stream(p, seed, rounds=ROUNDS):
    r = random.Random(seed)
    p.call('RPUSH', 'l', 'x')           # a key of the wrong type
    for _ in range(rounds):
        p.call(*command(r))
    for k in KEYS:
        p.call('GET', k)


def test_random_stream(p):
    stream(p, 11)


def test_random_stream_resp3(p):
    p.connect(3)
    stream(p, 12, ROUNDS // 3)


def test_numeric_arguments(p):
    p.call('SET', 's', 'foobar')
    p.call('RPUSH', 'l', 'x')
    for v in numeric_edges() + ['4294967295', '4294967296', '#1', '-#1']:
        for k in ('s', 'nokey', 'l'):
            p.call('SETBIT', k, v, '1')
            p.call('SETBIT', k, '3', v)
            p.call('GETBIT', k, v)
            p.call('BITCOUNT', k, v, '1')
            p.call('BITCOUNT', k, '0', v)
            p.call('BITCOUNT', k, v, v, 'BIT')
            p.call('BITPOS', k, v)
            p.call('BITPOS', k, '1', v)
            p.call('BITPOS', k, '0', '1', v)
            p.call('BITPOS', k, '0', v, '-1', 'BIT')
            p.call('BITFIELD', k, 'GET', 'u8', v)
            p.call('BITFIELD', k, 'SET', 'i8', '0', v)
            p.call('BITFIELD', k, 'INCRBY', 'u8', v, '1')
            p.call('BITFIELD', k, 'GET', 'i' + v, '0')
            p.call('BITFIELD_RO', k, 'GET', 'u' + v, '0')
        p.call('DEL', 'nokey')


def test_argument_errors(p):
    p.call('SET', 's', 'foobar')
    p.call('RPUSH', 'l', 'x')
    for k in ('s', 'nokey', 'l'):
        for cmd in (['BITCOUNT', k, '0'], ['BITCOUNT', k, '0', '1', 'BITS'],
                    ['BITCOUNT', k, '0', '1', 'BIT', 'x'],
                    ['BITPOS', k, '1', '0', '1', 'BYTES'],
                    ['BITPOS', k, '1', '0', '1', 'BIT', 'x'],
                    ['BITPOS', k, '2'], ['BITPOS', k, '-1'],
                    ['BITOP', 'NAND', 'd', k], ['BITOP', 'NOT', 'd', k, k],
                    ['BITOP', 'NOT', 'd'], ['BITOP', 'AND', 'd', k, 'l'],
                    ['BITFIELD', k, 'GET', 'u8'], ['BITFIELD', k, 'FOO'],
                    ['BITFIELD', k, 'OVERFLOW'],
                    ['BITFIELD', k, 'OVERFLOW', 'NONE', 'GET', 'u8', '0'],
                    ['BITFIELD', k, 'GET', 'u64', '0'],
                    ['BITFIELD', k, 'GET', 'i65', '0'],
                    ['BITFIELD', k, 'GET', 'i0', '0'],
                    ['BITFIELD', k, 'GET', 'x8', '0'],
                    ['BITFIELD', k, 'GET', 'u', '0'],
                    ['BITFIELD', k, 'GET', 'u08', '0'],
                    ['BITFIELD', k, 'SET', 'u8', '0'],
                    ['BITFIELD', k, 'GET', 'u8', '0', 'SET', 'u8', '#x', '1'],
                    ['BITFIELD', k, 'GET', 'u8', '#'],
                    ['BITFIELD_RO', k, 'INCRBY', 'u8', '0', '1'],
                    ['BITFIELD_RO', k, 'OVERFLOW', 'SAT'],
                    ['BITFIELD', k], ['BITFIELD_RO', k],
                    ['SETBIT', k, '1'], ['GETBIT', k]):
            p.call(*cmd)
            p.call('GET', 's')
    p.call('EXISTS', 'nokey', 'd')


def test_bitfield_overflow_fuzz(p):
    r = random.Random(99)
    for _ in range(1500):
        bits = r.randint(1, 64)
        sign = bits == 64 or r.random() < 0.5
        t = ('i%d' if sign else 'u%d') % bits
        rng = 2 ** bits
        lo = -(rng // 2) if sign else 0
        v = lo * 2 + r.randint(0, rng * 2)
        v = max(-2 ** 63, min(2 ** 63 - 1, v))
        inc = max(-2 ** 63, min(2 ** 63 - 1, r.randint(-rng, rng)))
        mode = r.choice(['WRAP', 'SAT', 'FAIL'])
        off = r.randint(0, 100)
        p.call('DEL', 'f')
        p.call('BITFIELD', 'f', 'OVERFLOW', mode, 'SET', t, off, v,
               'GET', t, off)
        p.call('BITFIELD', 'f', 'OVERFLOW', mode, 'INCRBY', t, off, inc,
               'GET', t, off, 'INCRBY', t, off, -inc)
        p.call('GET', 'f')


def test_high_offsets(p):
    """2^32-1 is the last bit of a 512 MB string; 2^32 is refused."""
    for off in ('4294967295', '4294967296', '4294967294'):
        p.call('SETBIT', 'big', off, '1')
    p.call('GETBIT', 'big', '4294967295')
    p.call('GETBIT', 'big', '4294967296')
    p.call('STRLEN', 'big')
    p.call('BITCOUNT', 'big')
    p.call('BITCOUNT', 'big', '-1', '-1')
    p.call('BITCOUNT', 'big', '-8', '-1', 'BIT')
    p.call('BITPOS', 'big', '1')
    p.call('BITPOS', 'big', '0', '-1')
    p.call('BITPOS', 'big', '1', '0', '-1', 'BIT')
    p.call('BITPOS', 'big', '1', '1000', '2000')
    p.call('BITFIELD', 'big', 'GET', 'u8', '4294967288',
           'SET', 'u8', '4294967280', '255', 'GET', 'i64', '#67108863')
    p.call('BITFIELD', 'big', 'GET', 'u8', '4294967289')
    p.call('GETRANGE', 'big', '-3', '-1')
    # A sparse BITOP result over 10 MB (at 512 MB under HEAVY).
    p.call('SETBIT', 'small', '1000', '1')
    p.call('SETBIT', 'mid', '80000000', '1')
    p.call('BITOP', 'OR', 'big2', 'small', 'mid')
    p.call('BITCOUNT', 'big2')
    p.call('BITPOS', 'big2', '1', '1')
    p.call('GETRANGE', 'big2', '120', '130')
    p.call('BITOP', 'XOR', 'mid', 'mid', 'big2')
    p.call('BITCOUNT', 'mid')
    p.call('STRLEN', 'mid')
    if HEAVY:
        p.call('BITOP', 'OR', 'big2', 'small', 'big')
        # 512 MB of set bits on both sides (Redis: 1 GB of memory).
        p.call('BITOP', 'NOT', 'big3', 'big')
        p.call('BITCOUNT', 'big3')
        p.call('BITPOS', 'big3', '0')
        p.call('BITOP', 'AND', 'big3', 'big3', 'big')
        p.call('BITCOUNT', 'big3')
    p.call('DEL', 'big', 'big2', 'big3', 'mid')


if __name__ == '__main__':
    diff_main(globals())
