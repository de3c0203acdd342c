"""Checks RESP2/RESP3 framing: multibulk, inline, pipelining, split writes, binary safety, protocol errors and limits, HELLO."""

import os
import random
import re
import socket
import time

from larder_test import (Client, Server, assert_eq, assert_error,
                         assert_error_prefix, assert_true, encode_command,
                         main)


def test_multibulk_set_get(s):
    with s.client() as c:
        c.send_raw(b'*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n')
        assert_eq(c.read_reply(), 'OK')
        c.send_raw(b'*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n')
        c.expect_raw(b'$5\r\nvalue\r\n')
        c.send_raw(b'*2\r\n$3\r\nGET\r\n$7\r\nmissing\r\n')
        c.expect_raw(b'$-1\r\n')


def test_command_names_case_insensitive(s):
    with s.client() as c:
        assert_eq(c.call('sEt', 'k', 'v'), 'OK')
        assert_eq(c.call('get', 'k'), b'v')
        assert_eq(c.call('GeT', 'k'), b'v')


def test_inline_commands(s):
    with s.client() as c:
        c.send_raw(b'PING\r\n')
        c.expect_raw(b'+PONG\r\n')
        c.send_raw(b'SET ik "hello world"\r\n')
        assert_eq(c.read_reply(), 'OK')
        c.send_raw(b'GET ik\n')             # a bare LF ends a line too
        assert_eq(c.read_reply(), b'hello world')
        c.send_raw(b'set q "\\x41\\n\\t" \r\nget q\r\n')
        assert_eq(c.read_reply(), 'OK')
        assert_eq(c.read_reply(), b'A\n\t')
        c.send_raw(b"set q 'it''s'\r\n")     # adjacent quoted strings
        r = c.read_reply()
        assert_error(r, 'ERR Protocol error: unbalanced quotes in request')


def test_inline_empty_lines_ignored(s):
    with s.client() as c:
        c.send_raw(b'\r\n\r\n   \r\nPING\r\n')
        assert_eq(c.read_reply(), 'PONG')
        c.send_raw(b'*0\r\n*-1\r\nPING\r\n')   # empty multibulks are no-ops
        assert_eq(c.read_reply(), 'PONG')


def test_pipelining_in_order(s):
    with s.client() as c:
        cmds = []
        for i in range(150):
            cmds.append(('SET', 'p%d' % i, 'v%d' % i))
            cmds.append(('GET', 'p%d' % i))
            cmds.append(('INCR', 'pipecount'))
        replies = c.pipeline(cmds)
        for i in range(150):
            assert_eq(replies[3 * i], 'OK')
            assert_eq(replies[3 * i + 1], ('v%d' % i).encode())
            assert_eq(replies[3 * i + 2], i + 1)


def test_big_pipeline_of_pings(s):
    # 40000 commands in one write; the server must not drop or reorder.
    with s.client() as c:
        n = 20000
        c.send_raw((encode_command('PING') + b'PING\r\n') * n)
        for i in range(2 * n):
            assert_eq(c.read_reply(), 'PONG', 'reply %d' % i)


def test_mixed_inline_and_multibulk_pipeline(s):
    with s.client() as c:
        c.send_raw(b'SET a 1\r\n' + encode_command('INCR', 'a') +
                   b'INCR a\r\n' + encode_command('GET', 'a'))
        assert_eq([c.read_reply() for _ in range(4)], ['OK', 2, 3, b'3'])


def test_command_split_across_small_writes(s):
    with s.client() as c:
        data = encode_command('SET', 'split', 'x' * 100) + \
            encode_command('GET', 'split')
        for i in range(len(data)):
            c.send_raw(data[i:i + 1])
            if i % 16 == 0:
                time.sleep(0.001)
        assert_eq(c.read_reply(), 'OK')
        assert_eq(c.read_reply(), b'x' * 100)
        # Split exactly at the CRLFs and inside the length lines.
        data = b'*2\r\n$3\r\nGET\r\n$5\r\nsplit\r\n'
        for part in (data[:1], data[1:3], data[3:4], data[4:9], data[9:12],
                     data[12:14], data[14:15], data[15:25], data[25:]):
            c.send_raw(part)
            time.sleep(0.002)
        assert_eq(c.read_reply(), b'x' * 100)
        inline = b'SET sp2 inline\r\n'
        for i in range(len(inline)):
            c.send_raw(inline[i:i + 1])
        assert_eq(c.read_reply(), 'OK')


def test_binary_safe_keys_and_values(s):
    with s.client() as c:
        allbytes = bytes(range(256))
        assert_eq(c.call('SET', allbytes, allbytes * 4), 'OK')
        assert_eq(c.call('GET', allbytes), allbytes * 4)
        assert_eq(c.call('SET', b'a\x00b', b'\x00\r\n\x00'), 'OK')
        assert_eq(c.call('GET', b'a\x00b'), b'\x00\r\n\x00')
        assert_eq(c.call('GET', b'a'), None)
        assert_eq(c.call('GET', b'a\x00'), None)
        assert_eq(c.call('EXISTS', b'a\x00b', allbytes), 2)
        assert_eq(c.call('STRLEN', b'a\x00b'), 4)
        for b in range(256):
            assert_eq(c.call('SET', bytes([b]), bytes([b, 0, b])), 'OK')
        got = c.pipeline([('GET', bytes([b])) for b in range(256)])
        assert_eq(got, [bytes([b, 0, b]) for b in range(256)])
        assert_eq(sorted(c.call('KEYS', '?')),
                  [bytes([b]) for b in range(256)])


def test_unknown_command(s):
    with s.client() as c:
        assert_error(c.call('foo', 'a', 'b'),
                     "ERR unknown command 'foo', with args beginning with: "
                     "'a' 'b' ")
        assert_error(c.call('foo'),
                     "ERR unknown command 'foo', with args beginning with: ")
        c.send_raw(b'nosuchcmd x\r\n')
        assert_error(c.read_reply(), "ERR unknown command 'nosuchcmd', with "
                     "args beginning with: 'x' ")
        assert_eq(c.call('PING'), 'PONG')


def test_wrong_arity(s):
    with s.client() as c:
        assert_error(c.call('GET'),
                     "ERR wrong number of arguments for 'get' command")
        assert_error(c.call('get', 'a', 'b'),
                     "ERR wrong number of arguments for 'get' command")
        assert_error(c.call('SET', 'a'),
                     "ERR wrong number of arguments for 'set' command")
        assert_error(c.call('MSET', 'a', 'b', 'c'),
                     "ERR wrong number of arguments for 'mset' command")
        assert_error(c.call('PING', 'a', 'b'),
                     "ERR wrong number of arguments for 'ping' command")
        assert_eq(c.call('PING'), 'PONG')


def _expect_protocol_error(s, raw, message):
    with s.client() as c:
        c.send_raw(raw)
        assert_error(c.read_reply(), message)
        assert_true(c.is_closed(), 'connection closed after protocol error')
    with s.client() as c:
        assert_eq(c.call('PING'), 'PONG')


def test_bulk_length_over_limit(s):
    _expect_protocol_error(s, b'*1\r\n$600000000\r\n',
                           'ERR Protocol error: invalid bulk length')


def test_bulk_length_invalid(s):
    _expect_protocol_error(s, b'*2\r\n$3\r\nGET\r\n$abc\r\n',
                           'ERR Protocol error: invalid bulk length')
    _expect_protocol_error(s, b'*2\r\n$-1\r\n',
                           'ERR Protocol error: invalid bulk length')


def test_bulk_length_over_configured_limit():
    with Server(args=['--proto-max-bulk-len', '2mb']) as srv:
        with srv.client() as c:
            c.send_raw(b'*2\r\n$3\r\nGET\r\n$%d\r\n' % (2 * 1024 * 1024 + 1))
            assert_error(c.read_reply(),
                         'ERR Protocol error: invalid bulk length')
            assert_true(c.is_closed(), 'connection closed')
        with srv.client() as c:
            v = b'v' * (2 * 1024 * 1024)
            assert_eq(c.call('SET', 'big', v), 'OK')
            assert_eq(c.call('GET', 'big'), v)


def test_multibulk_length_invalid(s):
    _expect_protocol_error(s, b'*abc\r\n',
                           'ERR Protocol error: invalid multibulk length')
    _expect_protocol_error(s, b'*3000000000\r\n',
                           'ERR Protocol error: invalid multibulk length')


def test_expected_dollar(s):
    _expect_protocol_error(s, b'*1\r\nx3\r\n',
                           "ERR Protocol error: expected '$', got 'x'")
    _expect_protocol_error(s, b'*2\r\n$3\r\nGET\r\n:1\r\n',
                           "ERR Protocol error: expected '$', got ':'")


def test_unbalanced_quotes(s):
    _expect_protocol_error(s, b'SET "a b\r\n',
                           'ERR Protocol error: unbalanced quotes in request')
    _expect_protocol_error(s, b"SET 'a b\r\n",
                           'ERR Protocol error: unbalanced quotes in request')
    _expect_protocol_error(s, b'SET "a"b c\r\n',
                           'ERR Protocol error: unbalanced quotes in request')


def test_replies_before_protocol_error_are_sent(s):
    with s.client() as c:
        c.send_raw(encode_command('SET', 'before', '1') +
                   encode_command('GET', 'before') + b'*1\r\nx\r\n')
        assert_eq(c.read_reply(), 'OK')
        assert_eq(c.read_reply(), b'1')
        assert_error(c.read_reply(),
                     "ERR Protocol error: expected '$', got 'x'")
        assert_true(c.is_closed(), 'connection closed')


def test_query_buffer_limit():
    with Server(args=['--client-query-buffer-limit', '1mb']) as srv:
        other = srv.client()
        try:
            assert_eq(other.call('SET', 'other', 'alive'), 'OK')
            with srv.client() as c:
                # A 2 MB argument is below proto-max-bulk-len but above the
                # query buffer limit.
                c.send_raw(b'*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n'
                           % (2 * 1024 * 1024))
                closed = False
                try:
                    for _ in range(8):
                        c.send_raw(b'x' * (256 * 1024))
                        assert_eq(other.call('GET', 'other'), b'alive')
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                assert_true(closed or c.is_closed(),
                            'connection over the limit closed')
            assert_eq(other.call('GET', 'other'), b'alive')
            assert_eq(other.call('EXISTS', 'k'), 0)
            with srv.client() as c:
                assert_eq(c.call('PING'), 'PONG')
                # Just below the limit is fine.
                v = b'y' * (900 * 1024)
                assert_eq(c.call('SET', 'k', v), 'OK')
                assert_eq(c.call('STRLEN', 'k'), len(v))
        finally:
            other.close()


def test_junk_bytes(s):
    with s.client() as c:
        c.send_raw(b'\x01\xfe\xff junk\r\n')
        assert_error_prefix(c.read_reply(), "ERR unknown command '")
        assert_eq(c.call('PING'), 'PONG')
    with s.client() as c:
        c.send_raw(b'*1\r\n$4\r\nPING\r\n' + b'$$$$garbage\r\n')
        assert_eq(c.read_reply(), 'PONG')
        assert_error_prefix(c.read_reply(), 'ERR unknown command')
    with s.client() as c:
        c.send_raw(b'+OK\r\n:1\r\n')
        assert_error_prefix(c.read_reply(), "ERR unknown command '+OK'")
        assert_error_prefix(c.read_reply(), "ERR unknown command ':1'")
        assert_eq(c.call('PING'), 'PONG')
    with s.client() as c:
        assert_eq(c.call('PING'), 'PONG')


def test_client_disconnect_mid_command(s):
    for part in (b'*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\nabc',
                 b'*3\r\n$3\r\nSE', b'SET half', b'*'):
        c = s.client()
        c.send_raw(part)
        c.close()
    with s.client() as c:
        assert_eq(c.call('EXISTS', 'half'), 0)
        assert_eq(c.call('PING'), 'PONG')


def test_hello3_map(s):
    with s.client() as c:
        r = c.hello(3)
        assert_true(isinstance(r, dict), 'HELLO 3 replies a map: %r' % (r,))
        assert_eq(sorted(r.keys()), sorted([b'server', b'version', b'proto',
                                            b'id', b'mode', b'role',
                                            b'modules']))
        assert_eq(r[b'proto'], 3)
        assert_true(isinstance(r[b'id'], int) and r[b'id'] > 0, 'id')
        assert_eq(r[b'mode'], b'standalone')
        assert_eq(r[b'role'], b'master')
        assert_eq(r[b'modules'], [])
        # Redis 7 is the contract: clients see server "redis".
        assert_eq(r[b'server'], b'redis')
        assert_true(re.fullmatch(rb'7\.\d+\.\d+', r[b'version']),
                    'version is a Redis 7 version: %r' % r[b'version'])


def test_resp3_types(s):
    with s.client() as c:
        c.hello(3)
        c.send_raw(encode_command('GET', 'nokey'))
        c.expect_raw(b'_\r\n')
        c.send_raw(encode_command('INCRBYFLOAT', 'f', '1.5'))
        c.expect_raw(b'$3\r\n1.5\r\n')   # stays a bulk string
        c.send_raw(encode_command('MGET', 'nokey', 'f'))
        c.expect_raw(b'*2\r\n_\r\n$3\r\n1.5\r\n')
        c.send_raw(encode_command('CONFIG', 'GET', 'port'))
        assert_eq(c.read_reply(), {b'port': str(s.port).encode()})
        assert_eq(c.call('SET', 'x', 'y'), 'OK')
        assert_eq(c.call('GET', 'x'), b'y')
        assert_eq(c.call('SET', 'x', 'y', 'NX'), None)
        c.send_raw(encode_command('SET', 'x', 'y', 'NX'))
        c.expect_raw(b'_\r\n')
        assert_error(c.call('INCR', 'x'),
                     'ERR value is not an integer or out of range')
        # A double reply: ZSCORE of a sorted set.
        assert_eq(c.call('ZADD', 'z', '1.5', 'm'), 1)
        c.send_raw(encode_command('ZSCORE', 'z', 'm'))
        c.expect_raw(b',1.5\r\n')
        c.send_raw(encode_command('ZSCORE', 'z', 'nomember'))
        c.expect_raw(b'_\r\n')


def test_hello2_back(s):
    with s.client() as c:
        c.hello(3)
        r = c.hello(2)
        assert_true(isinstance(r, list) and len(r) == 14,
                    'HELLO 2 replies a flat array: %r' % (r,))
        assert_eq(r[0::2], [b'server', b'version', b'proto', b'id', b'mode',
                            b'role', b'modules'])
        assert_eq(r[5], 2)
        c.send_raw(encode_command('GET', 'nokey'))
        c.expect_raw(b'$-1\r\n')


def test_hello_no_args(s):
    with s.client() as c:
        r = c.call('HELLO')
        assert_true(isinstance(r, list) and r[4:6] == [b'proto', 2],
                    'HELLO without version keeps RESP2: %r' % (r,))


def test_hello_bad_version(s):
    with s.client() as c:
        for v in ('4', '1', '0', '-1'):
            assert_error(c.call('HELLO', v),
                         'NOPROTO unsupported protocol version')
        assert_error(c.call('HELLO', 'abc'),
                     'ERR Protocol version is not an integer or out of range')
        assert_error(c.call('HELLO', '3', 'FOO'),
                     "ERR Syntax error in HELLO option 'FOO'")
        # Still RESP2.
        c.send_raw(encode_command('GET', 'nokey'))
        c.expect_raw(b'$-1\r\n')


def test_hello_setname(s):
    with s.client() as c:
        r = c.hello(3, 'SETNAME', 'myconn')
        assert_eq(r[b'proto'], 3)
        assert_eq(c.call('CLIENT', 'GETNAME'), b'myconn')
        assert_error(c.call('HELLO', '3', 'SETNAME', 'my name'),
                     'ERR Client names cannot contain spaces, newlines or '
                     'special characters.')
        assert_eq(c.call('CLIENT', 'GETNAME'), b'myconn')


def test_hello_auth_without_password(s):
    # With no requirepass the default user takes any password.
    with s.client() as c:
        r = c.hello(3, 'AUTH', 'default', 'whatever')
        assert_eq(r[b'proto'], 3)


def test_hello_auth_requirepass():
    with Server(args=['--requirepass', 'sekrit']) as srv:
        with Client(srv.port) as c:
            assert_error(c.call('GET', 'k'), 'NOAUTH Authentication required.')
            assert_error(c.call('HELLO', '3'),
                         'NOAUTH HELLO must be called with the client '
                         'already authenticated, otherwise the HELLO '
                         'AUTH <user> <pass> option can be used to '
                         'authenticate the client and select the RESP '
                         'protocol version at the same time')
            assert_error(c.call('HELLO', '3', 'AUTH', 'default', 'wrong'),
                         'WRONGPASS invalid username-password pair or user '
                         'is disabled.')
            r = c.hello(3, 'AUTH', 'default', 'sekrit', 'SETNAME', 'n1')
            assert_eq(r[b'proto'], 3)
            assert_eq(c.call('SET', 'k', 'v'), 'OK')
            assert_eq(c.call('CLIENT', 'GETNAME'), b'n1')
        with Client(srv.port) as c:
            assert_error(c.call('AUTH', 'nope'),
                         'WRONGPASS invalid username-password pair or user '
                         'is disabled.')
            assert_eq(c.call('AUTH', 'sekrit'), 'OK')
            assert_eq(c.call('GET', 'k'), b'v')


def test_too_big_inline_request(s):
    with s.client() as c:
        c.send_raw(b'x' * 70000)          # no newline within 64 KiB
        assert_error(c.read_reply(),
                     'ERR Protocol error: too big inline request')
        assert_true(c.is_closed(), 'connection closed')


def test_length_number_formats(s):
    # Lengths are plain decimal: a sign, spaces or leading zeros are
    # errors; a negative count is an empty command.
    with s.client() as c:
        c.send_raw(b'*-2\r\n*1\r\n$4\r\nPING\r\n')
        assert_eq(c.read_reply(), 'PONG')
    _expect_protocol_error(s, b'*01\r\n$4\r\nPING\r\n',
                           'ERR Protocol error: invalid multibulk length')
    _expect_protocol_error(s, b'*1\r\n$04\r\nPING\r\n',
                           'ERR Protocol error: invalid bulk length')
    _expect_protocol_error(s, b'*+1\r\n$4\r\nPING\r\n',
                           'ERR Protocol error: invalid multibulk length')
    _expect_protocol_error(s, b'* 1\r\n$4\r\nPING\r\n',
                           'ERR Protocol error: invalid multibulk length')
    _expect_protocol_error(s, b'*1 \r\n$4\r\nPING\r\n',
                           'ERR Protocol error: invalid multibulk length')
    _expect_protocol_error(s, b'*\r\n',
                           'ERR Protocol error: invalid multibulk length')
    _expect_protocol_error(s, b'*2147483648\r\n',
                           'ERR Protocol error: invalid multibulk length')
    _expect_protocol_error(s, b'*1\r\n$+4\r\nPING\r\n',
                           'ERR Protocol error: invalid bulk length')
    _expect_protocol_error(s, b'*1\r\n$\r\n',
                           'ERR Protocol error: invalid bulk length')
    _expect_protocol_error(s, b'*1\r\n$536870913\r\n',
                           'ERR Protocol error: invalid bulk length')
    _expect_protocol_error(s, b'*1\r\n$9223372036854775808\r\n',
                           'ERR Protocol error: invalid bulk length')


def test_big_values_pipelined(s):
    with s.client() as c:
        vals = [bytes([65 + i]) * (1024 * 1024 + i) for i in range(10)]
        c.send_raw(b''.join(encode_command('SET', 'big%d' % i, v)
                            for i, v in enumerate(vals)))
        assert_eq([c.read_reply() for _ in vals], ['OK'] * len(vals))
        # Ask for 40 MB of replies before reading any of them.
        n = 40
        c.send_raw(encode_command('GET', 'big3') * n)
        for i in range(n):
            assert_eq(c.read_reply(), vals[3], 'reply %d' % i)
        assert_eq(c.call('MGET', *['big%d' % i for i in range(10)]), vals)


def test_many_connections(s):
    clients = []
    try:
        for i in range(300):
            clients.append(s.client())
        for c in clients:
            c.send('INCR', 'conns')
        got = sorted(c.read_reply() for c in clients)
        assert_eq(got, list(range(1, 301)))
        for c in clients[::2]:
            c.close()
        for c in clients[1::2]:
            assert_eq(c.call('PING'), 'PONG')
    finally:
        for c in clients:
            c.close()



def _mutated_stream(r):
    """Bytes that start like RESP and go wrong in some random way."""
    parts = []
    for _ in range(r.randint(1, 6)):
        cmd = r.choice([('SET', 'k', 'v' * r.randint(0, 300)), ('GET', 'k'),
                        ('PING',), ('HELLO', '3'), ('INCR', 'n'),
                        ('MSET', 'a', '1', 'b', '2'), ('SELECT', '1'),
                        ('EXPIRE', 'k', '100'), ('SCAN', '0')])
        data = bytearray(encode_command(*cmd))
        how = r.randint(0, 7)
        if how == 0 and data:                   # flip some bytes
            for _ in range(r.randint(1, 4)):
                data[r.randrange(len(data))] = r.randrange(256)
        elif how == 1:                          # truncate
            data = data[:r.randrange(len(data) + 1)]
        elif how == 2:                          # absurd lengths
            data = bytearray(re.sub(rb'[*$]\d+', lambda m: m.group(0)[:1] +
                                    r.choice([b'-5', b'99999999999',
                                              b'0', b'', b'x', b'1']),
                                    bytes(data), count=1))
        elif how == 3:                          # inline, odd quoting
            data = bytearray(r.choice([b'SET "a\\x4', b"GET 'k", b'"',
                                       b'PING "\\xZZ"', b'\t\tPING\t']) +
                             b'\r\n')
        elif how == 4:                          # random bytes
            data = bytearray(r.randrange(256)
                             for _ in range(r.randint(1, 200)))
        parts.append(bytes(data))
    return b''.join(parts)


def test_random_garbage_does_not_crash(s):
    # Sessions of corrupted RESP: the server may answer errors or close,
    # but must neither crash (the runner checks the log and sanitizer
    # output) nor stop serving others.
    r = random.Random(int(os.environ.get('LARDER_GARBAGE_SEED', '1234')))
    sessions = int(os.environ.get('LARDER_GARBAGE_SESSIONS', '800'))
    with s.client() as control:
        for i in range(sessions):
            c = Client(s.port, timeout=1.0)
            try:
                stream = _mutated_stream(r)
                for j in range(0, len(stream), r.randint(1, 64)):
                    c.send_raw(stream[j:j + 64])
                c.sock.settimeout(0.02)
                try:
                    c.sock.recv(65536)
                except (socket.timeout, OSError):
                    pass
            except OSError:
                pass
            finally:
                c.close()
            if i % 50 == 0:
                assert_eq(control.call('PING'), 'PONG')
        assert_eq(control.call('SET', 'alive', '1'), 'OK')
        assert_eq(control.call('GET', 'alive'), b'1')


if __name__ == '__main__':
    main(globals())
