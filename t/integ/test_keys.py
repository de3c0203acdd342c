"""Checks keyspace commands: DEL UNLINK EXISTS TYPE EXPIRE* TTL PTTL EXPIRETIME PERSIST KEYS SCAN RENAME RENAMENX RANDOMKEY COPY and lazy expiry."""

import os
import time

from larder_test import (assert_eq, assert_error, assert_true, assert_ttl,
                         main, wait_until)

NOTINT = 'ERR value is not an integer or out of range'
SYNTAX = 'ERR syntax error'


def fill(c, keys, value=b'v'):
    for i in range(0, len(keys), 1000):
        r = c.pipeline([('SET', k, value) for k in keys[i:i + 1000]])
        assert_true(all(x == 'OK' for x in r), 'SETs succeeded')


def test_del_unlink(s):
    with s.client() as c:
        c.call('MSET', 'a', '1', 'b', '2', 'c', '3')
        assert_eq(c.call('DEL', 'a', 'nokey', 'a'), 1)
        assert_eq(c.call('UNLINK', 'b', 'c', 'b', 'zz'), 2)
        assert_eq(c.call('DEL', 'a'), 0)
        assert_eq(c.call('DBSIZE'), 0)
        assert_error(c.call('DEL'),
                     "ERR wrong number of arguments for 'del' command")
        assert_error(c.call('UNLINK'),
                     "ERR wrong number of arguments for 'unlink' command")
        assert_eq(c.call('RPUSH', 'l', 'x'), 1)
        assert_eq(c.call('SADD', 's', 'x'), 1)
        assert_eq(c.call('DEL', 'l', 's'), 2)


def test_exists_counts_duplicates(s):
    with s.client() as c:
        assert_eq(c.call('EXISTS', 'k'), 0)
        c.call('SET', 'k', 'v')
        c.call('SET', 'j', 'v')
        assert_eq(c.call('EXISTS', 'k'), 1)
        assert_eq(c.call('EXISTS', 'k', 'k', 'k'), 3)
        assert_eq(c.call('EXISTS', 'k', 'nokey', 'j', 'k'), 3)


def test_type(s):
    with s.client() as c:
        c.call('SET', 'str', 'v')
        assert_eq(c.call('TYPE', 'str'), 'string')
        assert_eq(c.call('TYPE', 'nokey'), 'none')
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_eq(c.call('TYPE', 'list'), 'list')
        assert_eq(c.call('SADD', 'set', 'x'), 1)
        assert_eq(c.call('TYPE', 'set'), 'set')
        assert_eq(c.call('HSET', 'hash', 'f', 'v'), 1)
        assert_eq(c.call('TYPE', 'hash'), 'hash')
        assert_eq(c.call('ZADD', 'zset', '1', 'x'), 1)
        assert_eq(c.call('TYPE', 'zset'), 'zset')


def test_expire_family(s):
    with s.client() as c:
        c.call('SET', 'k', 'v')
        assert_eq(c.call('EXPIRE', 'k', '100'), 1)
        assert_ttl(c, 'k', 100)
        assert_eq(c.call('PEXPIRE', 'k', '200000'), 1)
        assert_true(199000 <= c.call('PTTL', 'k') <= 200000, 'PTTL')
        assert_ttl(c, 'k', 200)
        at = int(time.time()) + 1000
        assert_eq(c.call('EXPIREAT', 'k', at), 1)
        assert_eq(c.call('EXPIRETIME', 'k'), at)
        assert_eq(c.call('PEXPIRETIME', 'k'), at * 1000)
        assert_eq(c.call('PEXPIREAT', 'k', '4000000000123'), 1)
        assert_eq(c.call('PEXPIRETIME', 'k'), 4000000000123)
        assert_eq(c.call('EXPIRETIME', 'k'), 4000000000)
        for cmd in ('EXPIRE', 'PEXPIRE', 'EXPIREAT', 'PEXPIREAT'):
            assert_eq(c.call(cmd, 'nokey', '100'), 0)
        assert_eq(c.call('EXISTS', 'nokey'), 0)


def test_expire_in_past_deletes(s):
    with s.client() as c:
        for cmd, arg in (('EXPIRE', '0'), ('EXPIRE', '-5'), ('PEXPIRE', '0'),
                         ('EXPIREAT', '1'), ('PEXPIREAT', '1')):
            c.call('SET', 'k', 'v')
            assert_eq(c.call(cmd, 'k', arg), 1)
            assert_eq(c.call('EXISTS', 'k'), 0)


def test_expire_options(s):
    with s.client() as c:
        c.call('SET', 'k', 'v')
        # No TTL: XX and GT do nothing, LT sets (no TTL = infinite).
        assert_eq(c.call('EXPIRE', 'k', '100', 'XX'), 0)
        assert_eq(c.call('EXPIRE', 'k', '100', 'GT'), 0)
        assert_eq(c.call('TTL', 'k'), -1)
        assert_eq(c.call('EXPIRE', 'k', '100', 'LT'), 1)
        assert_ttl(c, 'k', 100)
        assert_eq(c.call('EXPIRE', 'k', '60', 'NX'), 0)
        assert_eq(c.call('EXPIRE', 'k', '200', 'GT'), 1)
        assert_eq(c.call('EXPIRE', 'k', '50', 'GT'), 0)
        assert_ttl(c, 'k', 200)
        assert_eq(c.call('EXPIRE', 'k', '50', 'LT'), 1)
        assert_eq(c.call('EXPIRE', 'k', '150', 'lt'), 0)
        assert_ttl(c, 'k', 50)
        assert_eq(c.call('EXPIRE', 'k', '70', 'XX'), 1)
        assert_ttl(c, 'k', 70)
        c.call('PERSIST', 'k')
        assert_eq(c.call('EXPIRE', 'k', '60', 'NX'), 1)
        assert_ttl(c, 'k', 60)
        assert_eq(c.call('PEXPIRE', 'k', '90000', 'GT'), 1)
        assert_eq(c.call('EXPIREAT', 'k', '4000000000', 'GT'), 1)
        assert_eq(c.call('PEXPIREAT', 'k', '3000000000000', 'GT'), 0)
        assert_eq(c.call('EXPIRETIME', 'k'), 4000000000)


def test_expire_option_errors(s):
    with s.client() as c:
        c.call('SET', 'k', 'v')
        nxmix = 'ERR NX and XX, GT or LT options at the same time are not ' \
                'compatible'
        for cmd in ('EXPIRE', 'PEXPIRE', 'EXPIREAT', 'PEXPIREAT'):
            assert_error(c.call(cmd, 'k', '100', 'NX', 'XX'), nxmix)
            assert_error(c.call(cmd, 'k', '100', 'NX', 'GT'), nxmix)
            assert_error(c.call(cmd, 'k', '100', 'LT', 'NX'), nxmix)
            assert_error(c.call(cmd, 'k', '100', 'GT', 'LT'),
                         'ERR GT and LT options at the same time are not '
                         'compatible')
            assert_error(c.call(cmd, 'k', '100', 'FOO'),
                         'ERR Unsupported option FOO')
            assert_error(c.call(cmd, 'k', 'abc'), NOTINT)
            assert_error(c.call(cmd, 'k', '1.5'), NOTINT)
        assert_eq(c.call('TTL', 'k'), -1)
        # XX and GT together are allowed.
        assert_eq(c.call('EXPIRE', 'k', '100', 'XX', 'GT'), 0)


def test_expire_invalid_time(s):
    with s.client() as c:
        c.call('SET', 'k', 'v')
        for cmd in ('expire', 'pexpire', 'expireat'):
            assert_error(c.call(cmd, 'k', '9223372036854775807'),
                         "ERR invalid expire time in '%s' command" % cmd)
        assert_error(c.call('EXPIRE', 'k', '-9223372036854775808'),
                     "ERR invalid expire time in 'expire' command")
        assert_eq(c.call('TTL', 'k'), -1)


def test_ttl_pttl(s):
    with s.client() as c:
        assert_eq(c.call('TTL', 'nokey'), -2)
        assert_eq(c.call('PTTL', 'nokey'), -2)
        assert_eq(c.call('EXPIRETIME', 'nokey'), -2)
        assert_eq(c.call('PEXPIRETIME', 'nokey'), -2)
        c.call('SET', 'k', 'v')
        assert_eq(c.call('TTL', 'k'), -1)
        assert_eq(c.call('PTTL', 'k'), -1)
        assert_eq(c.call('EXPIRETIME', 'k'), -1)
        assert_eq(c.call('PEXPIRETIME', 'k'), -1)
        c.call('PEXPIRE', 'k', '1700')
        p1 = c.call('PTTL', 'k')
        t = c.call('TTL', 'k')
        p2 = c.call('PTTL', 'k')
        assert_true(0 < p2 <= p1 <= 1700, 'PTTL %r then %r' % (p1, p2))
        # TTL rounds to the nearest second (2 when nothing is slow).
        assert_true((p2 + 500) // 1000 <= t <= (p1 + 500) // 1000,
                    'TTL %r between PTTLs %r and %r' % (t, p1, p2))


def test_persist(s):
    with s.client() as c:
        assert_eq(c.call('PERSIST', 'nokey'), 0)
        c.call('SET', 'k', 'v')
        assert_eq(c.call('PERSIST', 'k'), 0)
        c.call('EXPIRE', 'k', '100')
        assert_eq(c.call('PERSIST', 'k'), 1)
        assert_eq(c.call('TTL', 'k'), -1)
        assert_eq(c.call('PERSIST', 'k'), 0)


def test_keys_patterns(s):
    with s.client() as c:
        names = ['hello', 'hallo', 'hxllo', 'hllo', 'heeeello', 'hbllo',
                 'a', 'b', 'c', 'd', 'h*llo', 'h?llo', 'h\\llo', 'x[y]z', 'X']
        fill(c, names)

        def keys(p):
            return sorted(k.decode() for k in c.call('KEYS', p))
        assert_eq(keys('*'), sorted(names))
        assert_eq(keys('h?llo'), ['h*llo', 'h?llo', 'h\\llo', 'hallo',
                                  'hbllo', 'hello', 'hxllo'])
        assert_eq(keys('h*llo'), ['h*llo', 'h?llo', 'h\\llo', 'hallo',
                                  'hbllo', 'heeeello', 'hello', 'hllo',
                                  'hxllo'])
        assert_eq(keys('h[ae]llo'), ['hallo', 'hello'])
        assert_eq(keys('h[^e]llo'), ['h*llo', 'h?llo', 'h\\llo', 'hallo',
                                     'hbllo', 'hxllo'])
        assert_eq(keys('h[a-b]llo'), ['hallo', 'hbllo'])
        assert_eq(keys('[a-c]'), ['a', 'b', 'c'])
        assert_eq(keys('[^a]'), ['X', 'b', 'c', 'd'])
        assert_eq(keys('[c-a]'), ['a', 'b', 'c'])   # reversed range
        assert_eq(keys('h\\*llo'), ['h*llo'])
        assert_eq(keys('h\\?llo'), ['h?llo'])
        assert_eq(keys('h\\\\llo'), ['h\\llo'])
        assert_eq(keys('x\\[y\\]z'), ['x[y]z'])
        assert_eq(keys('x'), [])                    # case-sensitive
        assert_eq(keys('X'), ['X'])
        assert_eq(keys('nomatch*'), [])
        assert_eq(keys('?'), ['X', 'a', 'b', 'c', 'd'])
        c.call('SELECT', '1')
        assert_eq(keys('*'), [])


def _scan_all(c, *opts, on_page=None):
    cursor = b'0'
    seen = []
    calls = 0
    while True:
        r = c.call('SCAN', cursor, *opts)
        assert_true(isinstance(r, list) and len(r) == 2, 'SCAN reply %r'
                    % (r,))
        cursor, keys = r
        assert_true(isinstance(cursor, bytes) and cursor.isdigit(),
                    'cursor is a decimal integer: %r' % cursor)
        seen.extend(keys)
        calls += 1
        if on_page:
            on_page(calls)
        if cursor == b'0':
            return seen, calls
        assert_true(calls < 100000, 'SCAN terminates')


def test_scan_basic(s):
    with s.client() as c:
        r = c.call('SCAN', '0')
        assert_eq(r, [b'0', []])
        names = ['key:%d' % i for i in range(100)]
        fill(c, names)
        seen, _ = _scan_all(c)
        assert_eq(sorted(set(seen)), sorted(n.encode() for n in names))
        seen, _ = _scan_all(c, 'MATCH', 'key:1*')
        assert_eq(sorted(set(seen)), sorted(n.encode() for n in names
                                            if n.startswith('key:1')))
        seen, calls = _scan_all(c, 'COUNT', '5', 'MATCH', 'key:?')
        assert_eq(sorted(set(seen)), [b'key:%d' % i for i in range(10)])
        seen, calls = _scan_all(c, 'COUNT', '1000')
        assert_eq(len(set(seen)), 100)


def test_scan_type(s):
    with s.client() as c:
        c.call('SET', 'str', 'v')
        c.call('SET', 'str2', 'v')
        seen, _ = _scan_all(c, 'TYPE', 'string')
        assert_eq(sorted(seen), [b'str', b'str2'])
        seen, _ = _scan_all(c, 'TYPE', 'list')
        assert_eq(seen, [])
        seen, _ = _scan_all(c, 'TYPE', 'nosuchtype')
        assert_eq(seen, [])
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_eq(c.call('SADD', 'set', 'x'), 1)
        seen, _ = _scan_all(c, 'TYPE', 'string')
        assert_eq(sorted(seen), [b'str', b'str2'])
        seen, _ = _scan_all(c, 'TYPE', 'LIST')
        assert_eq(seen, [b'list'])
        seen, _ = _scan_all(c, 'TYPE', 'hash')
        assert_eq(seen, [])
        seen, _ = _scan_all(c, 'TYPE', 'set', 'MATCH', 's*', 'COUNT', '10')
        assert_eq(seen, [b'set'])


def test_scan_errors(s):
    with s.client() as c:
        assert_error(c.call('SCAN', 'abc'), 'ERR invalid cursor')
        assert_error(c.call('SCAN', '18446744073709551616'),
                     'ERR invalid cursor')
        assert_error(c.call('SCAN', '0', 'COUNT', '0'), SYNTAX)
        assert_error(c.call('SCAN', '0', 'COUNT', 'abc'), NOTINT)
        assert_error(c.call('SCAN', '0', 'FOO'), SYNTAX)
        assert_error(c.call('SCAN', '0', 'MATCH'), SYNTAX)
        assert_error(c.call('SCAN', '0', 'TYPE'), SYNTAX)


def test_scan_10k_with_writes(s):
    with s.client() as c, s.client() as w:
        stable = ['stable:%05d' % i for i in range(10000)]
        fill(c, stable)
        deleted = ['gone:%d' % i for i in range(500)]
        fill(c, deleted)

        def writes(page):
            # Writes between SCAN calls: inserts, deletes, overwrites.
            w.pipeline([('SET', 'new:%d:%d' % (page, j), 'x')
                        for j in range(5)] +
                       [('DEL', 'gone:%d' % (page % 500))] +
                       [('SET', 'stable:%05d' % ((page * 37) % 10000), 'w')])
        seen, calls = _scan_all(c, 'COUNT', '100', on_page=writes)
        got = set(seen)
        missing = [k for k in stable if k.encode() not in got]
        assert_eq(missing[:10], [], 'stable keys missing from SCAN (%d)'
                  % len(missing))
        assert_true(calls > 10, 'SCAN took several calls (%d)' % calls)
        assert_true(len(seen) < 3 * 11000, 'SCAN returned no runaway '
                    'duplicates (%d)' % len(seen))


def test_rename(s):
    with s.client() as c:
        c.call('SET', 'a', '1', 'EX', '100')
        assert_eq(c.call('RENAME', 'a', 'b'), 'OK')
        assert_eq(c.call('EXISTS', 'a'), 0)
        assert_eq(c.call('GET', 'b'), b'1')
        assert_ttl(c, 'b', 100)
        c.call('SET', 'c', '2')
        assert_eq(c.call('RENAME', 'c', 'b'), 'OK')    # overwrites, TTL too
        assert_eq(c.call('GET', 'b'), b'2')
        assert_eq(c.call('TTL', 'b'), -1)
        assert_eq(c.call('RENAME', 'b', 'b'), 'OK')
        assert_eq(c.call('GET', 'b'), b'2')
        assert_error(c.call('RENAME', 'nokey', 'x'), 'ERR no such key')
        assert_error(c.call('RENAME', 'nokey', 'nokey'), 'ERR no such key')
        assert_eq(c.call('RPUSH', 'l', 'x', 'y'), 2)
        assert_eq(c.call('RENAME', 'l', 'l2'), 'OK')
        assert_eq(c.call('LRANGE', 'l2', '0', '-1'), [b'x', b'y'])


def test_renamenx(s):
    with s.client() as c:
        c.call('SET', 'a', '1', 'PX', '100000')
        c.call('SET', 'b', '2')
        assert_eq(c.call('RENAMENX', 'a', 'b'), 0)
        assert_eq(c.call('GET', 'b'), b'2')
        assert_eq(c.call('RENAMENX', 'a', 'c'), 1)
        assert_eq(c.call('EXISTS', 'a'), 0)
        assert_eq(c.call('GET', 'c'), b'1')
        assert_true(99000 <= c.call('PTTL', 'c') <= 100000, 'TTL kept')
        assert_eq(c.call('RENAMENX', 'c', 'c'), 0)
        assert_error(c.call('RENAMENX', 'nokey', 'x'), 'ERR no such key')


def test_randomkey(s):
    with s.client() as c:
        assert_eq(c.call('RANDOMKEY'), None)
        c.call('SET', 'only', 'v')
        assert_eq(c.call('RANDOMKEY'), b'only')
        names = set(b'k%d' % i for i in range(20))
        fill(c, sorted(names))
        names.add(b'only')
        seen = set()
        for _ in range(200):
            k = c.call('RANDOMKEY')
            assert_true(k in names, 'RANDOMKEY returned an existing key: %r'
                        % k)
            seen.add(k)
        assert_true(len(seen) > 5, 'RANDOMKEY is random (%d distinct)'
                    % len(seen))
        c.call('SELECT', '4')
        assert_eq(c.call('RANDOMKEY'), None)


def test_copy(s):
    with s.client() as c:
        c.call('SET', 'src', 'v', 'EX', '100')
        assert_eq(c.call('COPY', 'src', 'dst'), 1)
        assert_eq(c.call('GET', 'dst'), b'v')
        assert_ttl(c, 'dst', 100)
        assert_eq(c.call('GET', 'src'), b'v')
        c.call('SET', 'src', 'w')
        assert_eq(c.call('COPY', 'src', 'dst'), 0)
        assert_eq(c.call('GET', 'dst'), b'v')
        assert_eq(c.call('COPY', 'src', 'dst', 'REPLACE'), 1)
        assert_eq(c.call('GET', 'dst'), b'w')
        assert_eq(c.call('TTL', 'dst'), -1)
        assert_eq(c.call('COPY', 'nokey', 'dst'), 0)
        assert_eq(c.call('COPY', 'src', 'src', 'DB', '3'), 1)
        assert_eq(c.call('COPY', 'src', 'other', 'DB', '3'), 1)
        assert_eq(c.call('COPY', 'src', 'other', 'DB', '3'), 0)
        c.call('SELECT', '3')
        assert_eq(c.call('MGET', 'src', 'other'), [b'w', b'w'])
        c.call('SELECT', '0')
        assert_error(c.call('COPY', 'src', 'src'),
                     'ERR source and destination objects are the same')
        assert_error(c.call('COPY', 'src', 'src', 'DB', '0'),
                     'ERR source and destination objects are the same')
        assert_error(c.call('COPY', 'src', 'x', 'DB', '16'),
                     'ERR DB index is out of range')
        assert_error(c.call('COPY', 'src', 'x', 'DB', 'abc'), NOTINT)
        assert_error(c.call('COPY', 'src', 'x', 'DB', '2147483648'),
                     'ERR value is out of range, value must between '
                     '-2147483648 and 2147483647')
        assert_error(c.call('COPY', 'src', 'x', 'FOO'), SYNTAX)
        assert_eq(c.call('RPUSH', 'l', 'a', 'b'), 2)
        assert_eq(c.call('COPY', 'l', 'l2'), 1)
        assert_eq(c.call('RPUSH', 'l', 'c'), 3)
        assert_eq(c.call('LRANGE', 'l2', '0', '-1'), [b'a', b'b'])


def test_lazy_expiry(s):
    with s.client() as c:
        c.call('SET', 'k', 'v', 'PX', '50')
        c.call('SET', 'keep', 'v')
        assert_eq(c.call('EXISTS', 'k'), 1)
        wait_until(lambda: c.call('GET', 'k') is None, 5,
                   'key with PX 50 to disappear')
        assert_eq(c.call('TTL', 'k'), -2)
        assert_eq(c.call('PTTL', 'k'), -2)
        assert_eq(c.call('EXISTS', 'k'), 0)
        assert_eq(c.call('KEYS', '*'), [b'keep'])
        assert_eq(c.call('DBSIZE'), 1)


def test_expired_keys_invisible_everywhere(s):
    with s.client() as c:
        names = ['e%d' % i for i in range(50)]
        c.pipeline([('SET', n, 'v', 'PX', '30') for n in names])
        c.call('SET', 'live', 'v')
        wait_until(lambda: c.call('EXISTS', *names) == 0, 5, 'expiry')
        assert_eq(c.call('KEYS', 'e*'), [])
        seen, _ = _scan_all(c)
        assert_eq(seen, [b'live'])
        assert_eq(c.call('RANDOMKEY'), b'live')
        assert_error(c.call('RENAME', 'e1', 'x'), 'ERR no such key')
        assert_eq(c.call('COPY', 'e1', 'x'), 0)
        assert_eq(c.call('SETNX', 'e2', 'new'), 1)
        assert_eq(c.call('TTL', 'e2'), -1)
        assert_eq(c.call('APPEND', 'e3', 'x'), 1)



def test_huge_multi_key_commands(s):
    # One command touching 200k keys, or writing 50 MB, is one reply: no
    # "transaction too large" error may reach the client.
    with s.client() as c:
        n = 200000
        args = []
        for i in range(n):
            args += [b'm%d' % i, b'v%d' % i]
        assert_eq(c.call('MSET', *args), 'OK')
        assert_eq(c.call('DBSIZE'), n)
        got = c.call('MGET', *[b'm%d' % i for i in range(n)])
        assert_eq(got == [b'v%d' % i for i in range(n)], True, 'MGET 200k')
        assert_eq(c.call('DEL', *[b'm%d' % i for i in range(n)]), n)
        assert_eq(c.call('DBSIZE'), 0)
        vals = [os.urandom(512 * 1024) for _ in range(100)]
        args = []
        for i, v in enumerate(vals):
            args += [b'big%d' % i, v]
        assert_eq(c.call('MSET', *args), 'OK')
        assert_eq(c.call('GET', 'big99'), vals[99])
        assert_eq(c.call('UNLINK', *[b'big%d' % i for i in range(100)]), 100)
        c.call('MSET', *[b'f%d' % (i // 2) for i in range(2 * n)])
        assert_eq(c.call('FLUSHALL'), 'OK')
        assert_eq(c.call('DBSIZE'), 0)


if __name__ == '__main__':
    main(globals())
