"""Checks connection and server commands: PING ECHO QUIT SELECT DBSIZE FLUSHDB FLUSHALL TIME INFO COMMAND CONFIG GET SHUTDOWN BGREWRITEAOF."""

import re
import time

from larder_test import (Server, assert_eq, assert_error, assert_true, main,
                         wait_until, IS_REDIS, encode_command)


def test_ping(s):
    with s.client() as c:
        assert_eq(c.call('PING'), 'PONG')
        assert_eq(c.call('PING', 'hello'), b'hello')
        assert_eq(c.call('PING', ''), b'')
        assert_error(c.call('PING', 'a', 'b'),
                     "ERR wrong number of arguments for 'ping' command")
        c.hello(3)
        assert_eq(c.call('PING'), 'PONG')


def test_echo(s):
    with s.client() as c:
        assert_eq(c.call('ECHO', 'hi there'), b'hi there')
        assert_eq(c.call('ECHO', b'\x00\xff'), b'\x00\xff')
        assert_eq(c.call('ECHO', ''), b'')
        assert_error(c.call('ECHO'),
                     "ERR wrong number of arguments for 'echo' command")
        assert_error(c.call('ECHO', 'a', 'b'),
                     "ERR wrong number of arguments for 'echo' command")


def test_quit(s):
    with s.client() as c:
        c.send_raw(encode_command('QUIT'))
        c.expect_raw(b'+OK\r\n')
        assert_true(c.is_closed(), 'connection closed after QUIT')
    with s.client() as c:
        # Commands pipelined after QUIT are not executed.
        c.send_raw(encode_command('SET', 'q1', '1') + encode_command('QUIT') +
                   encode_command('SET', 'q2', '2'))
        assert_eq(c.read_reply(), 'OK')
        assert_eq(c.read_reply(), 'OK')
        assert_true(c.is_closed(), 'connection closed after QUIT')
    with s.client() as c:
        assert_eq(c.call('EXISTS', 'q1', 'q2'), 1)


def test_select(s):
    with s.client() as c:
        for db in range(16):
            assert_eq(c.call('SELECT', db), 'OK')
            assert_eq(c.call('SET', 'k', 'db%d' % db), 'OK')
        for db in range(16):
            assert_eq(c.call('SELECT', db), 'OK')
            assert_eq(c.call('GET', 'k'), b'db%d' % db)
            assert_eq(c.call('DBSIZE'), 1)
        assert_error(c.call('SELECT', '16'), 'ERR DB index is out of range')
        assert_error(c.call('SELECT', '-1'), 'ERR DB index is out of range')
        assert_error(c.call('SELECT', '2147483647'),
                     'ERR DB index is out of range')
        # Beyond an int, Redis answers its int-range error (sic).
        for v in ('2147483648', '-2147483649', '9223372036854775807'):
            assert_error(c.call('SELECT', v),
                         'ERR value is out of range, value must between '
                         '-2147483648 and 2147483647')
        assert_error(c.call('SELECT', 'abc'),
                     'ERR value is not an integer or out of range')
        assert_error(c.call('SELECT', '1.5'),
                     'ERR value is not an integer or out of range')
        assert_error(c.call('SELECT'),
                     "ERR wrong number of arguments for 'select' command")
        # A failed SELECT keeps the current db.
        assert_eq(c.call('GET', 'k'), b'db15')
    with s.client() as c:
        assert_eq(c.call('GET', 'k'), b'db0')     # new connections start in 0


def test_dbsize(s):
    with s.client() as c:
        assert_eq(c.call('DBSIZE'), 0)
        c.pipeline([('SET', 'k%d' % i, i) for i in range(25)])
        assert_eq(c.call('DBSIZE'), 25)
        c.call('DEL', 'k0', 'k1')
        assert_eq(c.call('DBSIZE'), 23)
        c.call('SELECT', '2')
        assert_eq(c.call('DBSIZE'), 0)
        assert_error(c.call('DBSIZE', 'x'),
                     "ERR wrong number of arguments for 'dbsize' command")


def test_flushdb(s):
    with s.client() as c:
        c.call('SET', 'a', '1')
        c.call('SELECT', '1')
        c.call('SET', 'b', '1')
        assert_eq(c.call('FLUSHDB'), 'OK')
        assert_eq(c.call('DBSIZE'), 0)
        c.call('SELECT', '0')
        assert_eq(c.call('GET', 'a'), b'1')
        assert_eq(c.call('FLUSHDB', 'SYNC'), 'OK')
        assert_eq(c.call('DBSIZE'), 0)
        c.call('SET', 'a', '1')
        assert_eq(c.call('FLUSHDB', 'ASYNC'), 'OK')
        assert_eq(c.call('GET', 'a'), None)
        assert_error(c.call('FLUSHDB', 'NOW'), 'ERR syntax error')


def test_flushall(s):
    with s.client() as c:
        for db in (0, 1, 15):
            c.call('SELECT', db)
            c.call('SET', 'x', db, 'EX', 1000)
        assert_eq(c.call('FLUSHALL'), 'OK')
        for db in (0, 1, 15):
            c.call('SELECT', db)
            assert_eq(c.call('DBSIZE'), 0)
        assert_eq(c.call('FLUSHALL', 'ASYNC'), 'OK')
        assert_eq(c.call('FLUSHALL', 'SYNC'), 'OK')
        assert_error(c.call('FLUSHALL', 'NOW'), 'ERR syntax error')


def test_time(s):
    with s.client() as c:
        before = time.time()
        r = c.call('TIME')
        after = time.time()
        assert_true(isinstance(r, list) and len(r) == 2, 'TIME: %r' % (r,))
        assert_true(all(isinstance(x, bytes) and x.isdigit() for x in r),
                    'TIME returns two decimal bulk strings: %r' % (r,))
        secs, usecs = int(r[0]), int(r[1])
        assert_true(0 <= usecs < 1000000, 'microseconds in range')
        t = secs + usecs / 1e6
        assert_true(before - 1 <= t <= after + 1,
                    'TIME %f within [%f, %f]' % (t, before, after))


def test_bgrewriteaof(s):
    """Redis's replies; in larder (no append-only file) it starts the
    background save, which LASTSAVE then shows."""
    with s.client() as c:
        assert_error(c.call('BGREWRITEAOF', 'x'),
                     "ERR wrong number of arguments for 'bgrewriteaof' "
                     "command")
        wait_until(lambda: b'aof_rewrite_in_progress:1' not in
                   c.call('INFO', 'persistence'), 10, 'no rewrite running')
        before = c.call('LASTSAVE')
        if not IS_REDIS:
            time.sleep(1.1)  # LASTSAVE counts seconds
        r = c.call('BGREWRITEAOF')
        assert_true(r in ('Background append only file rewriting started',
                          'Background append only file rewriting scheduled'),
                    repr(r))
        if not IS_REDIS:
            wait_until(lambda: c.call('LASTSAVE') > before, 10,
                       'the save it started')


def _info_fields(text):
    fields = {}
    for line in text.decode().split('\r\n'):
        if line and not line.startswith('#'):
            k, _, v = line.partition(':')
            fields[k] = v
    return fields


def test_info_sections(s):
    with s.client() as c:
        info = c.call('INFO')
        assert_true(isinstance(info, bytes), 'INFO is a bulk string')
        text = info.decode()
        for sec in ('Server', 'Clients', 'Memory', 'Persistence', 'Stats',
                    'Keyspace'):
            assert_true('# %s\r\n' % sec in text, 'INFO has # %s' % sec)
        assert_true(text.endswith('\r\n'), 'INFO ends with CRLF')
        f = _info_fields(info)
        assert_true(re.match(r'^\d+\.\d+\.\d+', f.get('redis_version', '')),
                    'redis_version: %r' % f.get('redis_version'))
        if not IS_REDIS:
            assert_true('larder_version' in f, 'larder_version present')
        assert_eq(f.get('tcp_port'), str(s.port), 'tcp_port')
        assert_true(int(f['connected_clients']) >= 1, 'connected_clients')
        assert_true(int(f['uptime_in_seconds']) >= 0, 'uptime_in_seconds')
        assert_true(f.get('process_id', '').isdigit(), 'process_id')


def test_info_single_section(s):
    with s.client() as c:
        text = c.call('INFO', 'server').decode()
        assert_true(text.startswith('# Server\r\n'), 'INFO server: %r'
                    % text[:40])
        assert_true('# Clients' not in text and '# Keyspace' not in text,
                    'only the server section')
        text = c.call('INFO', 'CLIENTS').decode()
        assert_true(text.startswith('# Clients\r\n'), 'section names are '
                    'case-insensitive')
        assert_eq(c.call('INFO', 'nosuchsection'), b'')


def test_info_keyspace(s):
    with s.client() as c:
        assert_eq(c.call('INFO', 'keyspace'), b'# Keyspace\r\n')
        c.call('SET', 'a', '1')
        c.call('SET', 'b', '1', 'EX', '1000')
        c.call('SELECT', '3')
        c.call('SET', 'c', '1')
        text = c.call('INFO', 'keyspace').decode()
        lines = text.split('\r\n')
        assert_eq(lines[0], '# Keyspace')
        assert_true(re.fullmatch(r'db0:keys=2,expires=1,avg_ttl=\d+',
                                 lines[1]), 'db0 line: %r' % lines[1])
        assert_eq(lines[2], 'db3:keys=1,expires=0,avg_ttl=0')
        assert_eq(lines[3:], [''])


def test_info_stats_cover_all_workers():
    # Counters are server-wide, whichever worker serves the INFO.
    with Server(workers=2) as srv:
        with srv.client() as probe:
            before = _info_fields(probe.call('INFO'))
            clients = [srv.client() for _ in range(10)]
            try:
                for i, c in enumerate(clients):
                    c.call('SET', 'k%d' % i, 'v')
                    c.call('GET', 'k%d' % i)
                    c.call('GET', 'nokey%d' % i)
                for c in [probe] + clients[:3]:
                    after = _info_fields(c.call('INFO'))
                    assert_eq(int(after['connected_clients']),
                              int(before['connected_clients']) + 10,
                              'connected_clients')
                    for field, delta in (('total_connections_received', 10),
                                         ('keyspace_hits', 10),
                                         ('keyspace_misses', 10)):
                        assert_eq(int(after[field]) - int(before[field]),
                                  delta, field)
                    assert_true(int(after['total_commands_processed']) >=
                                int(before['total_commands_processed']) + 30,
                                'total_commands_processed')
                    assert_true(after['db0'].startswith('keys=10,'),
                                'db0: %r' % after['db0'])
            finally:
                for c in clients:
                    c.close()
            wait_until(lambda: int(_info_fields(probe.call('INFO', 'clients'))
                                   ['connected_clients']) ==
                       int(before['connected_clients']), 5,
                       'connected_clients to drop after disconnects')


def test_info_resp3(s):
    with s.client() as c:
        c.hello(3)
        r = c.call('INFO', 'server')
        # RESP3 sends INFO as a verbatim string (txt).
        assert_true(isinstance(r, bytes) and r.startswith(b'# Server'),
                    'INFO in RESP3: %r' % r[:40])
        assert_eq(getattr(r, 'format', 'txt'), 'txt')


def test_command_count(s):
    with s.client() as c:
        n = c.call('COMMAND', 'COUNT')
        assert_true(isinstance(n, int) and n >= 40,
                    'COMMAND COUNT is an integer >= 40: %r' % (n,))
        full = c.call('COMMAND')
        assert_true(isinstance(full, list), 'COMMAND returns an array')
        assert_eq(len(full), n, 'COMMAND entries vs COMMAND COUNT')
        names = set(e[0] for e in full)
        for name in (b'get', b'set', b'ping', b'hello', b'scan', b'command'):
            assert_true(name in names, 'COMMAND lists %r' % name)


def test_command_info_get(s):
    with s.client() as c:
        r = c.call('COMMAND', 'INFO', 'get')
        assert_true(isinstance(r, list) and len(r) == 1, 'one entry: %r'
                    % (r,))
        e = r[0]
        assert_true(isinstance(e, list) and len(e) == 10,
                    'Redis 7 entries have 10 fields: %r' % (e,))
        assert_eq(e[:6], [b'get', 2, ['readonly', 'fast'], 1, 1, 1])
        assert_eq(e[6], ['@read', '@string', '@fast'], 'ACL categories')
        r = c.call('COMMAND', 'INFO', 'SET', 'nosuchcmd', 'mget')
        assert_eq(len(r), 3)
        assert_eq(r[0][:6], [b'set', -3, ['write', 'denyoom'], 1, 1, 1])
        assert_eq(r[1], None)
        assert_eq(r[2][:6], [b'mget', -2, ['readonly', 'fast'], 1, -1, 1])


# COMMAND INFO of redis-server 7.0.15 for the Foundation commands: arity,
# first key, last key, step, and whether it is flagged write or readonly
# (what cluster clients and proxies route by).
REDIS_COMMANDS = {
    'get': (2, 1, 1, 1, 'readonly'),
    'set': (-3, 1, 1, 1, 'write'),
    'setnx': (3, 1, 1, 1, 'write'),
    'setex': (4, 1, 1, 1, 'write'),
    'psetex': (4, 1, 1, 1, 'write'),
    'getset': (3, 1, 1, 1, 'write'),
    'getdel': (2, 1, 1, 1, 'write'),
    'getex': (-2, 1, 1, 1, 'write'),
    'mget': (-2, 1, -1, 1, 'readonly'),
    'mset': (-3, 1, -1, 2, 'write'),
    'msetnx': (-3, 1, -1, 2, 'write'),
    'incr': (2, 1, 1, 1, 'write'),
    'decr': (2, 1, 1, 1, 'write'),
    'incrby': (3, 1, 1, 1, 'write'),
    'decrby': (3, 1, 1, 1, 'write'),
    'incrbyfloat': (3, 1, 1, 1, 'write'),
    'append': (3, 1, 1, 1, 'write'),
    'strlen': (2, 1, 1, 1, 'readonly'),
    'getrange': (4, 1, 1, 1, 'readonly'),
    'setrange': (4, 1, 1, 1, 'write'),
    'del': (-2, 1, -1, 1, 'write'),
    'unlink': (-2, 1, -1, 1, 'write'),
    'exists': (-2, 1, -1, 1, 'readonly'),
    'type': (2, 1, 1, 1, 'readonly'),
    'expire': (-3, 1, 1, 1, 'write'),
    'pexpire': (-3, 1, 1, 1, 'write'),
    'expireat': (-3, 1, 1, 1, 'write'),
    'pexpireat': (-3, 1, 1, 1, 'write'),
    'ttl': (2, 1, 1, 1, 'readonly'),
    'pttl': (2, 1, 1, 1, 'readonly'),
    'expiretime': (2, 1, 1, 1, 'readonly'),
    'pexpiretime': (2, 1, 1, 1, 'readonly'),
    'persist': (2, 1, 1, 1, 'write'),
    'keys': (2, 0, 0, 0, 'readonly'),
    'scan': (-2, 0, 0, 0, 'readonly'),
    'rename': (3, 1, 2, 1, 'write'),
    'renamenx': (3, 1, 2, 1, 'write'),
    'randomkey': (1, 0, 0, 0, 'readonly'),
    'copy': (-3, 1, 2, 1, 'write'),
    'ping': (-1, 0, 0, 0, None),
    'echo': (2, 0, 0, 0, None),
    'quit': (-1, 0, 0, 0, None),
    'select': (2, 0, 0, 0, None),
    'dbsize': (1, 0, 0, 0, 'readonly'),
    'flushdb': (-1, 0, 0, 0, 'write'),
    'flushall': (-1, 0, 0, 0, 'write'),
    'time': (1, 0, 0, 0, None),
    'info': (-1, 0, 0, 0, None),
    'command': (-1, 0, 0, 0, None),
    'config': (-2, 0, 0, 0, None),
    'shutdown': (-1, 0, 0, 0, None),
    'hello': (-1, 0, 0, 0, None),
    'auth': (-2, 0, 0, 0, None),
    'client': (-2, 0, 0, 0, None),
}


def test_command_table_matches_redis(s):
    with s.client() as c:
        names = sorted(REDIS_COMMANDS)
        bad = []
        for name, e in zip(names, c.call('COMMAND', 'INFO', *names)):
            if e is None:
                bad.append('%s: missing' % name)
                continue
            rw = ('write' if 'write' in e[2] else
                  'readonly' if 'readonly' in e[2] else None)
            got = (e[1], e[3], e[4], e[5], rw)
            if got != REDIS_COMMANDS[name]:
                bad.append('%s: %r, redis %r' % (name, got,
                                                 REDIS_COMMANDS[name]))
        assert_eq(bad, [], '(arity, first, last, step, write/readonly)')


def test_command_docs_get(s):
    with s.client() as c:
        r = c.call('COMMAND', 'DOCS', 'get')
        assert_true(isinstance(r, list) and len(r) == 2 and r[0] == b'get',
                    'COMMAND DOCS get: %r' % (r,))
        doc = dict(zip(r[1][0::2], r[1][1::2]))
        assert_true(isinstance(doc.get(b'summary'), bytes) and
                    doc[b'summary'], 'summary present')
        assert_eq(doc.get(b'since'), b'1.0.0')
        assert_eq(doc.get(b'group'), b'string')
        assert_eq(doc.get(b'complexity'), b'O(1)')
        c.hello(3)
        r = c.call('COMMAND', 'DOCS', 'get')
        assert_true(isinstance(r, dict) and b'get' in r,
                    'RESP3 COMMAND DOCS is a map: %r' % (r,))
        assert_eq(r[b'get'][b'group'], b'string')
        assert_eq(c.call('COMMAND', 'DOCS', 'nosuchcmd'), {})


def test_command_errors(s):
    with s.client() as c:
        assert_error(c.call('COMMAND', 'NOPE'),
                     "ERR unknown subcommand 'NOPE'. Try COMMAND HELP.")
        assert_error(c.call('COMMAND', 'COUNT', 'x'),
                     "ERR wrong number of arguments for 'command|count' "
                     "command")


def test_config_get_port(s):
    with s.client() as c:
        assert_eq(c.call('CONFIG', 'GET', 'port'),
                  [b'port', str(s.port).encode()])
        r = c.call('CONFIG', 'GET', 'PORT')
        assert_eq([r[0].lower(), r[1]], [b'port', str(s.port).encode()])
        assert_eq(c.call('CONFIG', 'GET', 'nosuchparam'), [])
        assert_eq(c.call('CONFIG', 'GET', 'databases'), [b'databases', b'16'])
        r = c.call('CONFIG', 'GET', 'port', 'databases')
        assert_eq(dict(zip(r[0::2], r[1::2])),
                  {b'port': str(s.port).encode(), b'databases': b'16'})
        assert_error(c.call('CONFIG', 'GET'),
                     "ERR wrong number of arguments for 'config|get' command")


def test_maxclients():
    # The limit is server-wide, whichever worker accepts.
    with Server(workers=2, args=['--maxclients', '5']) as srv:
        clients = []
        try:
            for i in range(5):
                clients.append(srv.client())
                assert_eq(clients[-1].call('PING'), 'PONG')
            for i in range(3):
                with srv.client() as c:
                    assert_error(c.read_reply(),
                                 'ERR max number of clients reached')
                    assert_true(c.is_closed(), 'refused client closed')
            clients.pop().close()

            def slot_free():
                with srv.client() as c:
                    return c.call('PING') == 'PONG'
            wait_until(slot_free, 5, 'a freed slot to be reusable')
            for c in clients:
                assert_eq(c.call('PING'), 'PONG')
        finally:
            for c in clients:
                c.close()


def test_idle_timeout():
    with Server(args=['--timeout', '2']) as srv:
        idle, busy = srv.client(), srv.client()
        try:
            t0 = time.time()
            # busy keeps talking; idle says nothing and is dropped.
            while not idle.is_closed(0.3):
                assert_eq(busy.call('PING'), 'PONG')
                assert_true(time.time() - t0 < 10, 'idle client dropped')
            assert_true(time.time() - t0 >= 1.9, 'not dropped before the '
                        'timeout (%.2fs)' % (time.time() - t0))
            assert_eq(busy.call('PING'), 'PONG')
        finally:
            idle.close()
            busy.close()


def test_shutdown():
    srv = Server()
    try:
        other = srv.client()
        with srv.client() as c:
            c.call('SET', 'k', 'v')
            c.send_raw(encode_command('SHUTDOWN'))
            # Redis 7 closes the connection without a reply on success.
            assert_true(c.is_closed(), 'connection closed by SHUTDOWN')
        assert_true(other.is_closed(), 'other connections closed too')
        other.close()
        code = srv.wait_exit()
        assert_eq(code, 0, 'exit code of the server (master) after SHUTDOWN')
    finally:
        srv.cleanup()


if __name__ == '__main__':
    main(globals())
