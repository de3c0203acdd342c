"""Checks string commands: GET SET (all options and their errors) SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET MSETNX INCR* DECR* INCRBYFLOAT APPEND STRLEN GETRANGE SETRANGE."""

import time

from larder_test import (assert_eq, assert_error, assert_pttl, assert_true,
                         assert_ttl, main, wait_until)

WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
NOTINT = 'ERR value is not an integer or out of range'
SYNTAX = 'ERR syntax error'
BADEXPIRE = "ERR invalid expire time in '%s' command"


def now_ms():
    return int(time.time() * 1000)


def test_get_set_basic(s):
    with s.client() as c:
        assert_eq(c.call('GET', 'k'), None)
        assert_eq(c.call('SET', 'k', 'v'), 'OK')
        assert_eq(c.call('GET', 'k'), b'v')
        assert_eq(c.call('SET', 'k', 'v2'), 'OK')
        assert_eq(c.call('GET', 'k'), b'v2')
        assert_eq(c.call('SET', 'empty', ''), 'OK')
        assert_eq(c.call('GET', 'empty'), b'')
        assert_eq(c.call('EXISTS', 'empty'), 1)
        big = bytes(range(256)) * 4096
        assert_eq(c.call('SET', 'big', big), 'OK')
        assert_eq(c.call('GET', 'big'), big)
        assert_error(c.call('GET', 'a', 'b'),
                     "ERR wrong number of arguments for 'get' command")


def test_set_ex_px(s):
    with s.client() as c:
        assert_eq(c.call('SET', 'k', 'v', 'EX', '100'), 'OK')
        assert_ttl(c, 'k', 100)
        assert_eq(c.call('SET', 'k', 'v', 'px', '100000'), 'OK')
        assert_true(99000 <= c.call('PTTL', 'k') <= 100000, 'PTTL after PX')
        # A plain SET clears the TTL.
        assert_eq(c.call('SET', 'k', 'v'), 'OK')
        assert_eq(c.call('TTL', 'k'), -1)


def test_set_exat_pxat(s):
    with s.client() as c:
        at = int(time.time()) + 1000
        assert_eq(c.call('SET', 'k', 'v', 'EXAT', at), 'OK')
        assert_eq(c.call('EXPIRETIME', 'k'), at)
        atms = now_ms() + 500000
        assert_eq(c.call('SET', 'k', 'v', 'PXAT', atms), 'OK')
        assert_eq(c.call('PEXPIRETIME', 'k'), atms)
        # A time in the past is accepted and the key is gone.
        assert_eq(c.call('SET', 'k', 'v', 'PXAT', '1'), 'OK')
        assert_eq(c.call('GET', 'k'), None)
        assert_eq(c.call('SET', 'k', 'v', 'EXAT', '1'), 'OK')
        assert_eq(c.call('EXISTS', 'k'), 0)


def test_set_nx_xx(s):
    with s.client() as c:
        assert_eq(c.call('SET', 'k', 'v', 'XX'), None)
        assert_eq(c.call('EXISTS', 'k'), 0)
        assert_eq(c.call('SET', 'k', 'v1', 'NX'), 'OK')
        assert_eq(c.call('SET', 'k', 'v2', 'NX'), None)
        assert_eq(c.call('GET', 'k'), b'v1')
        assert_eq(c.call('SET', 'k', 'v3', 'XX'), 'OK')
        assert_eq(c.call('GET', 'k'), b'v3')
        assert_eq(c.call('SET', 'k', 'v4', 'nx', 'ex', '10'), None)
        assert_eq(c.call('TTL', 'k'), -1)
        assert_eq(c.call('SET', 'k', 'v4', 'XX', 'EX', '10'), 'OK')
        assert_ttl(c, 'k', 10)


def test_set_keepttl(s):
    with s.client() as c:
        c.call('SET', 'k', 'v', 'EX', '100')
        assert_eq(c.call('SET', 'k', 'v2', 'KEEPTTL'), 'OK')
        assert_ttl(c, 'k', 100)
        assert_eq(c.call('GET', 'k'), b'v2')
        assert_eq(c.call('SET', 'new', 'v', 'KEEPTTL'), 'OK')
        assert_eq(c.call('TTL', 'new'), -1)


def test_set_get_option(s):
    with s.client() as c:
        assert_eq(c.call('SET', 'k', 'v1', 'GET'), None)
        assert_eq(c.call('SET', 'k', 'v2', 'GET'), b'v1')
        assert_eq(c.call('GET', 'k'), b'v2')
        # NX GET: old value returned, no write.
        assert_eq(c.call('SET', 'k', 'v3', 'NX', 'GET'), b'v2')
        assert_eq(c.call('GET', 'k'), b'v2')
        assert_eq(c.call('SET', 'n', 'v', 'XX', 'GET'), None)
        assert_eq(c.call('EXISTS', 'n'), 0)
        assert_eq(c.call('SET', 'k', 'v4', 'GET', 'EX', '50'), b'v2')
        assert_ttl(c, 'k', 50)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('SET', 'list', 'v', 'GET'), WRONGTYPE)
        assert_eq(c.call('TYPE', 'list'), 'list')


def test_set_invalid_expire(s):
    with s.client() as c:
        for opt, val in (('EX', '0'), ('EX', '-1'), ('PX', '0'),
                         ('PX', '-100'), ('EXAT', '0'), ('PXAT', '-1'),
                         ('EX', '9223372036854775807'),
                         ('PX', '9223372036854775807')):
            assert_error(c.call('SET', 'k', 'v', opt, val), BADEXPIRE % 'set')
        for opt in ('EX', 'PX', 'EXAT', 'PXAT'):
            assert_error(c.call('SET', 'k', 'v', opt, 'abc'), NOTINT)
            assert_error(c.call('SET', 'k', 'v', opt, '1.5'), NOTINT)
        assert_eq(c.call('EXISTS', 'k'), 0)


def test_set_syntax_errors(s):
    with s.client() as c:
        for opts in (('NX', 'XX'), ('XX', 'NX'), ('EX', '10', 'PX', '10'),
                     ('PX', '10', 'EX', '10'), ('EX', '10', 'EXAT', '10'),
                     ('PXAT', '10', 'EXAT', '10'), ('KEEPTTL', 'EX', '10'),
                     ('PX', '10', 'KEEPTTL'), ('EX',), ('PX',), ('EXAT',),
                     ('FOO',), ('GET', 'FOO'), ('EX', '10', 'BAR'),
                     ('NX', 'EX')):
            assert_error(c.call('SET', 'k', 'v', *opts), SYNTAX)
        assert_eq(c.call('EXISTS', 'k'), 0)
        assert_error(c.call('SET', 'k'),
                     "ERR wrong number of arguments for 'set' command")


def test_setnx(s):
    with s.client() as c:
        assert_eq(c.call('SETNX', 'k', 'a'), 1)
        assert_eq(c.call('SETNX', 'k', 'b'), 0)
        assert_eq(c.call('GET', 'k'), b'a')


def test_setex_psetex(s):
    with s.client() as c:
        assert_eq(c.call('SETEX', 'k', '100', 'v'), 'OK')
        assert_ttl(c, 'k', 100)
        assert_eq(c.call('GET', 'k'), b'v')
        assert_eq(c.call('PSETEX', 'p', '100000', 'v'), 'OK')
        assert_true(99000 <= c.call('PTTL', 'p') <= 100000, 'PTTL')
        assert_error(c.call('SETEX', 'k', '0', 'v'), BADEXPIRE % 'setex')
        assert_error(c.call('SETEX', 'k', '-10', 'v'), BADEXPIRE % 'setex')
        assert_error(c.call('PSETEX', 'k', '-5', 'v'), BADEXPIRE % 'psetex')
        assert_error(c.call('SETEX', 'k', 'abc', 'v'), NOTINT)
        assert_eq(c.call('GET', 'k'), b'v')
        assert_error(c.call('SETEX', 'k', '10'),
                     "ERR wrong number of arguments for 'setex' command")


def test_getset(s):
    with s.client() as c:
        assert_eq(c.call('GETSET', 'k', '1'), None)
        c.call('EXPIRE', 'k', '100')
        assert_eq(c.call('GETSET', 'k', '2'), b'1')
        assert_eq(c.call('GET', 'k'), b'2')
        assert_eq(c.call('TTL', 'k'), -1)        # GETSET clears the TTL
        assert_eq(c.call('SADD', 'set', 'x'), 1)
        assert_error(c.call('GETSET', 'set', 'v'), WRONGTYPE)


def test_getdel(s):
    with s.client() as c:
        c.call('SET', 'k', 'v')
        assert_eq(c.call('GETDEL', 'k'), b'v')
        assert_eq(c.call('GETDEL', 'k'), None)
        assert_eq(c.call('EXISTS', 'k'), 0)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('GETDEL', 'list'), WRONGTYPE)
        assert_eq(c.call('EXISTS', 'list'), 1)


def test_getex(s):
    with s.client() as c:
        assert_eq(c.call('GETEX', 'nokey'), None)
        assert_eq(c.call('GETEX', 'nokey', 'EX', '10'), None)
        assert_eq(c.call('EXISTS', 'nokey'), 0)
        c.call('SET', 'k', 'v')
        assert_eq(c.call('GETEX', 'k'), b'v')
        assert_eq(c.call('TTL', 'k'), -1)
        assert_eq(c.call('GETEX', 'k', 'EX', '100'), b'v')
        assert_ttl(c, 'k', 100)
        assert_eq(c.call('GETEX', 'k', 'PX', '200000'), b'v')
        assert_true(199000 <= c.call('PTTL', 'k') <= 200000, 'PTTL')
        at = int(time.time()) + 1000
        assert_eq(c.call('GETEX', 'k', 'EXAT', at), b'v')
        assert_eq(c.call('EXPIRETIME', 'k'), at)
        atms = now_ms() + 300000
        assert_eq(c.call('GETEX', 'k', 'PXAT', atms), b'v')
        assert_eq(c.call('PEXPIRETIME', 'k'), atms)
        assert_eq(c.call('GETEX', 'k', 'PERSIST'), b'v')
        assert_eq(c.call('TTL', 'k'), -1)
        assert_error(c.call('GETEX', 'k', 'EX', '0'), BADEXPIRE % 'getex')
        assert_error(c.call('GETEX', 'k', 'PX', '-1'), BADEXPIRE % 'getex')
        assert_error(c.call('GETEX', 'k', 'EX', 'abc'), NOTINT)
        assert_error(c.call('GETEX', 'k', 'PERSIST', 'EX', '1'), SYNTAX)
        assert_error(c.call('GETEX', 'k', 'EX', '1', 'PX', '1'), SYNTAX)
        assert_error(c.call('GETEX', 'k', 'EX'), SYNTAX)
        assert_error(c.call('GETEX', 'k', 'FOO'), SYNTAX)
        assert_eq(c.call('TTL', 'k'), -1)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('GETEX', 'list'), WRONGTYPE)


def test_getex_expire_in_past_deletes(s):
    with s.client() as c:
        c.call('SET', 'k', 'v')
        assert_eq(c.call('GETEX', 'k', 'PXAT', '1'), b'v')
        assert_eq(c.call('EXISTS', 'k'), 0)


def test_mget_mset(s):
    with s.client() as c:
        assert_eq(c.call('MSET', 'a', '1', 'b', '2', 'c', '3'), 'OK')
        assert_eq(c.call('MGET', 'a', 'nokey', 'c', 'b', 'a'),
                  [b'1', None, b'3', b'2', b'1'])
        assert_eq(c.call('MSET', 'a', 'x', 'a', 'y'), 'OK')
        assert_eq(c.call('GET', 'a'), b'y')     # the last one wins
        c.call('SET', 'e', 'v', 'EX', '100')
        c.call('MSET', 'e', 'w')
        assert_eq(c.call('TTL', 'e'), -1)
        assert_error(c.call('MSET', 'a', '1', 'b'),
                     "ERR wrong number of arguments for 'mset' command")
        assert_error(c.call('MGET'),
                     "ERR wrong number of arguments for 'mget' command")
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_eq(c.call('MGET', 'list', 'b'), [None, b'2'])


def test_msetnx(s):
    with s.client() as c:
        assert_eq(c.call('MSETNX', 'a', '1', 'b', '2'), 1)
        assert_eq(c.call('MSETNX', 'b', 'x', 'c', '3'), 0)
        assert_eq(c.call('MGET', 'a', 'b', 'c'), [b'1', b'2', None])
        assert_eq(c.call('MSETNX', 'd', '1', 'd', '2'), 1)
        assert_eq(c.call('GET', 'd'), b'2')
        assert_error(c.call('MSETNX', 'a', '1', 'b'),
                     "ERR wrong number of arguments for 'msetnx' command")


def test_incr_decr(s):
    with s.client() as c:
        assert_eq(c.call('INCR', 'n'), 1)
        assert_eq(c.call('INCR', 'n'), 2)
        assert_eq(c.call('DECR', 'n'), 1)
        assert_eq(c.call('INCRBY', 'n', '10'), 11)
        assert_eq(c.call('INCRBY', 'n', '-20'), -9)
        assert_eq(c.call('DECRBY', 'n', '5'), -14)
        assert_eq(c.call('DECRBY', 'n', '-4'), -10)
        assert_eq(c.call('GET', 'n'), b'-10')
        assert_eq(c.call('DECR', 'new'), -1)
        c.call('SET', 'n', '41', 'EX', '100')
        assert_eq(c.call('INCR', 'n'), 42)
        assert_ttl(c, 'n', 100)       # INCR keeps the TTL
        c.call('SET', 'n', '-0')
        assert_error(c.call('INCR', 'n'), NOTINT)


def test_incr_overflow(s):
    with s.client() as c:
        c.call('SET', 'n', '9223372036854775807')
        assert_error(c.call('INCR', 'n'),
                     'ERR increment or decrement would overflow')
        assert_error(c.call('INCRBY', 'n', '1'),
                     'ERR increment or decrement would overflow')
        assert_error(c.call('DECRBY', 'n', '-1'),
                     'ERR increment or decrement would overflow')
        assert_eq(c.call('GET', 'n'), b'9223372036854775807')
        c.call('SET', 'm', '-9223372036854775808')
        assert_error(c.call('DECR', 'm'),
                     'ERR increment or decrement would overflow')
        assert_error(c.call('INCRBY', 'm', '-1'),
                     'ERR increment or decrement would overflow')
        assert_eq(c.call('INCRBY', 'm', '1'), -9223372036854775807)
        assert_error(c.call('DECRBY', 'x', '-9223372036854775808'),
                     'ERR decrement would overflow')
        assert_error(c.call('INCRBY', 'x', '9223372036854775808'), NOTINT)


def test_incr_not_integer(s):
    with s.client() as c:
        for v in ('abc', ' 1', '1 ', '01', '+1', '', '1.0', '1e3',
                  '9223372036854775808', '0x10'):
            c.call('SET', 'n', v)
            assert_error(c.call('INCR', 'n'), NOTINT)
        assert_error(c.call('INCRBY', 'n2', 'abc'), NOTINT)
        assert_error(c.call('INCRBY', 'n2', '1.5'), NOTINT)
        assert_error(c.call('DECRBY', 'n2', ''), NOTINT)
        assert_eq(c.call('EXISTS', 'n2'), 0)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('INCR', 'list'), WRONGTYPE)
        assert_error(c.call('DECRBY', 'list', '1'), WRONGTYPE)


def test_incrbyfloat(s):
    with s.client() as c:
        assert_eq(c.call('INCRBYFLOAT', 'f', '10.5'), b'10.5')
        assert_eq(c.call('INCRBYFLOAT', 'f', '0.1'), b'10.6')
        assert_eq(c.call('INCRBYFLOAT', 'f', '-10.6'), b'0')
        c.call('SET', 'f', '5.0e3')
        assert_eq(c.call('INCRBYFLOAT', 'f', '0'), b'5000')
        assert_eq(c.call('GET', 'f'), b'5000')
        assert_eq(c.call('INCRBYFLOAT', 'g', '3.0'), b'3')
        assert_eq(c.call('INCRBYFLOAT', 'g', '-1.25'), b'1.75')
        assert_eq(c.call('INCRBYFLOAT', 'g', '1e-5'), b'1.75001')
        c.call('SET', 'h', '1')
        assert_eq(c.call('INCRBYFLOAT', 'h', '1.1e1'), b'12')
        assert_eq(c.call('INCRBYFLOAT', 'h', '10.50'), b'22.5')
        c.call('SET', 'i', '17179869184')
        assert_eq(c.call('INCRBYFLOAT', 'i', '1.5'), b'17179869185.5')
        c.call('SET', 'e', '1', 'EX', '100')
        c.call('INCRBYFLOAT', 'e', '1')
        assert_ttl(c, 'e', 100)


def test_incrbyfloat_errors(s):
    with s.client() as c:
        c.call('SET', 'f', '1')
        for bad in ('abc', ' 1', '1 ', '', 'nan', '1.5x'):
            assert_error(c.call('INCRBYFLOAT', 'f', bad),
                         'ERR value is not a valid float')
        for bad in ('inf', '-inf', '+inf'):
            assert_error(c.call('INCRBYFLOAT', 'f', bad),
                         'ERR increment would produce NaN or Infinity')
        c.call('SET', 'g', 'abc')
        assert_error(c.call('INCRBYFLOAT', 'g', '1'),
                     'ERR value is not a valid float')
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('INCRBYFLOAT', 'list', '1'), WRONGTYPE)


def test_append(s):
    with s.client() as c:
        assert_eq(c.call('APPEND', 'k', 'hello'), 5)
        assert_eq(c.call('APPEND', 'k', ' world'), 11)
        assert_eq(c.call('GET', 'k'), b'hello world')
        assert_eq(c.call('APPEND', 'k', ''), 11)
        assert_eq(c.call('APPEND', 'e', ''), 0)
        assert_eq(c.call('EXISTS', 'e'), 1)
        c.call('SET', 'n', '10')
        assert_eq(c.call('APPEND', 'n', '5'), 3)
        assert_eq(c.call('INCR', 'n'), 106)
        c.call('SET', 't', 'a', 'EX', '100')
        c.call('APPEND', 't', 'b')
        assert_ttl(c, 't', 100)
        chunk = bytes(range(256)) * 64
        for _ in range(20):
            c.call('APPEND', 'bin', chunk)
        assert_eq(c.call('GET', 'bin'), chunk * 20)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('APPEND', 'list', 'x'), WRONGTYPE)


def test_strlen(s):
    with s.client() as c:
        assert_eq(c.call('STRLEN', 'nokey'), 0)
        c.call('SET', 'k', 'hello')
        assert_eq(c.call('STRLEN', 'k'), 5)
        c.call('SET', 'n', '12345')
        c.call('INCR', 'n')
        assert_eq(c.call('STRLEN', 'n'), 5)
        c.call('SET', 'z', b'\x00' * 1000)
        assert_eq(c.call('STRLEN', 'z'), 1000)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('STRLEN', 'list'), WRONGTYPE)


def test_getrange(s):
    with s.client() as c:
        c.call('SET', 'k', 'Hello World')
        assert_eq(c.call('GETRANGE', 'k', '0', '4'), b'Hello')
        assert_eq(c.call('GETRANGE', 'k', '0', '-1'), b'Hello World')
        assert_eq(c.call('GETRANGE', 'k', '-5', '-1'), b'World')
        assert_eq(c.call('GETRANGE', 'k', '-1', '-1'), b'd')
        assert_eq(c.call('GETRANGE', 'k', '0', '0'), b'H')
        assert_eq(c.call('GETRANGE', 'k', '-100', '100'), b'Hello World')
        assert_eq(c.call('GETRANGE', 'k', '5', '1'), b'')
        assert_eq(c.call('GETRANGE', 'k', '-1', '0'), b'')
        assert_eq(c.call('GETRANGE', 'k', '10', '20'), b'd')
        assert_eq(c.call('GETRANGE', 'k', '11', '20'), b'')
        assert_eq(c.call('GETRANGE', 'k', '6', '1000'), b'World')
        assert_eq(c.call('GETRANGE', 'nokey', '0', '-1'), b'')
        assert_error(c.call('GETRANGE', 'k', 'abc', '1'), NOTINT)
        assert_error(c.call('GETRANGE', 'k', '0', '1.5'), NOTINT)
        c.call('SET', 'n', '1234')
        c.call('INCR', 'n')
        assert_eq(c.call('GETRANGE', 'n', '1', '2'), b'23')
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('GETRANGE', 'list', '0', '1'), WRONGTYPE)
        assert_error(c.call('SUBSTR', 'k', '0'),
                     "ERR wrong number of arguments for 'substr' command")


def test_setrange(s):
    with s.client() as c:
        c.call('SET', 'k', 'Hello World')
        assert_eq(c.call('SETRANGE', 'k', '6', 'Redis'), 11)
        assert_eq(c.call('GET', 'k'), b'Hello Redis')
        assert_eq(c.call('SETRANGE', 'k', '11', '!!'), 13)
        assert_eq(c.call('GET', 'k'), b'Hello Redis!!')
        # Zero padding.
        assert_eq(c.call('SETRANGE', 'p', '5', 'x'), 6)
        assert_eq(c.call('GET', 'p'), b'\x00\x00\x00\x00\x00x')
        assert_eq(c.call('SETRANGE', 'k', '15', 'y'), 16)
        assert_eq(c.call('GET', 'k'), b'Hello Redis!!\x00\x00y')
        # Empty value: no write, returns the current length.
        assert_eq(c.call('SETRANGE', 'k', '100', ''), 16)
        assert_eq(c.call('STRLEN', 'k'), 16)
        assert_eq(c.call('SETRANGE', 'nokey', '0', ''), 0)
        assert_eq(c.call('SETRANGE', 'nokey', '10', ''), 0)
        assert_eq(c.call('EXISTS', 'nokey'), 0)
        c.call('SET', 't', 'abc', 'EX', '100')
        c.call('SETRANGE', 't', '1', 'X')
        assert_eq(c.call('GET', 't'), b'aXc')
        assert_ttl(c, 't', 100)


def test_setrange_errors(s):
    with s.client() as c:
        c.call('SET', 'k', 'abc')
        assert_error(c.call('SETRANGE', 'k', '-1', 'x'),
                     'ERR offset is out of range')
        assert_error(c.call('SETRANGE', 'k', '536870912', 'x'),
                     'ERR string exceeds maximum allowed size '
                     '(proto-max-bulk-len)')
        assert_error(c.call('SETRANGE', 'k', '536870911', 'xy'),
                     'ERR string exceeds maximum allowed size '
                     '(proto-max-bulk-len)')
        assert_error(c.call('SETRANGE', 'nokey', '536870912', 'x'),
                     'ERR string exceeds maximum allowed size '
                     '(proto-max-bulk-len)')
        assert_error(c.call('SETRANGE', 'k', 'abc', 'x'), NOTINT)
        assert_eq(c.call('GET', 'k'), b'abc')
        assert_eq(c.call('EXISTS', 'nokey'), 0)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('SETRANGE', 'list', '0', 'x'), WRONGTYPE)


def test_set_overwrites_other_types(s):
    with s.client() as c:
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_eq(c.call('SET', 'list', 'v'), 'OK')
        assert_eq(c.call('TYPE', 'list'), 'string')
        assert_eq(c.call('GET', 'list'), b'v')


def test_values_expire(s):
    with s.client() as c:
        c.call('SET', 'k', 'v', 'PX', '50')
        c.call('PSETEX', 'p', '50', 'v')
        c.call('SET', 'g', 'v')
        c.call('GETEX', 'g', 'PX', '50')
        wait_until(lambda: c.call('MGET', 'k', 'p', 'g') == [None] * 3,
                   5, 'keys set with PX 50 to expire')
        assert_eq(c.call('INCR', 'k'), 1)
        assert_eq(c.call('TTL', 'k'), -1)


def test_set_repeated_options(s):
    # Redis accepts an option given twice; for EX/PX/EXAT/PXAT the last
    # value counts (only it is validated).
    with s.client() as c:
        assert_eq(c.call('SET', 'k', '1', 'EX', '100', 'EX', '200'), 'OK')
        assert_ttl(c, 'k', 200)
        assert_eq(c.call('SET', 'k', '1', 'PX', '100000', 'PX', '200000'),
                  'OK')
        assert_pttl(c, 'k', 200000)
        assert_eq(c.call('SET', 'k', 'v', 'EX', 'abc', 'EX', '100'), 'OK')
        assert_eq(c.call('SET', 'k', 'v', 'EX', '0', 'EX', '100'), 'OK')
        assert_error(c.call('SET', 'k', 'v', 'EX', '100', 'EX', 'abc'),
                     NOTINT)
        assert_error(c.call('SET', 'k', 'v', 'EX', '100', 'EX', '0'),
                     BADEXPIRE % 'set')
        assert_eq(c.call('SET', 'k', 'v', 'NX', 'NX'), None)
        assert_eq(c.call('SET', 'k', 'v2', 'XX', 'XX'), 'OK')
        assert_eq(c.call('SET', 'k', 'v3', 'GET', 'GET'), b'v2')
        c.call('EXPIRE', 'k', '100')
        assert_eq(c.call('SET', 'k', 'v4', 'KEEPTTL', 'KEEPTTL'), 'OK')
        assert_ttl(c, 'k', 100)
        assert_eq(c.call('SET', 'k', 'v', 'EXAT', '1', 'EXAT', '1'), 'OK')
        assert_eq(c.call('GET', 'k'), None)


def test_getex_missing_key_ignores_bad_expire(s):
    # Redis 7 looks the key up before it validates the expire time.
    with s.client() as c:
        assert_eq(c.call('GETEX', 'nokey', 'EX', 'abc'), None)
        assert_eq(c.call('GETEX', 'nokey', 'EX', '-5'), None)
        assert_eq(c.call('GETEX', 'nokey', 'PX', '0'), None)
        c.call('SET', 'k', 'v')
        assert_eq(c.call('GETEX', 'k', 'EX', '100', 'EX', '200'), b'v')
        assert_ttl(c, 'k', 200)
        assert_eq(c.call('GETEX', 'k', 'PERSIST', 'PERSIST'), b'v')
        assert_eq(c.call('TTL', 'k'), -1)
        assert_eq(c.call('RPUSH', 'list', 'x'), 1)
        assert_error(c.call('GETEX', 'list', 'EX', 'abc'), WRONGTYPE)


if __name__ == '__main__':
    main(globals())
