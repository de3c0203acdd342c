"""Checks list commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LINDEX LSET LRANGE LTRIM LREM LINSERT LPOS LMOVE RPOPLPUSH LMPOP, negative and out-of-range indexes, errors, WRONGTYPE and big elements."""

from larder_test import assert_eq, assert_error, main

WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
NOTINT = 'ERR value is not an integer or out of range'
SYNTAX = 'ERR syntax error'
POSITIVE = 'ERR value is out of range, must be positive'


def test_push_pop_len(s):
    with s.client() as c:
        assert_eq(c.call('RPUSH', 'l', 'a', 'b', 'c'), 3)
        assert_eq(c.call('LPUSH', 'l', 'z', 'y'), 5)
        assert_eq(c.call('LRANGE', 'l', '0', '-1'),
                  [b'y', b'z', b'a', b'b', b'c'])
        assert_eq(c.call('LLEN', 'l'), 5)
        assert_eq(c.call('LLEN', 'nokey'), 0)
        assert_eq(c.call('LPOP', 'l'), b'y')
        assert_eq(c.call('RPOP', 'l'), b'c')
        assert_eq(c.call('LPOP', 'l', '2'), [b'z', b'a'])
        assert_eq(c.call('RPOP', 'l', '5'), [b'b'])
        assert_eq(c.call('EXISTS', 'l'), 0)
        assert_eq(c.call('LPOP', 'l'), None)
        assert_eq(c.call('LPOP', 'l', '2'), None)
        c.call('RPUSH', 'l', 'a')
        assert_eq(c.call('LPOP', 'l', '0'), [])
        assert_error(c.call('LPOP', 'l', '-1'), POSITIVE)
        assert_error(c.call('LPOP', 'l', 'x'), POSITIVE)
        assert_error(c.call('LPOP', 'l', '1', '2'),
                     "ERR wrong number of arguments for 'lpop' command")
        assert_eq(c.call('LPUSHX', 'nokey', 'a'), 0)
        assert_eq(c.call('RPUSHX', 'nokey', 'a'), 0)
        assert_eq(c.call('EXISTS', 'nokey'), 0)
        assert_eq(c.call('LPUSHX', 'l', 'b', 'c'), 3)
        assert_eq(c.call('RPUSHX', 'l', 'd'), 4)
        assert_eq(c.call('LRANGE', 'l', '0', '-1'), [b'c', b'b', b'a', b'd'])
        assert_eq(c.call('TYPE', 'l'), 'list')


def test_lindex_lset(s):
    with s.client() as c:
        c.call('RPUSH', 'l', 'a', 'b', 'c')
        assert_eq(c.call('LINDEX', 'l', '0'), b'a')
        assert_eq(c.call('LINDEX', 'l', '-1'), b'c')
        assert_eq(c.call('LINDEX', 'l', '-3'), b'a')
        assert_eq(c.call('LINDEX', 'l', '3'), None)
        assert_eq(c.call('LINDEX', 'l', '-4'), None)
        assert_eq(c.call('LINDEX', 'nokey', '0'), None)
        assert_error(c.call('LINDEX', 'l', 'x'), NOTINT)
        assert_eq(c.call('LSET', 'l', '1', 'B'), 'OK')
        assert_eq(c.call('LSET', 'l', '-1', 'C'), 'OK')
        assert_eq(c.call('LRANGE', 'l', '0', '-1'), [b'a', b'B', b'C'])
        assert_error(c.call('LSET', 'l', '3', 'x'), 'ERR index out of range')
        assert_error(c.call('LSET', 'l', '-4', 'x'), 'ERR index out of range')
        assert_error(c.call('LSET', 'nokey', '0', 'x'), 'ERR no such key')


def test_lrange_edges(s):
    with s.client() as c:
        c.call('RPUSH', 'l', *[str(i) for i in range(10)])
        assert_eq(c.call('LRANGE', 'l', '2', '4'), [b'2', b'3', b'4'])
        assert_eq(c.call('LRANGE', 'l', '-3', '-1'), [b'7', b'8', b'9'])
        assert_eq(c.call('LRANGE', 'l', '-100', '1'), [b'0', b'1'])
        assert_eq(c.call('LRANGE', 'l', '8', '100'), [b'8', b'9'])
        assert_eq(c.call('LRANGE', 'l', '5', '2'), [])
        assert_eq(c.call('LRANGE', 'l', '10', '20'), [])
        assert_eq(c.call('LRANGE', 'l', '0', '-11'), [])
        assert_eq(c.call('LRANGE', 'nokey', '0', '-1'), [])
        assert_eq(len(c.call('LRANGE', 'l', '-9223372036854775808',
                             '9223372036854775807')), 10)
        assert_error(c.call('LRANGE', 'l', 'a', '1'), NOTINT)


def test_ltrim(s):
    with s.client() as c:
        c.call('RPUSH', 'l', *[str(i) for i in range(10)])
        assert_eq(c.call('LTRIM', 'l', '1', '-2'), 'OK')
        assert_eq(c.call('LRANGE', 'l', '0', '-1'),
                  [b'%d' % i for i in range(1, 9)])
        assert_eq(c.call('LTRIM', 'l', '-3', '100'), 'OK')
        assert_eq(c.call('LRANGE', 'l', '0', '-1'), [b'6', b'7', b'8'])
        assert_eq(c.call('LTRIM', 'nokey', '0', '1'), 'OK')
        assert_eq(c.call('LTRIM', 'l', '2', '1'), 'OK')
        assert_eq(c.call('EXISTS', 'l'), 0)


def test_lrem(s):
    with s.client() as c:
        c.call('RPUSH', 'l', 'a', 'b', 'a', 'c', 'a', 'b', 'a')
        assert_eq(c.call('LREM', 'l', '2', 'a'), 2)
        assert_eq(c.call('LRANGE', 'l', '0', '-1'),
                  [b'b', b'c', b'a', b'b', b'a'])
        assert_eq(c.call('LREM', 'l', '-1', 'b'), 1)
        assert_eq(c.call('LRANGE', 'l', '0', '-1'), [b'b', b'c', b'a', b'a'])
        assert_eq(c.call('LREM', 'l', '0', 'a'), 2)
        assert_eq(c.call('LREM', 'l', '0', 'zz'), 0)
        assert_eq(c.call('LREM', 'nokey', '0', 'a'), 0)
        assert_eq(c.call('LRANGE', 'l', '0', '-1'), [b'b', b'c'])
        assert_eq(c.call('LINDEX', 'l', '1'), b'c')
        assert_eq(c.call('LREM', 'l', '0', 'b'), 1)
        assert_eq(c.call('LREM', 'l', '-5', 'c'), 1)
        assert_eq(c.call('EXISTS', 'l'), 0)
        assert_error(c.call('LREM', 'l', 'x', 'a'), NOTINT)


def test_linsert(s):
    with s.client() as c:
        c.call('RPUSH', 'l', 'a', 'b', 'c', 'd', 'e')
        assert_eq(c.call('LINSERT', 'l', 'BEFORE', 'b', 'X'), 6)
        assert_eq(c.call('LINSERT', 'l', 'after', 'd', 'Y'), 7)
        assert_eq(c.call('LINSERT', 'l', 'AFTER', 'e', 'Z'), 8)
        assert_eq(c.call('LINSERT', 'l', 'BEFORE', 'a', 'W'), 9)
        assert_eq(c.call('LRANGE', 'l', '0', '-1'),
                  [b'W', b'a', b'X', b'b', b'c', b'd', b'Y', b'e', b'Z'])
        assert_eq(c.call('LINDEX', 'l', '2'), b'X')
        assert_eq(c.call('LINSERT', 'l', 'BEFORE', 'nope', 'x'), -1)
        assert_eq(c.call('LINSERT', 'nokey', 'BEFORE', 'a', 'x'), 0)
        assert_error(c.call('LINSERT', 'l', 'MIDDLE', 'a', 'x'), SYNTAX)


def test_lpos(s):
    with s.client() as c:
        c.call('RPUSH', 'l', 'a', 'b', 'c', 'a', 'b', 'c', 'a')
        assert_eq(c.call('LPOS', 'l', 'a'), 0)
        assert_eq(c.call('LPOS', 'l', 'c'), 2)
        assert_eq(c.call('LPOS', 'l', 'zz'), None)
        assert_eq(c.call('LPOS', 'l', 'a', 'RANK', '2'), 3)
        assert_eq(c.call('LPOS', 'l', 'a', 'RANK', '-1'), 6)
        assert_eq(c.call('LPOS', 'l', 'a', 'RANK', '-2'), 3)
        assert_eq(c.call('LPOS', 'l', 'a', 'RANK', '4'), None)
        assert_eq(c.call('LPOS', 'l', 'a', 'COUNT', '0'), [0, 3, 6])
        assert_eq(c.call('LPOS', 'l', 'a', 'COUNT', '2'), [0, 3])
        assert_eq(c.call('LPOS', 'l', 'a', 'COUNT', '0', 'RANK', '-1'),
                  [6, 3, 0])
        assert_eq(c.call('LPOS', 'l', 'a', 'COUNT', '0', 'MAXLEN', '4'),
                  [0, 3])
        assert_eq(c.call('LPOS', 'l', 'c', 'MAXLEN', '2'), None)
        assert_eq(c.call('LPOS', 'l', 'zz', 'COUNT', '0'), [])
        assert_eq(c.call('LPOS', 'nokey', 'a'), None)
        assert_eq(c.call('LPOS', 'nokey', 'a', 'COUNT', '1'), [])
        assert_error(c.call('LPOS', 'l', 'a', 'RANK', '0'),
                     "ERR RANK can't be zero: use 1 to start from the first "
                     "match, 2 from the second ... or use negative to start "
                     "from the end of the list")
        assert_error(c.call('LPOS', 'l', 'a', 'COUNT', '-1'),
                     "ERR COUNT can't be negative")
        assert_error(c.call('LPOS', 'l', 'a', 'MAXLEN', '-1'),
                     "ERR MAXLEN can't be negative")
        assert_error(c.call('LPOS', 'l', 'a', 'FOO', '1'), SYNTAX)
        assert_error(c.call('LPOS', 'l', 'a', 'RANK'), SYNTAX)


def test_lmove_rpoplpush(s):
    with s.client() as c:
        c.call('RPUSH', 'a', '1', '2', '3')
        assert_eq(c.call('LMOVE', 'a', 'b', 'LEFT', 'RIGHT'), b'1')
        assert_eq(c.call('LMOVE', 'a', 'b', 'RIGHT', 'LEFT'), b'3')
        assert_eq(c.call('LRANGE', 'b', '0', '-1'), [b'3', b'1'])
        assert_eq(c.call('RPOPLPUSH', 'b', 'a'), b'1')
        assert_eq(c.call('LRANGE', 'a', '0', '-1'), [b'1', b'2'])
        # the same list rotates
        assert_eq(c.call('LMOVE', 'a', 'a', 'LEFT', 'RIGHT'), b'1')
        assert_eq(c.call('LRANGE', 'a', '0', '-1'), [b'2', b'1'])
        assert_eq(c.call('RPOPLPUSH', 'a', 'a'), b'1')
        assert_eq(c.call('LRANGE', 'a', '0', '-1'), [b'1', b'2'])
        assert_eq(c.call('LMOVE', 'nokey', 'a', 'LEFT', 'LEFT'), None)
        assert_eq(c.call('RPOPLPUSH', 'b', 'c'), b'3')
        assert_eq(c.call('EXISTS', 'b'), 0)
        assert_error(c.call('LMOVE', 'a', 'b', 'UP', 'LEFT'), SYNTAX)
        c.call('SET', 'str', 'x')
        assert_error(c.call('LMOVE', 'a', 'str', 'LEFT', 'LEFT'), WRONGTYPE)
        assert_error(c.call('LMOVE', 'str', 'a', 'LEFT', 'LEFT'), WRONGTYPE)
        assert_eq(c.call('LMOVE', 'nokey', 'str', 'LEFT', 'LEFT'), None)
        assert_eq(c.call('LRANGE', 'a', '0', '-1'), [b'1', b'2'])


def test_lmpop(s):
    with s.client() as c:
        c.call('RPUSH', 'l2', 'a', 'b', 'c')
        assert_eq(c.call('LMPOP', '2', 'l1', 'l2', 'LEFT'), [b'l2', [b'a']])
        assert_eq(c.call('LMPOP', '2', 'l1', 'l2', 'RIGHT', 'COUNT', '5'),
                  [b'l2', [b'c', b'b']])
        assert_eq(c.call('LMPOP', '2', 'l1', 'l2', 'LEFT'), None)
        assert_eq(c.call('EXISTS', 'l2'), 0)
        assert_error(c.call('LMPOP', '0', 'l1', 'LEFT'),
                     'ERR numkeys should be greater than 0')
        assert_error(c.call('LMPOP', '1', 'l1', 'UP'), SYNTAX)
        assert_error(c.call('LMPOP', '2', 'l1', 'LEFT'), SYNTAX)
        assert_error(c.call('LMPOP', '1', 'l1', 'LEFT', 'COUNT', '0'),
                     'ERR count should be greater than 0')
        assert_error(c.call('LMPOP', '1', 'l1', 'LEFT', 'COUNT', '1',
                            'COUNT', '1'), SYNTAX)


def test_big_and_long_elements(s):
    with s.client() as c:
        elems = [b'', b'x' * 511, b'y' * 512, b'z' * (1 << 20)]
        assert_eq(c.call('RPUSH', 'l', *elems), 4)
        assert_eq(c.call('LRANGE', 'l', '0', '-1'), elems)
        assert_eq(c.call('LINDEX', 'l', '3'), elems[3])
        assert_eq(c.call('LPOS', 'l', elems[2]), 2)
        assert_eq(c.call('LREM', 'l', '0', elems[1]), 1)
        assert_eq(c.call('LPOP', 'l', '3'), [elems[0], elems[2], elems[3]])


def test_many_elements_and_indexes(s):
    with s.client() as c:
        n = 5000
        for i in range(0, n, 500):
            c.call('RPUSH', 'l', *[str(j) for j in range(i, i + 500)])
        for i in range(0, n, 500):
            c.call('LPUSH', 'l', *[str(-j - 1) for j in range(i, i + 500)])
        assert_eq(c.call('LLEN', 'l'), 2 * n)
        assert_eq(c.call('LINDEX', 'l', '0'), b'-%d' % n)
        assert_eq(c.call('LINDEX', 'l', str(n)), b'0')
        assert_eq(c.call('LINDEX', 'l', '-1'), b'%d' % (n - 1))
        assert_eq(c.call('LRANGE', 'l', str(n - 2), str(n + 1)),
                  [b'-2', b'-1', b'0', b'1'])
        assert_eq(c.call('LINSERT', 'l', 'AFTER', '2500', 'mid'), 2 * n + 1)
        assert_eq(c.call('LINDEX', 'l', str(n + 2501)), b'mid')
        assert_eq(c.call('LINDEX', 'l', str(n + 2502)), b'2501')


def test_wrongtype(s):
    with s.client() as c:
        c.call('SADD', 's', 'x')
        for cmd in (('LPUSH', 's', 'x'), ('RPUSH', 's', 'x'),
                    ('LPUSHX', 's', 'x'), ('LPOP', 's'), ('RPOP', 's', '1'),
                    ('LLEN', 's'), ('LINDEX', 's', '0'), ('LSET', 's', '0', 'x'),
                    ('LRANGE', 's', '0', '-1'), ('LTRIM', 's', '0', '1'),
                    ('LREM', 's', '0', 'x'), ('LINSERT', 's', 'BEFORE', 'a', 'b'),
                    ('LPOS', 's', 'x'), ('LMPOP', '1', 's', 'LEFT')):
            assert_error(c.call(*cmd), WRONGTYPE)


if __name__ == '__main__':
    main(globals())
