"""Checks SLOWLOG, LATENCY and the command statistics of INFO across workers: SLOWLOG GET/LEN/RESET with slowlog-log-slower-than and slowlog-max-len see the commands of every worker in one log (ids in order, arguments cut as Redis cuts them, client address and name, passwords redacted), LATENCY LATEST/HISTORY/RESET/HISTOGRAM/GRAPH/DOCTOR with latency-monitor-threshold, commandstats/errorstats summed over workers with Redis's calls/rejected/failed semantics, and every count and argument error compared with a redis-server's."""

import re
import shutil
import time

from larder_test import (Client, RespError, Server, Skip, assert_eq,
                         assert_true, larder_only, main, wait_until)

NUMS = ['0', '-1', '-2', '1', '2147483648', '-2147483649',
        '9223372036854775807', '9223372036854775808', '-9223372036854775809',
        '18446744073709551616', 'nan', 'inf', '-inf', 'abc', '', '1.5', ' 1']


class RedisPeer(Server):
    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir, '--logfile',
                self.logfile, '--enable-debug-command', 'yes']


def peer():
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    return RedisPeer()


def serving_pid(c):
    info = c.call('INFO', 'server').decode()
    return int(re.search(r'worker_process_id:(\d+)', info).group(1))


def two_workers(s):
    """Two connections, each on a different worker."""
    a = s.client()
    pa = serving_pid(a)
    for _ in range(100):
        b = s.client()
        if serving_pid(b) != pa:
            return a, b
        b.close()
    raise AssertionError('no second worker')


def fields(c, section):
    out = {}
    for line in c.call('INFO', section).decode().split('\r\n'):
        k, _, v = line.partition(':')
        if v:
            out[k] = v
    return out


def test_argument_errors_like_redis():
    with peer() as r, Server(workers=2) as s:
        with r.client() as rc, s.client() as lc:
            cases = [('SLOWLOG', 'GET', n) for n in NUMS]
            cases += [('SLOWLOG',), ('SLOWLOG', 'GET', '1', '2'),
                      ('SLOWLOG', 'LEN', 'x'), ('SLOWLOG', 'RESET', 'x'),
                      ('SLOWLOG', 'NOSUCH'), ('SLOWLOG', 'HELP'),
                      ('LATENCY',), ('LATENCY', 'HISTORY'),
                      ('LATENCY', 'HISTORY', 'nosuch'),
                      ('LATENCY', 'GRAPH', 'nosuch'),
                      ('LATENCY', 'RESET', 'nosuch', 'other'),
                      ('LATENCY', 'LATEST', 'x'), ('LATENCY', 'NOSUCH'),
                      ('LATENCY', 'HELP'), ('LATENCY', 'DOCTOR', 'x'),
                      ('LATENCY', 'HISTOGRAM', 'nosuch')]
            for args in cases:
                assert_eq(lc.call(*args), rc.call(*args), ' '.join(args))


def test_slowlog_across_workers():
    larder_only()
    with Server(workers=2) as s:
        a, b = two_workers(s)
        try:
            assert_eq(a.call('CONFIG', 'SET', 'slowlog-log-slower-than', '0'),
                      'OK')
            assert_eq(a.call('SLOWLOG', 'RESET'), 'OK')
            a.call('CLIENT', 'SETNAME', 'alice')
            assert_eq(a.call('SET', 'ka', 'x' * 200), 'OK')
            assert_eq(b.call('SET', 'kb', 'v'), 'OK')
            assert_eq(b.call('AUTH', 'secret'),
                      RespError('ERR AUTH <password> called without any '
                                'password configured for the default user. '
                                'Are you sure your configuration is '
                                'correct?'))
            b.call('RPUSH', 'many', *range(40))
            log = a.call('SLOWLOG', 'GET', '-1')
            args = [e[3] for e in log]
            ids = [e[0] for e in log]
            assert_eq(ids, sorted(ids, reverse=True), 'newest first')
            assert_eq(len(set(ids)), len(ids), 'ids unique')
            assert_true([b'SET', b'kb', b'v'] in args, 'worker b logged')
            mine = [e for e in log if e[3][:2] == [b'SET', b'ka']][0]
            assert_eq(mine[3][2], b'x' * 128 + b'... (72 more bytes)')
            assert_eq(mine[5], b'alice', 'client name')
            assert_true(re.match(rb'127\.0\.0\.1:\d+$', mine[4]), mine[4])
            assert_true(isinstance(mine[2], int) and mine[2] >= 0, 'usec')
            auth = [e for e in log if e[3][0] == b'AUTH'][0]
            assert_eq(auth[3], [b'AUTH', b'(redacted)'], 'password redacted')
            many = [e for e in log if e[3][0] == b'RPUSH'][0]
            assert_eq(len(many[3]), 32, '32 arguments shown')
            assert_eq(many[3][-1], b'... (11 more arguments)')
            # (SLOWLOG GET itself was logged after it ran.)
            assert_eq(a.call('SLOWLOG', 'LEN'), len(log) + 1)
            # GET -1 and LEN have been logged since.
            assert_eq(len(a.call('SLOWLOG', 'GET')), min(10, len(log) + 2))
            assert_eq(len(a.call('SLOWLOG', 'GET', '2')), 2)
            assert_eq(a.call('SLOWLOG', 'GET', '0'), [])
            # slowlog-max-len keeps that many, for good.
            assert_eq(a.call('CONFIG', 'SET', 'slowlog-max-len', '3'), 'OK')
            for i in range(5):
                b.call('PING')
            assert_eq(a.call('SLOWLOG', 'LEN'), 3)
            assert_eq(a.call('CONFIG', 'SET', 'slowlog-max-len', '128'), 'OK')
            assert_eq(b.call('SLOWLOG', 'LEN'), 4, 'the trimmed stay gone')
            last_id = a.call('SLOWLOG', 'GET', '1')[0][0]
            assert_eq(b.call('SLOWLOG', 'RESET'), 'OK')
            assert_eq(a.call('SLOWLOG', 'LEN'), 1, 'reset on every worker '
                      '(SLOWLOG LEN itself is logged)')
            # Ids go on after a reset, as Redis.
            assert_true(a.call('SLOWLOG', 'GET', '1')[0][0] > last_id,
                        'ids not reused')
            # Off: -1.
            assert_eq(a.call('CONFIG', 'SET', 'slowlog-log-slower-than',
                             '-1'), 'OK')
            b.call('SLOWLOG', 'RESET')
            b.call('PING')
            assert_eq(a.call('SLOWLOG', 'LEN'), 0)
        finally:
            a.close()
            b.close()


def test_latency_monitor_across_workers():
    larder_only()
    with Server(workers=2, args=['--enable-debug-command', 'yes']) as s:
        a, b = two_workers(s)
        try:
            assert_eq(a.call('LATENCY', 'LATEST'), [])
            assert_eq(a.call('CONFIG', 'SET', 'latency-monitor-threshold',
                             '20'), 'OK')
            assert_eq(a.call('DEBUG', 'SLEEP', '0.05'), 'OK')
            assert_eq(b.call('DEBUG', 'SLEEP', '0.1'), 'OK')
            latest = b.call('LATENCY', 'LATEST')
            events = dict((e[0], e) for e in latest)
            assert_true(b'command' in events, latest)
            e = events[b'command']
            assert_true(e[3] >= 100 and e[2] >= 50, 'latest and max: %r' % e)
            hist = a.call('LATENCY', 'HISTORY', 'command')
            assert_true(1 <= len(hist) <= 2 and all(h[1] >= 50 for h in hist),
                        hist)
            graph = a.call('LATENCY', 'GRAPH', 'command')
            assert_true(b'command' in graph and b'*' in graph, graph)
            doctor = a.call('LATENCY', 'DOCTOR')
            assert_true(b'command' in doctor, doctor)
            assert_eq(a.call('LATENCY', 'RESET', 'nosuch'), 0)
            assert_eq(a.call('LATENCY', 'RESET', 'command'), 1)
            assert_eq(b.call('LATENCY', 'LATEST'), [], 'reset everywhere')
            assert_eq(a.call('CONFIG', 'SET', 'latency-monitor-threshold',
                             '0'), 'OK')
            assert_eq(a.call('DEBUG', 'SLEEP', '0.05'), 'OK')
            assert_eq(a.call('LATENCY', 'LATEST'), [], 'off at 0')
        finally:
            a.close()
            b.close()


def test_histogram_and_commandstats_summed():
    larder_only()
    with Server(workers=2) as s:
        a, b = two_workers(s)
        try:
            assert_eq(a.call('CONFIG', 'RESETSTAT'), 'OK')
            for i in range(7):
                a.call('SET', 'k%d' % i, 'v')
            for i in range(5):
                b.call('SET', 'k%d' % i, 'v')
                b.call('GET', 'k%d' % i)
            h = a.call('LATENCY', 'HISTOGRAM', 'set', 'get', 'nosuch')
            h = dict(zip(h[0::2], h[1::2]))
            st = dict(zip(h[b'set'][0::2], h[b'set'][1::2]))
            assert_eq(st[b'calls'], 12, 'SET calls of both workers')
            buckets = st[b'histogram_usec']
            counts = buckets[1::2]
            bounds = buckets[0::2]
            assert_eq(counts[-1], 12, 'cumulative, all calls in the last')
            assert_eq(counts, sorted(counts), 'cumulative')
            assert_true(all(x & (x - 1) == 0 for x in bounds),
                        'power-of-two bounds: %r' % bounds)
            b.hello(3)
            h3 = b.call('LATENCY', 'HISTOGRAM', 'get')
            assert_true(isinstance(h3, dict) and
                        isinstance(h3[b'get'][b'histogram_usec'], dict), h3)
            assert_eq(h3[b'get'][b'calls'], 5)
            stats = fields(a, 'commandstats')
            assert_true(stats['cmdstat_set'].startswith('calls=12,'),
                        stats['cmdstat_set'])
            assert_true(stats['cmdstat_get'].startswith('calls=5,'),
                        stats['cmdstat_get'])
        finally:
            a.close()
            b.close()


def test_calls_rejected_failed_like_redis():
    """The same commands on both servers give the same calls, rejected
    and failed counts and error counts (EXEC's queued errors included)."""
    with peer() as r, Server(workers=1) as s:
        script = [('SET', 's', 'v'), ('LPUSH', 's', 'x'), ('GET',),
                  ('GET', 's', 'x'), ('NOSUCH', 'x'), ('CONFIG', 'NOSUCH'),
                  ('MULTI',), ('INCR', 's'), ('SET', 'a', 'b'), ('EXEC',),
                  ('MULTI',), ('GET',), ('EXEC',), ('INCR', 's'),
                  ('HSET', 'h', 'f')]
        got = {}
        for name, srv in (('redis', r), ('larder', s)):
            with srv.client() as c:
                assert_eq(c.call('CONFIG', 'RESETSTAT'), 'OK')
                for args in script:
                    c.call(*args)
                st = fields(c, 'commandstats')
                errs = fields(c, 'errorstats')
                total = fields(c, 'stats')['total_error_replies']
            got[name] = (
                dict((k, re.sub(r'usec=\d+,usec_per_call=[\d.]+,', '', v))
                     for k, v in st.items() if 'info' not in k),
                errs, total)
        assert_eq(got['larder'][0], got['redis'][0], 'commandstats')
        assert_eq(got['larder'][1], got['redis'][1], 'errorstats')
        assert_eq(got['larder'][2], got['redis'][2], 'total_error_replies')


if __name__ == '__main__':
    main(globals())
