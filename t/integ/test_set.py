"""Checks set commands: SADD SREM SCARD SISMEMBER SMISMEMBER SMEMBERS SPOP SRANDMEMBER SMOVE SINTER SUNION SDIFF and their STORE forms, SINTERCARD, SSCAN, errors, WRONGTYPE and long members."""

from larder_test import (IS_REDIS, assert_eq, assert_error, assert_true,
                         assert_uniform, main)

WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
NOTINT = 'ERR value is not an integer or out of range'
SYNTAX = 'ERR syntax error'


def members(c, key):
    return sorted(c.call('SMEMBERS', key))


def test_sadd_srem_scard(s):
    with s.client() as c:
        assert_eq(c.call('SADD', 's', 'a', 'b', 'a', 'c'), 3)
        assert_eq(c.call('SADD', 's', 'a', 'd'), 1)
        assert_eq(c.call('SCARD', 's'), 4)
        assert_eq(c.call('SCARD', 'nokey'), 0)
        assert_eq(c.call('SREM', 's', 'a', 'zz', 'a'), 1)
        assert_eq(c.call('SREM', 'nokey', 'a'), 0)
        assert_eq(members(c, 's'), [b'b', b'c', b'd'])
        assert_eq(c.call('SMEMBERS', 'nokey'), [])
        assert_eq(c.call('TYPE', 's'), 'set')
        assert_eq(c.call('SREM', 's', 'b', 'c', 'd'), 3)
        assert_eq(c.call('EXISTS', 's'), 0)
        assert_error(c.call('SADD', 's'),
                     "ERR wrong number of arguments for 'sadd' command")


def test_sismember_smismember(s):
    with s.client() as c:
        c.call('SADD', 's', 'a', 'b', '')
        assert_eq(c.call('SISMEMBER', 's', 'a'), 1)
        assert_eq(c.call('SISMEMBER', 's', ''), 1)
        assert_eq(c.call('SISMEMBER', 's', 'z'), 0)
        assert_eq(c.call('SISMEMBER', 'nokey', 'a'), 0)
        assert_eq(c.call('SMISMEMBER', 's', 'a', 'z', 'b'), [1, 0, 1])
        assert_eq(c.call('SMISMEMBER', 'nokey', 'a'), [0])
        assert_error(c.call('SMISMEMBER', 's'),
                     "ERR wrong number of arguments for 'smismember' command")


def test_spop(s):
    with s.client() as c:
        assert_eq(c.call('SPOP', 'nokey'), None)
        assert_eq(c.call('SPOP', 'nokey', '3'), [])
        c.call('SADD', 's', *['m%d' % i for i in range(50)])
        m = c.call('SPOP', 's')
        assert_eq(c.call('SISMEMBER', 's', m), 0)
        assert_eq(c.call('SCARD', 's'), 49)
        got = c.call('SPOP', 's', '10')
        assert_eq(len(set(got)), 10)
        assert_eq(c.call('SCARD', 's'), 39)
        assert_eq(c.call('SMISMEMBER', 's', *got), [0] * 10)
        assert_eq(c.call('SPOP', 's', '0'), [])
        assert_error(c.call('SPOP', 's', '-1'),
                     'ERR value is out of range, must be positive')
        assert_error(c.call('SPOP', 's', 'x'),
                     'ERR value is out of range, must be positive')
        assert_error(c.call('SPOP', 's', '1', '2'), SYNTAX)
        rest = c.call('SPOP', 's', '1000')
        assert_eq(len(set(rest)), 39)
        assert_eq(c.call('EXISTS', 's'), 0)
        c.call('SADD', 't', 'only')
        assert_eq(c.call('SPOP', 't'), b'only')
        assert_eq(c.call('EXISTS', 't'), 0)
        c.hello(3)
        c.call('SADD', 's', 'a', 'b')
        assert_eq(c.call('SPOP', 's', '5'), {b'a', b'b'})


def test_srandmember(s):
    with s.client() as c:
        assert_eq(c.call('SRANDMEMBER', 'nokey'), None)
        assert_eq(c.call('SRANDMEMBER', 'nokey', '5'), [])
        assert_eq(c.call('SRANDMEMBER', 'nokey', '-5'), [])
        c.call('SADD', 's', 'a', 'b', 'c')
        assert_true(c.call('SRANDMEMBER', 's') in (b'a', b'b', b'c'))
        r = c.call('SRANDMEMBER', 's', '2')
        assert_eq(len(set(r)), 2)
        assert_eq(sorted(c.call('SRANDMEMBER', 's', '100')),
                  [b'a', b'b', b'c'])
        r = c.call('SRANDMEMBER', 's', '-100')
        assert_eq(len(r), 100)
        assert_true(set(r) <= {b'a', b'b', b'c'})
        assert_eq(c.call('SRANDMEMBER', 's', '0'), [])
        assert_eq(c.call('SCARD', 's'), 3)
        assert_error(c.call('SRANDMEMBER', 's', '1', '2'), SYNTAX)
        # every member comes up over many draws of a small set
        seen = set()
        for _ in range(200):
            seen.add(c.call('SRANDMEMBER', 's'))
        assert_eq(seen, {b'a', b'b', b'c'})


def test_random_members_are_uniform(s):
    # A set past the size that keeps counts: single picks uniform, samples
    # distinct, SPOP removes what it returns.
    members = [b'r%d' % i for i in range(200)]
    with s.client() as c:
        c.call('SADD', 'rs', *members)
        # Uniform picks are larder's promise: Redis's hash tables pick
        # only roughly fairly (dictGetFairRandomKey), so not against it.
        picks = c.call('SRANDMEMBER', 'rs', '-20000')
        assert_eq(len(picks), 20000)
        if not IS_REDIS:
            assert_uniform(picks, members, 'SRANDMEMBER -20000')
        picks = []
        for _ in range(400):
            r = c.call('SRANDMEMBER', 'rs', '50')
            assert_eq(len(r), 50)
            assert_eq(len(set(r)), 50)
            picks += r
        if not IS_REDIS:
            assert_uniform(picks, members, 'SRANDMEMBER 50')
        got = c.call('SPOP', 'rs', '30')
        assert_eq(len(set(got)), 30)
        assert_true(set(got) <= set(members))
        assert_eq(c.call('SCARD', 'rs'), 170)
        assert_eq(c.call('SMISMEMBER', 'rs', *got), [0] * 30)
        rest = set(members) - set(got)
        assert_eq(set(c.call('SRANDMEMBER', 'rs', '1000')), rest)


def test_smove(s):
    with s.client() as c:
        c.call('SADD', 'a', 'x', 'y')
        assert_eq(c.call('SMOVE', 'a', 'b', 'x'), 1)
        assert_eq(c.call('SMOVE', 'a', 'b', 'x'), 0)
        assert_eq(c.call('SMOVE', 'nokey', 'b', 'x'), 0)
        assert_eq(members(c, 'b'), [b'x'])
        assert_eq(c.call('SMOVE', 'a', 'a', 'y'), 1)
        assert_eq(c.call('SMOVE', 'a', 'a', 'q'), 0)
        assert_eq(c.call('SMOVE', 'a', 'b', 'y'), 1)
        assert_eq(c.call('EXISTS', 'a'), 0)
        assert_eq(members(c, 'b'), [b'x', b'y'])
        c.call('SET', 'str', 'v')
        assert_error(c.call('SMOVE', 'b', 'str', 'x'), WRONGTYPE)
        assert_error(c.call('SMOVE', 'str', 'b', 'x'), WRONGTYPE)
        assert_eq(c.call('SMOVE', 'nokey', 'str', 'x'), 0)


def test_algebra(s):
    with s.client() as c:
        c.call('SADD', 's1', 'a', 'b', 'c', 'd')
        c.call('SADD', 's2', 'c', 'd', 'e')
        c.call('SADD', 's3', 'd', 'x')
        assert_eq(sorted(c.call('SINTER', 's1', 's2')), [b'c', b'd'])
        assert_eq(sorted(c.call('SINTER', 's1', 's2', 's3')), [b'd'])
        assert_eq(c.call('SINTER', 's1', 'nokey'), [])
        assert_eq(sorted(c.call('SINTER', 's1')), [b'a', b'b', b'c', b'd'])
        assert_eq(sorted(c.call('SUNION', 's1', 's2', 'nokey')),
                  [b'a', b'b', b'c', b'd', b'e'])
        assert_eq(sorted(c.call('SDIFF', 's1', 's2')), [b'a', b'b'])
        assert_eq(sorted(c.call('SDIFF', 's1', 's2', 's3')), [b'a', b'b'])
        assert_eq(c.call('SDIFF', 'nokey', 's1'), [])
        assert_eq(c.call('SINTERSTORE', 'd', 's1', 's2'), 2)
        assert_eq(members(c, 'd'), [b'c', b'd'])
        assert_eq(c.call('SUNIONSTORE', 'd', 's1', 's3'), 5)
        assert_eq(members(c, 'd'), [b'a', b'b', b'c', b'd', b'x'])
        assert_eq(c.call('SDIFFSTORE', 'd', 's1', 's2'), 2)
        assert_eq(members(c, 'd'), [b'a', b'b'])
        assert_eq(c.call('SINTERSTORE', 'd', 's1', 'nokey'), 0)
        assert_eq(c.call('EXISTS', 'd'), 0)
        # the destination may be a source
        assert_eq(c.call('SUNIONSTORE', 's1', 's1', 's2'), 5)
        assert_eq(members(c, 's1'), [b'a', b'b', b'c', b'd', b'e'])
        # and may hold another type
        c.call('SET', 'str', 'v')
        assert_eq(c.call('SINTERSTORE', 'str', 's2', 's3'), 1)
        assert_eq(c.call('TYPE', 'str'), 'set')
        c.call('SET', 'str2', 'v')
        assert_error(c.call('SINTER', 's1', 'str2', 's2'), WRONGTYPE)
        assert_error(c.call('SINTER', 'nokey', 'str2'), WRONGTYPE)
        assert_error(c.call('SUNIONSTORE', 'd', 'str2'), WRONGTYPE)
        c.hello(3)
        assert_eq(c.call('SINTER', 's1', 's2'), {b'c', b'd', b'e'})
        assert_eq(c.call('SMEMBERS', 's3'), {b'd', b'x'})


def test_sintercard(s):
    with s.client() as c:
        c.call('SADD', 's1', 'a', 'b', 'c', 'd')
        c.call('SADD', 's2', 'b', 'c', 'd', 'e')
        assert_eq(c.call('SINTERCARD', '2', 's1', 's2'), 3)
        assert_eq(c.call('SINTERCARD', '2', 's1', 's2', 'LIMIT', '2'), 2)
        assert_eq(c.call('SINTERCARD', '2', 's1', 's2', 'LIMIT', '0'), 3)
        assert_eq(c.call('SINTERCARD', '1', 's1'), 4)
        assert_eq(c.call('SINTERCARD', '2', 's1', 'nokey'), 0)
        assert_error(c.call('SINTERCARD', '0', 's1'),
                     'ERR numkeys should be greater than 0')
        assert_error(c.call('SINTERCARD', '3', 's1'),
                     "ERR Number of keys can't be greater than number of args")
        assert_error(c.call('SINTERCARD', '1', 's1', 'LIMIT', '-1'),
                     "ERR LIMIT can't be negative")
        assert_error(c.call('SINTERCARD', '1', 's1', 'LIMIT'), SYNTAX)
        assert_error(c.call('SINTERCARD', '1', 's1', 'FOO'), SYNTAX)
        assert_error(c.call('SINTERCARD', 'x', 's1'),
                     'ERR numkeys should be greater than 0')


def test_sscan(s):
    with s.client() as c:
        assert_eq(c.call('SSCAN', 'nokey', '0'), [b'0', []])
        c.call('SADD', 's', *['m%d' % i for i in range(300)])
        cursor, seen = b'0', []
        while True:
            cursor, batch = c.call('SSCAN', 's', cursor, 'COUNT', '11')
            seen += batch
            if cursor == b'0':
                break
        assert_eq(sorted(seen), sorted(b'm%d' % i for i in range(300)))
        cursor, seen = b'0', []
        while True:
            cursor, batch = c.call('SSCAN', 's', cursor, 'MATCH', 'm2?')
            seen += batch
            if cursor == b'0':
                break
        assert_eq(sorted(seen), sorted(b'm2%d' % i for i in range(10)))
        assert_error(c.call('SSCAN', 's', 'x'), 'ERR invalid cursor')
        assert_error(c.call('SSCAN', 's', '0', 'COUNT', '-1'), SYNTAX)


def test_long_members(s):
    with s.client() as c:
        ms = [b'', b'a' * 511, b'a' * 512, b'a' * 513, b'b' * 5000,
              b'b' * 5001, b'c' * (1 << 20)]
        assert_eq(c.call('SADD', 's', *ms), len(ms))
        assert_eq(c.call('SADD', 's', *ms), 0)
        assert_eq(members(c, 's'), sorted(ms))
        assert_eq(c.call('SMISMEMBER', 's', *ms), [1] * len(ms))
        assert_eq(c.call('SISMEMBER', 's', b'a' * 514), 0)
        assert_eq(c.call('SREM', 's', b'b' * 5000), 1)
        assert_eq(c.call('SISMEMBER', 's', b'b' * 5001), 1)
        assert_eq(c.call('SCARD', 's'), len(ms) - 1)
        assert_eq(c.call('SMOVE', 's', 't', b'c' * (1 << 20)), 1)
        assert_eq(c.call('SMEMBERS', 't'), [b'c' * (1 << 20)])


def test_wrongtype(s):
    with s.client() as c:
        c.call('HSET', 'h', 'f', 'v')
        for cmd in (('SADD', 'h', 'x'), ('SREM', 'h', 'x'), ('SCARD', 'h'),
                    ('SMEMBERS', 'h'), ('SISMEMBER', 'h', 'x'),
                    ('SPOP', 'h'), ('SRANDMEMBER', 'h'), ('SSCAN', 'h', '0'),
                    ('SINTERCARD', '1', 'h')):
            assert_error(c.call(*cmd), WRONGTYPE)


if __name__ == '__main__':
    main(globals())
