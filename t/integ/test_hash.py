"""Checks hash commands: HSET HMSET HSETNX HGET HMGET HGETALL HKEYS HVALS HDEL HEXISTS HLEN HSTRLEN HINCRBY HINCRBYFLOAT HRANDFIELD HSCAN, their errors, WRONGTYPE, long fields and keys of any type."""

from larder_test import (IS_REDIS, assert_eq, assert_error, assert_true,
                         assert_uniform, main, wait_until)

WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
NOTINT = 'ERR value is not an integer or out of range'
SYNTAX = 'ERR syntax error'


def as_dict(flat):
    return dict(zip(flat[0::2], flat[1::2]))


def test_hset_hget_basic(s):
    with s.client() as c:
        assert_eq(c.call('HSET', 'h', 'a', '1', 'b', '2', 'a', '3'), 2)
        assert_eq(c.call('HSET', 'h', 'a', 'x', 'c', ''), 1)
        assert_eq(c.call('HGET', 'h', 'a'), b'x')
        assert_eq(c.call('HGET', 'h', 'c'), b'')
        assert_eq(c.call('HGET', 'h', 'nope'), None)
        assert_eq(c.call('HGET', 'nokey', 'a'), None)
        assert_eq(c.call('HLEN', 'h'), 3)
        assert_eq(c.call('HLEN', 'nokey'), 0)
        assert_eq(c.call('HMSET', 'h', 'd', '4'), 'OK')
        assert_eq(c.call('HMGET', 'h', 'a', 'nope', 'd'), [b'x', None, b'4'])
        assert_eq(c.call('HMGET', 'nokey', 'a', 'b'), [None, None])
        assert_eq(c.call('TYPE', 'h'), 'hash')
        assert_error(c.call('HSET', 'h', 'a'),
                     "ERR wrong number of arguments for 'hset' command")
        assert_error(c.call('HSET', 'h', 'a', '1', 'b'),
                     "ERR wrong number of arguments for 'hset' command")
        assert_error(c.call('HMSET', 'h', 'a', '1', 'b'),
                     "ERR wrong number of arguments for 'hmset' command")


def test_hgetall_hkeys_hvals(s):
    with s.client() as c:
        assert_eq(c.call('HGETALL', 'nokey'), [])
        assert_eq(c.call('HKEYS', 'nokey'), [])
        assert_eq(c.call('HVALS', 'nokey'), [])
        fields = {b'f%d' % i: b'v%d' % i for i in range(100)}
        args = []
        for k, v in fields.items():
            args += [k, v]
        assert_eq(c.call('HSET', 'h', *args), 100)
        assert_eq(as_dict(c.call('HGETALL', 'h')), fields)
        assert_eq(sorted(c.call('HKEYS', 'h')), sorted(fields))
        assert_eq(sorted(c.call('HVALS', 'h')), sorted(fields.values()))
        c.hello(3)
        assert_eq(c.call('HGETALL', 'h'), fields)
        assert_eq(c.call('HGETALL', 'nokey'), {})


def test_hsetnx_hexists_hstrlen(s):
    with s.client() as c:
        assert_eq(c.call('HSETNX', 'h', 'f', 'v'), 1)
        assert_eq(c.call('HSETNX', 'h', 'f', 'w'), 0)
        assert_eq(c.call('HGET', 'h', 'f'), b'v')
        assert_eq(c.call('HEXISTS', 'h', 'f'), 1)
        assert_eq(c.call('HEXISTS', 'h', 'g'), 0)
        assert_eq(c.call('HEXISTS', 'nokey', 'f'), 0)
        c.call('HSET', 'h', 'long', 'x' * 1000)
        assert_eq(c.call('HSTRLEN', 'h', 'long'), 1000)
        assert_eq(c.call('HSTRLEN', 'h', 'nope'), 0)
        assert_eq(c.call('HSTRLEN', 'nokey', 'f'), 0)


def test_hdel_and_empty_hash_disappears(s):
    with s.client() as c:
        c.call('HSET', 'h', 'a', '1', 'b', '2', 'c', '3')
        assert_eq(c.call('HDEL', 'h', 'a', 'nope', 'a'), 1)
        assert_eq(c.call('HDEL', 'nokey', 'a'), 0)
        assert_eq(c.call('HLEN', 'h'), 2)
        assert_eq(c.call('HDEL', 'h', 'b', 'c'), 2)
        assert_eq(c.call('EXISTS', 'h'), 0)
        assert_eq(c.call('TYPE', 'h'), 'none')
        assert_eq(c.call('DBSIZE'), 0)


def test_hincrby(s):
    with s.client() as c:
        assert_eq(c.call('HINCRBY', 'h', 'n', '5'), 5)
        assert_eq(c.call('HINCRBY', 'h', 'n', '-7'), -2)
        assert_eq(c.call('HGET', 'h', 'n'), b'-2')
        c.call('HSET', 'h', 's', 'abc', 'max', '9223372036854775807',
               'sp', ' 1')
        assert_error(c.call('HINCRBY', 'h', 's', '1'),
                     'ERR hash value is not an integer')
        assert_error(c.call('HINCRBY', 'h', 'sp', '1'),
                     'ERR hash value is not an integer')
        assert_error(c.call('HINCRBY', 'h', 'n', 'x'), NOTINT)
        assert_error(c.call('HINCRBY', 'h', 'n', '1.5'), NOTINT)
        assert_error(c.call('HINCRBY', 'h', 'max', '1'),
                     'ERR increment or decrement would overflow')
        assert_eq(c.call('HINCRBY', 'h', 'max', '-1'), 9223372036854775806)


def test_hincrbyfloat(s):
    with s.client() as c:
        assert_eq(c.call('HINCRBYFLOAT', 'h', 'f', '1.5'), b'1.5')
        assert_eq(c.call('HINCRBYFLOAT', 'h', 'f', '0.1'), b'1.6')
        assert_eq(c.call('HINCRBYFLOAT', 'h', 'f', '-1.6'), b'0')
        assert_eq(c.call('HINCRBYFLOAT', 'h', 'e', '1e3'), b'1000')
        c.call('HSET', 'h', 's', 'abc')
        assert_error(c.call('HINCRBYFLOAT', 'h', 's', '1'),
                     'ERR hash value is not a float')
        assert_error(c.call('HINCRBYFLOAT', 'h', 'f', 'x'),
                     'ERR value is not a valid float')
        assert_error(c.call('HINCRBYFLOAT', 'h', 'f', 'inf'),
                     'ERR value is NaN or Infinity')


def test_hrandfield(s):
    with s.client() as c:
        assert_eq(c.call('HRANDFIELD', 'nokey'), None)
        assert_eq(c.call('HRANDFIELD', 'nokey', '3'), [])
        assert_eq(c.call('HRANDFIELD', 'nokey', '-3', 'WITHVALUES'), [])
        c.call('HSET', 'h', 'a', '1', 'b', '2', 'c', '3')
        assert_true(c.call('HRANDFIELD', 'h') in (b'a', b'b', b'c'))
        assert_eq(c.call('HRANDFIELD', 'h', '0'), [])
        r = c.call('HRANDFIELD', 'h', '2')
        assert_eq(len(r), 2)
        assert_eq(len(set(r)), 2)
        assert_eq(sorted(c.call('HRANDFIELD', 'h', '10')), [b'a', b'b', b'c'])
        r = c.call('HRANDFIELD', 'h', '-10')
        assert_eq(len(r), 10)
        assert_true(set(r) <= {b'a', b'b', b'c'})
        r = c.call('HRANDFIELD', 'h', '-4', 'WITHVALUES')
        assert_eq(len(r), 8)
        for f, v in zip(r[0::2], r[1::2]):
            assert_eq({b'a': b'1', b'b': b'2', b'c': b'3'}[f], v)
        assert_eq(as_dict(c.call('HRANDFIELD', 'h', '5', 'WITHVALUES')),
                  {b'a': b'1', b'b': b'2', b'c': b'3'})
        assert_error(c.call('HRANDFIELD', 'h', '1', 'WITHVALUE'), SYNTAX)
        assert_error(c.call('HRANDFIELD', 'h', 'x'), NOTINT)
        assert_error(c.call('HRANDFIELD', 'h', '-9223372036854775808',
                            'WITHVALUES'),
                     'ERR value is out of range, value must between '
                     '-9223372036854775807 and 9223372036854775807')
        c.hello(3)
        r = c.call('HRANDFIELD', 'h', '2', 'WITHVALUES')
        assert_eq(len(r), 2)
        assert_true(all(isinstance(p, list) and len(p) == 2 for p in r))


def test_hrandfield_is_uniform(s):
    # A hash past the size that keeps counts: single picks uniform,
    # positive counts distinct fields with their own values.
    fields = [b'f%d' % i for i in range(200)]
    with s.client() as c:
        c.call('HSET', 'rh', *sum(([f, b'v' + f] for f in fields), []))
        # Uniform picks are larder's promise: Redis's hash tables pick
        # only roughly fairly (dictGetFairRandomKey), so not against it.
        picks = c.call('HRANDFIELD', 'rh', '-20000')
        assert_eq(len(picks), 20000)
        if not IS_REDIS:
            assert_uniform(picks, fields, 'HRANDFIELD -20000')
        picks = []
        for _ in range(400):
            r = c.call('HRANDFIELD', 'rh', '50', 'WITHVALUES')
            assert_eq(len(r), 100)
            assert_eq(len(set(r[0::2])), 50)
            for f, v in zip(r[0::2], r[1::2]):
                assert_eq(v, b'v' + f)
            picks += r[0::2]
        if not IS_REDIS:
            assert_uniform(picks, fields, 'HRANDFIELD 50')


def scan_all(c, cmd, key, *opts):
    cursor, seen, rounds = b'0', [], 0
    while True:
        cursor, batch = c.call(cmd, key, cursor, *opts)
        seen += batch
        rounds += 1
        assert_true(rounds < 10000, 'scan terminates')
        if cursor == b'0':
            return seen


def test_hscan(s):
    with s.client() as c:
        assert_eq(c.call('HSCAN', 'nokey', '0'), [b'0', []])
        args = []
        for i in range(500):
            args += ['f%d' % i, 'v%d' % i]
        c.call('HSET', 'h', *args)
        got = as_dict(scan_all(c, 'HSCAN', 'h', 'COUNT', '7'))
        assert_eq(len(got), 500)
        assert_eq(got[b'f42'], b'v42')
        got = as_dict(scan_all(c, 'HSCAN', 'h', 'MATCH', 'f1*'))
        assert_eq(sorted(got), sorted(b'f%d' % i for i in range(500)
                                      if str(i).startswith('1')))
        assert_error(c.call('HSCAN', 'h', 'x'), 'ERR invalid cursor')
        assert_error(c.call('HSCAN', 'h', '0', 'COUNT', '0'), SYNTAX)
        assert_error(c.call('HSCAN', 'h', '0', 'COUNT'), SYNTAX)
        assert_error(c.call('HSCAN', 'h', '0', 'FOO', 'x'), SYNTAX)


def test_wrongtype(s):
    with s.client() as c:
        c.call('SET', 'str', 'x')
        for cmd in (('HSET', 'str', 'f', 'v'), ('HGET', 'str', 'f'),
                    ('HGETALL', 'str'), ('HDEL', 'str', 'f'),
                    ('HLEN', 'str'), ('HINCRBY', 'str', 'f', '1'),
                    ('HRANDFIELD', 'str'), ('HSCAN', 'str', '0'),
                    ('HMGET', 'str', 'f'), ('HEXISTS', 'str', 'f')):
            assert_error(c.call(*cmd), WRONGTYPE)
        c.call('HSET', 'h', 'f', 'v')
        assert_error(c.call('GET', 'h'), WRONGTYPE)
        assert_error(c.call('SADD', 'h', 'x'), WRONGTYPE)
        assert_eq(c.call('SET', 'h', 'now a string'), 'OK')
        assert_eq(c.call('GET', 'h'), b'now a string')


def test_long_fields_and_values(s):
    with s.client() as c:
        fields = [b'', b'x', b'y' * 511, b'y' * 512, b'z' * 600,
                  b'z' * 601, b'w' * (1 << 20)]
        for i, f in enumerate(fields):
            assert_eq(c.call('HSET', 'h', f, b'%d' % i), 1)
        assert_eq(c.call('HLEN', 'h'), len(fields))
        for i, f in enumerate(fields):
            assert_eq(c.call('HGET', 'h', f), b'%d' % i)
        got = as_dict(c.call('HGETALL', 'h'))
        assert_eq(sorted(got), sorted(fields))
        assert_eq(c.call('HDEL', 'h', b'z' * 600), 1)
        assert_eq(c.call('HGET', 'h', b'z' * 601), b'5')
        assert_eq(c.call('HGET', 'h', b'z' * 600), None)
        big = b'v' * (1 << 20)
        assert_eq(c.call('HSET', 'h', 'big', big), 1)
        assert_eq(c.call('HGET', 'h', 'big'), big)


def test_keyspace_commands_on_hashes(s):
    with s.client() as c:
        c.call('HSET', 'h', 'a', '1', 'b', '2')
        assert_eq(c.call('RENAME', 'h', 'h2'), 'OK')
        assert_eq(c.call('HGETALL', 'h2') in ([b'a', b'1', b'b', b'2'],
                                             [b'b', b'2', b'a', b'1']), True)
        assert_eq(c.call('COPY', 'h2', 'h3'), 1)
        c.call('HSET', 'h3', 'c', '3')
        assert_eq(c.call('HLEN', 'h2'), 2)
        assert_eq(c.call('HLEN', 'h3'), 3)
        assert_eq(c.call('EXPIRE', 'h3', '100'), 1)
        c.call('HSET', 'h3', 'd', '4')
        assert_true(0 < c.call('TTL', 'h3') <= 100, 'TTL kept by HSET')
        assert_eq(c.call('PEXPIRE', 'h3', '1'), 1)
        wait_until(lambda: c.call('EXISTS', 'h3') == 0, 5.0, 'h3 to expire')
        assert_eq(sorted(c.call('KEYS', '*')), [b'h2'])
        assert_eq(c.call('SCAN', '0', 'TYPE', 'hash')[1], [b'h2'])
        assert_eq(c.call('DEL', 'h2'), 1)
        assert_eq(c.call('DBSIZE'), 0)


if __name__ == '__main__':
    main(globals())
