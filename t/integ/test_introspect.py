"""Checks OBJECT ENCODING / REFCOUNT / FREQ / IDLETIME / HELP, MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP, LOLWUT, TYPE and SCAN TYPE for every type, TOUCH and RANDOMKEY against redis-server (the same encodings and, for strings and the compact encodings, the same MEMORY USAGE bytes; estimates of big collections within a factor), and OBJECT IDLETIME's clock across workers."""

import time

from larder_diff import Pair, diff_main, numeric_edges
from larder_test import (Server, assert_eq, assert_true, larder_only,
                         wait_until)

MAX_RATIO = 2.0      # big collections: larder's estimate vs Redis's


def strings(p):
    p.call('SET', 'i', '12345')
    p.call('SET', 'shared', '42')
    p.call('SET', 'neg', '-7')
    p.call('SET', 'lead0', '0123')
    p.call('SET', 'minus0', '-0')
    p.call('SET', 'int20', '12345678901234567890')
    p.call('SET', 'max', '9223372036854775807')
    p.call('SET', 'e44', 'x' * 44)
    p.call('SET', 'r45', 'x' * 45)
    p.call('SET', 'r1000', 'y' * 1000)
    p.call('SET', 'r10000', 'z' * 10000)
    p.call('SET', 'empty', '')
    p.call('SET', 'app', '12')
    p.call('APPEND', 'app', '3')
    p.call('APPEND', 'newapp', '5')
    p.call('SETRANGE', 'sr', '2', 'ab')
    p.call('INCR', 'cnt')
    p.call('INCRBY', 'cnt2', '100000')
    p.call('INCRBYFLOAT', 'fl', '10')
    p.call('INCRBYFLOAT', 'fl2', '1.5')
    p.call('SETBIT', 'bits', '10', '1')
    p.call('PFADD', 'hll', 'a', 'b')
    p.call('GETSET', 'gs', '77')
    p.call('MSET', 'm1', '5', 'm2', 'hello')
    p.call('SETEX', 'ex', '100', '999')


def collections(p):
    p.call('HSET', 'h', 'a', '1', 'b', '2')
    p.call('HSET', 'hbig', *sum((['f%d' % i, 'v%d' % i]
                                 for i in range(513)), []))
    p.call('HSET', 'h512', *sum((['f%d' % i, 'v%d' % i]
                                 for i in range(512)), []))
    p.call('HSET', 'hlongval', 'f', 'v' * 65)
    p.call('HSET', 'h64', 'f' * 64, 'v' * 64)
    p.call('ZADD', 'z', '1', 'a', '2.5', 'b', '-3', 'c')
    p.call('ZADD', 'z128', *sum((['%d' % i, 'm%d' % i]
                                 for i in range(128)), []))
    p.call('ZADD', 'z129', *sum((['%d' % i, 'm%d' % i]
                                 for i in range(129)), []))
    p.call('ZADD', 'zlong', '1', 'm' * 65)
    p.call('SADD', 's', '1', '2', '3')
    p.call('SADD', 'sneg', '-40000', '5')
    p.call('SADD', 'sbigint', '9223372036854775807', '1')
    p.call('SADD', 'sstr', '1', 'x')
    p.call('SADD', 's512', *['%d' % i for i in range(512)])
    p.call('SADD', 's513', *['%d' % i for i in range(513)])
    p.call('SADD', 'slead', '01')
    p.call('RPUSH', 'l', 'a', 'b', 'c')
    p.call('RPUSH', 'lints', '1', '200', '-70000', '5000000000')
    p.call('RPUSH', 'lbig', *['element-%d' % i for i in range(3000)])


EXACT = ['i', 'shared', 'neg', 'lead0', 'minus0', 'int20', 'max', 'e44',
         'r45', 'r1000', 'r10000', 'empty', 'newapp', 'cnt', 'cnt2', 'fl',
         'fl2', 'gs', 'm1', 'm2', 'ex', 'h', 'h512', 'hlongval', 'h64', 'z',
         'z128', 's', 'sneg', 'sbigint', 's512', 'l', 'lints']
# Redis's skiplist nodes take random levels, its APPENDs grow greedily:
# these are estimates on both sides.
ESTIMATED = ['hbig', 'z129', 'zlong', 'sstr', 's513', 'slead', 'lbig', 'app',
             'sr', 'bits', 'hll']


def test_encodings_refcounts(p):
    strings(p)
    collections(p)
    for k in EXACT + ESTIMATED + ['nokey']:
        p.call('OBJECT', 'ENCODING', k)
        p.call('OBJECT', 'REFCOUNT', k)
        p.call('OBJECT', 'FREQ', k)
    p.call('OBJECT', 'ENCODING')
    p.call('OBJECT', 'ENCODING', 'i', 'x')
    p.call('OBJECT', 'NOPE', 'i')
    p.call('OBJECT')


def test_encoding_limits_follow_config(p):
    p.call('HSET', 'h', 'a', '1', 'b', '2', 'c', '3')
    p.call('ZADD', 'z', '1', 'a', '2', 'b')
    p.call('SADD', 's', '1', '2', '3')
    for name, v in (('hash-max-listpack-entries', '2'),
                    ('zset-max-listpack-entries', '1'),
                    ('set-max-intset-entries', '2')):
        p.call('CONFIG', 'SET', name, v)
    p.call('HSET', 'h2', 'a', '1', 'b', '2', 'c', '3')
    p.call('ZADD', 'z2', '1', 'a', '2', 'b')
    p.call('SADD', 's2', '1', '2', '3')
    for k in ('h2', 'z2', 's2'):
        p.call('OBJECT', 'ENCODING', k)
    for name, v in (('hash-max-listpack-entries', '512'),
                    ('zset-max-listpack-entries', '128'),
                    ('set-max-intset-entries', '512')):
        p.call('CONFIG', 'SET', name, v)


def test_memory_usage(p):
    strings(p)
    collections(p)
    for k in EXACT + ['nokey']:
        p.call('MEMORY', 'USAGE', k)
        p.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')
    for k in ESTIMATED:
        a, b = p.both('MEMORY', 'USAGE', k)
        assert_true(isinstance(a, int) and isinstance(b, int) and
                    b / MAX_RATIO <= a <= b * MAX_RATIO,
                    'MEMORY USAGE %s: larder %s, redis %s' % (k, a, b))
        a, b = p.both('MEMORY', 'USAGE', k, 'SAMPLES', '0')
        assert_true(b / MAX_RATIO <= a <= b * MAX_RATIO,
                    'MEMORY USAGE %s SAMPLES 0: larder %s, redis %s'
                    % (k, a, b))
    for cmd in (['MEMORY', 'USAGE', 'i', 'SAMPLES'],
                ['MEMORY', 'USAGE', 'i', 'FOO', '1'],
                ['MEMORY', 'USAGE', 'i', 'SAMPLES', '-1'],
                ['MEMORY', 'USAGE'], ['MEMORY', 'NOPE'], ['MEMORY'],
                ['MEMORY', 'STATS', 'x'], ['MEMORY', 'PURGE']):
        p.call(*cmd)
    for v in numeric_edges():
        p.call('MEMORY', 'USAGE', 'i', 'SAMPLES', v)


def as_dict(reply):
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[0::2], reply[1::2]))


def test_memory_stats_and_reports(p):
    strings(p)
    for proto in (2, 3):
        p.connect(proto)
        a, b = (as_dict(x) for x in p.both('MEMORY', 'STATS'))
        assert_eq(sorted(a), sorted(b), 'MEMORY STATS fields')
        for name, v in b.items():
            kind = (lambda x: isinstance(x, (dict, list)) and 'map' or
                    type(x).__name__)
            assert_eq(kind(a[name]), kind(v), 'MEMORY STATS %r' % name)
        for sub in ('DOCTOR', 'MALLOC-STATS'):
            a, b = p.both('MEMORY', sub)
            assert_true(isinstance(a, bytes) and len(a) > 0 and
                        type(a) == type(b),
                        'MEMORY %s: %r vs %r' % (sub, a[:60], b[:60]))
        p.call('MEMORY', 'PURGE')
        a, b = p.both('MEMORY', 'HELP')
        assert_true(a[0].startswith('MEMORY <subcommand>') and
                    all(any(x.startswith(s) for x in a) for s in
                        ('DOCTOR', 'MALLOC-STATS', 'PURGE', 'STATS',
                         'USAGE', 'HELP')), 'MEMORY HELP %s' % a)
        a, b = p.both('OBJECT', 'HELP')
        assert_true(a[0].startswith('OBJECT <subcommand>') and
                    all(any(x.startswith(s) for x in a) for s in
                        ('ENCODING', 'FREQ', 'IDLETIME', 'REFCOUNT',
                         'HELP')), 'OBJECT HELP %s' % a)


def test_lolwut(p):
    for proto in (2, 3):
        p.connect(proto)
        for args in ([], ['VERSION', '1'], ['VERSION', '7'], ['version', '4'],
                     ['VERSION', '49'], ['VERSION', '-1'], ['VERSION', 'x'],
                     ['VERSION'], ['foo'], ['VERSION', '1', 'extra']):
            p.call('LOLWUT', *args)
        for args in (['VERSION', '5'], ['VERSION', '6'],
                     ['VERSION', '6', '20', '3'], ['VERSION', '5', '0', '0'],
                     ['VERSION', '6', '9999', '1']):
            a, b = p.both('LOLWUT', *args)
            assert_true(isinstance(a, bytes) and a.endswith(b'7.0.15\n'),
                        'LOLWUT %s: %r' % (args, a[-60:]))
        p.call('LOLWUT', 'VERSION', '5', 'x')
        p.call('LOLWUT', 'VERSION', '6', '10', 'x')
        for v in numeric_edges():
            p.call('LOLWUT', 'VERSION', v)


def test_types_scan_touch_randomkey(p):
    strings(p)
    collections(p)
    for k in ('i', 'h', 'z', 's', 'l', 'hll', 'bits', 'nokey'):
        p.call('TYPE', k)
    for t in ('string', 'list', 'set', 'zset', 'hash', 'stream', 'nosuch'):
        cursor, seen = '0', set()
        for _ in range(1000):
            a = p.l.call('SCAN', cursor, 'TYPE', t, 'COUNT', '7')
            cursor, keys = a
            seen.update(keys)
            if cursor == b'0':
                break
        want = set(p.r.call('KEYS', '*'))
        want = set(k for k in want if p.r.call('TYPE', k) == t)
        assert_eq(sorted(seen), sorted(want), 'SCAN TYPE %s' % t)
    p.call('TOUCH', 'i', 'h', 'nokey', 'i')
    p.call('TOUCH', 'nokey')
    p.call('RANDOMKEY', same=lambda a, b: a is not None and b is not None)
    p.call('FLUSHALL')
    p.call('RANDOMKEY')


def idle(c, k):
    return c.call('OBJECT', 'IDLETIME', k)


def test_idletime_clock():
    """Reads and writes reset a key's idle time, on any worker; OBJECT,
    TYPE, EXISTS and TTL do not; a key untouched grows older."""
    larder_only()
    with Server(workers=2) as s:
        a, b = s.client(), s.client()
        try:
            for c in (a, b):
                c.call('SET', 'k', 'v')
                c.call('SET', 'k2', 'v')
            assert_eq(idle(a, 'k'), 0)
            wait_until(lambda: idle(a, 'k') >= 2, 10, 'idle time to grow')
            for cmd in (['OBJECT', 'ENCODING', 'k'], ['TYPE', 'k'],
                        ['EXISTS', 'k'], ['TTL', 'k'], ['OBJECT',
                                                         'IDLETIME', 'k']):
                b.call(*cmd)
            assert_true(idle(b, 'k') >= 2, 'peeks are not accesses')
            b.call('GET', 'k')
            assert_true(idle(a, 'k') <= 1, 'a read on another connection '
                        'resets it: %s' % idle(a, 'k'))
            assert_true(idle(a, 'k2') >= 2, 'the other key kept its age')
            b.call('TOUCH', 'k2')
            assert_true(idle(a, 'k2') <= 1, 'TOUCH resets it')
            assert_eq(a.call('OBJECT', 'IDLETIME', 'nokey'), None)
        finally:
            a.close()
            b.close()


if __name__ == '__main__':
    diff_main(globals())
