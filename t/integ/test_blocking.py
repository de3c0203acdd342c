"""Checks the blocking commands (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP), WAIT and CLIENT UNBLOCK: replies, errors and timeouts reply by reply against redis-server (RESP2 and RESP3), then waiters and pushers on different workers (placed by CLIENT INFO's worker= field): wake-ups across workers, FIFO order, every element delivered exactly once, timeouts, disconnects, pipelines, MULTI, RENAME and LMOVE onto waited keys, WATCH, the blocked_clients count, and kill -9 of the broker while clients block."""

import os
import shutil
import signal
import socket
import threading
import time

from larder_test import (IS_REDIS, Client, RespError, Server, Skip,
                         assert_eq, assert_error, assert_true, larder_only,
                         main, proc_alive, proc_children, short, wait_until)

WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
NOT_FLOAT = 'ERR timeout is not a float or out of range'
NEGATIVE = 'ERR timeout is negative'
BROKER_COMM = 'larder-broker'
QUIET = 0.3             # seconds without a reply: none is coming
SLOW = 10.0             # a reply that should come at once comes within this


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile]


def peer():
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    return RedisPeer()


def worker_of(c):
    """The worker index serving c, from CLIENT INFO (None on redis)."""
    if IS_REDIS:
        return None
    line = c.call('CLIENT', 'INFO').decode()
    for field in line.split():
        if field.startswith('worker='):
            return int(field[len('worker='):])
    raise AssertionError('no worker= in CLIENT INFO: %r' % line)


def on_workers(s, want):
    """Connections placed as `want` says: a list of worker labels, equal
    labels on one worker, different labels on different workers (say
    'AAB'). Returns the clients in that order."""
    pool, chosen = [], []
    try:
        labels = {}
        for label in want:
            while True:
                free = [x for x in pool if x[0] is not None]
                pick = None
                for i, (c, w) in enumerate(free):
                    if label in labels:
                        ok = w == labels[label]
                    else:
                        ok = w not in labels.values()
                    if ok:
                        pick = free[i]
                        break
                if pick is None:
                    assert_true(len(pool) < 200, 'connections placed as %r'
                                % want)
                    c = s.client()
                    pool.append([c, worker_of(c)])
                    continue
                labels.setdefault(label, pick[1])
                chosen.append(pick[0])
                pick[0] = None
                break
        return chosen
    finally:
        for c, w in pool:
            if c is not None:
                c.close()


def blocked(c):
    for line in c.call('INFO', 'clients').decode().split('\r\n'):
        if line.startswith('blocked_clients:'):
            return int(line.split(':')[1])
    raise AssertionError('no blocked_clients in INFO')


def wait_blocked(c, n):
    wait_until(lambda: blocked(c) == n, SLOW, '%d blocked clients' % n)


def read_within(c, t):
    """The reply arriving within t seconds, or '<none>'."""
    c.settimeout(t)
    try:
        return c.read_reply()
    except (socket.timeout, BlockingIOError):
        return '<none>'
    finally:
        c.settimeout(SLOW)


def broker_pid(srv):
    for p in proc_children(srv.pid):
        try:
            with open('/proc/%d/comm' % p) as f:
                if f.read().strip() == BROKER_COMM:
                    return p
        except OSError:
            pass
    return None


# --------------------------------------------------------------------------
# reply by reply against redis-server

# Commands whose replies do not depend on timing: data present, errors,
# and timeouts short enough to pass at once.
SCRIPT = [
    ('RPUSH', 'l1', 'a', 'b', 'c'),
    ('BLPOP', 'l1', '0'), ('BRPOP', 'l1', '0'),
    ('BLPOP', 'nokey', 'l1', 'l2', '1'),
    ('RPUSH', 'l1', 'x', 'y'), ('RPUSH', 'l2', 'z'),
    ('BRPOP', 'nokey', 'l2', 'l1', '1'),
    ('BLMOVE', 'l1', 'l3', 'LEFT', 'RIGHT', '0'),
    ('BLMOVE', 'l1', 'l3', 'left', 'right', '0'),
    ('BLMOVE', 'l3', 'l3', 'RIGHT', 'LEFT', '0.5'),
    ('BRPOPLPUSH', 'l3', 'l4', '0'), ('LRANGE', 'l4', '0', '-1'),
    ('RPUSH', 'm1', '1', '2', '3', '4'),
    ('BLMPOP', '0', '2', 'nokey', 'm1', 'LEFT'),
    ('BLMPOP', '0', '2', 'nokey', 'm1', 'RIGHT', 'COUNT', '2'),
    ('BLMPOP', '0', '1', 'm1', 'left', 'count', '100'),
    ('EXISTS', 'm1'),
    ('ZADD', 'z1', '1', 'a', '2', 'b', '3', 'c', '1.5', 'd'),
    ('BZPOPMIN', 'z1', '0'), ('BZPOPMAX', 'nokey', 'z1', '0'),
    ('BZMPOP', '0', '1', 'z1', 'MIN'),
    ('BZMPOP', '0', '2', 'nokey', 'z1', 'MAX', 'COUNT', '10'),
    ('SET', 's', 'v'),
    ('BLPOP', 'nokey', 's', '0'), ('BRPOP', 's', '0'),
    ('BLMOVE', 's', 'l9', 'LEFT', 'LEFT', '0'),
    ('RPUSH', 'l5', 'e'), ('BLMOVE', 'l5', 's', 'LEFT', 'LEFT', '0'),
    ('LRANGE', 'l5', '0', '-1'),
    ('BRPOPLPUSH', 's', 'l9', '0'), ('BLMPOP', '0', '1', 's', 'LEFT'),
    ('BZPOPMIN', 's', '0'), ('BZMPOP', '0', '1', 's', 'MIN'),
    ('RPUSH', 'l6', 'a'), ('BLPOP', 'l6', 's', '0'),
    ('BLPOP', 'nokey', '0.001'), ('BLPOP', 'nokey', '0.0001'),
    ('BLPOP', 'nokey', '1e-5'), ('BRPOP', 'nokey', 'nokey2', '0.01'),
    ('BLMOVE', 'nokey', 'd', 'LEFT', 'LEFT', '0.01'),
    ('BRPOPLPUSH', 'nokey', 'd', '0.01'),
    ('BLMPOP', '0.01', '1', 'nokey', 'LEFT'),
    ('BZPOPMIN', 'nokey', '0.01'), ('BZPOPMAX', 'nokey', '0.01'),
    ('BZMPOP', '0.01', '1', 'nokey', 'MIN'),
    ('EXISTS', 'd', 'nokey'),
]

TIMEOUTS = ['-1', 'abc', '', ' 1', '1 ', '1e400', '1e5000', '1e-5000',
            'nan', 'inf', '-inf', '+inf', 'Infinity', '9223372036854776',
            '92233720368547758', '1.7976931348623157e308', '-0.001x',
            '0x', '--1', '1..5', '-9223372036854775808', '18446744073709551616',
            '-2147483648', '-1e-400x']

ERRORS = [
    ('BLPOP',), ('BLPOP', 'k'), ('BRPOP', 'k'), ('BLMOVE', 'a', 'b', 'LEFT',
                                                 'LEFT'),
    ('BLMOVE', 'a', 'b', 'up', 'left', '0'), ('BLMOVE', 'a', 'b', 'left',
                                              'down', 'x'),
    ('BRPOPLPUSH', 'a', 'b'), ('BZPOPMIN', 'k'), ('BZMPOP', '0', '1', 'k'),
    ('BLMPOP', '0', '0', 'k', 'LEFT'), ('BLMPOP', '0', '-1', 'k', 'LEFT'),
    ('BLMPOP', '0', 'x', 'k', 'LEFT'), ('BLMPOP', '0', '2', 'k', 'LEFT'),
    ('BLMPOP', '0', '1', 'k', 'up'), ('BLMPOP', '0', '1', 'k', 'LEFT',
                                      'COUNT'),
    ('BLMPOP', '0', '1', 'k', 'LEFT', 'COUNT', '0'),
    ('BLMPOP', '0', '1', 'k', 'LEFT', 'COUNT', '-1'),
    ('BLMPOP', '0', '1', 'k', 'LEFT', 'COUNT', '1', 'COUNT', '2'),
    ('BLMPOP', '0', '1', 'k', 'LEFT', 'foo', '1'),
    ('BLMPOP', '0', '9223372036854775807', 'k', 'LEFT'),
    ('BLMPOP', '0', '2147483648', 'k', 'LEFT'),
    ('BLMPOP', '-1', '0', 'k', 'LEFT'), ('BLMPOP', 'x', 'x', 'k', 'LEFT'),
    ('BZMPOP', '0', '1', 'k', 'mid'), ('BZMPOP', '0', '1', 'k', 'MIN',
                                       'COUNT', '0'),
    ('BZMPOP', '0', '1', 'k', 'MIN', 'COUNT', '9223372036854775808'),
    ('WAIT', '0', '0'), ('WAIT', '-1', '0'), ('WAIT', '0', '-1'),
    ('WAIT', 'a', '0'), ('WAIT', '0', 'a'), ('WAIT', 'a', '-1'),
    ('WAIT', '0', '1.5'), ('WAIT', '9223372036854775808', '0'),
    ('WAIT', '0', '9223372036854775807'), ('WAIT', '0', '9223372036854775808'),
    ('WAIT', '0'), ('WAIT', '0', '0', '0'),
    ('CLIENT', 'UNBLOCK', '99999999'), ('CLIENT', 'UNBLOCK', 'abc'),
    ('CLIENT', 'UNBLOCK', '1', 'foo'), ('CLIENT', 'UNBLOCK', '1', 'TIMEOUT'),
    ('CLIENT', 'UNBLOCK', '1', 'error'), ('CLIENT', 'UNBLOCK', '-1'),
    ('CLIENT', 'UNBLOCK'), ('CLIENT', 'UNBLOCK', '1', 'error', 'x'),
    ('CLIENT', 'UNBLOCK', '9223372036854775808'),
]


def compare(s, r, commands, proto):
    with s.client() as a, r.client() as b:
        if proto == 3:
            a.hello(3)
            b.hello(3)
        for cmd in commands:
            got, want = a.call(*cmd), b.call(*cmd)
            assert_eq(got, want, 'RESP%d %s' % (proto, short(cmd)))


def test_replies_match_redis(s):
    with peer() as r:
        for proto in (2, 3):
            for srv in (s, r):
                with srv.client() as c:
                    c.call('FLUSHALL')
            compare(s, r, SCRIPT, proto)


def test_timeouts_and_errors_match_redis(s):
    with peer() as r:
        cmds = list(ERRORS)
        for t in TIMEOUTS:
            cmds += [('BLPOP', 'nokey', t), ('BRPOP', 'a', 'b', t),
                     ('BLMOVE', 'a', 'b', 'LEFT', 'LEFT', t),
                     ('BRPOPLPUSH', 'a', 'b', t), ('BLMPOP', t, '1', 'k',
                                                   'LEFT'),
                     ('BZPOPMIN', 'k', t), ('BZMPOP', t, '1', 'k', 'MIN')]
        compare(s, r, cmds, 2)


def test_inside_multi_the_non_blocking_form(s):
    """Inside MULTI a blocking command answers at once; a push inside
    EXEC wakes a waiter after it (compared with redis)."""
    with peer() as r:
        q = [('MULTI',), ('BLPOP', 'mk', '0'), ('BRPOP', 'mk', '0'),
             ('BLMOVE', 'mk', 'x', 'LEFT', 'LEFT', '0'),
             ('BRPOPLPUSH', 'mk', 'x', '0'), ('BLMPOP', '0', '1', 'mk',
                                               'LEFT'),
             ('BZPOPMIN', 'mk', '0'), ('BZPOPMAX', 'mk', '0'),
             ('BZMPOP', '0', '1', 'mk', 'MIN'), ('WAIT', '0', '0'),
             ('RPUSH', 'mk', 'v'), ('BLPOP', 'mk', '0'), ('EXEC',)]
        compare(s, r, q, 2)
        compare(s, r, q, 3)


def waiter_serves(srv, waiter, pusher, block_cmd, push_cmds, want):
    waiter.send(*block_cmd)
    wait_blocked(pusher, 1)
    for cmd in push_cmds:
        pusher.call(*cmd)
    assert_eq(read_within(waiter, SLOW), want, 'served %s' % short(block_cmd))


def test_wakeups_match_redis(s):
    """A waiter woken by pushes, moves, RENAME, EXEC; a type change leaves
    it blocked; BLMOVE into a key of another type errors when served and
    leaves the element: the replies and the keys after, side by side."""
    cases = [
        (('BLPOP', 'w', '0'), [('RPUSH', 'w', 'a', 'b')]),
        (('BRPOP', 'w1', 'w', '0'), [('LPUSH', 'w', 'a', 'b')]),
        (('BLPOP', 'w', '0'), [('RPUSH', 'src', 'v'), ('RENAME', 'src', 'w')]),
        (('BLPOP', 'w', '0'), [('RPUSH', 'src', 'v'),
                               ('LMOVE', 'src', 'w', 'LEFT', 'LEFT')]),
        (('BLPOP', 'w', '0'), [('MULTI',), ('RPUSH', 'w', '1'),
                               ('RPUSH', 'w', '2'), ('EXEC',)]),
        (('BLMOVE', 'w', 'd', 'RIGHT', 'LEFT', '0'),
         [('RPUSH', 'w', 'a', 'b')]),
        (('BRPOPLPUSH', 'w', 'w', '0'), [('RPUSH', 'w', 'a', 'b')]),
        (('BLMPOP', '0', '2', 'w1', 'w', 'LEFT', 'COUNT', '5'),
         [('RPUSH', 'w', 'a', 'b')]),
        (('BZPOPMAX', 'w', '0'), [('ZADD', 'w', '1', 'a', '2', 'b')]),
        (('BZMPOP', '0', '1', 'w', 'MIN', 'COUNT', '2'),
         [('ZADD', 'w', '1', 'a', '2', 'b', '3', 'c')]),
        (('BLPOP', 'w', '0.5'), [('SET', 'w', 'string')]),
        (('BLMOVE', 'w', 'd', 'LEFT', 'LEFT', '0'),
         [('SET', 'd', 'x'), ('RPUSH', 'w', 'e')]),
    ]

    def after(c):
        out = []
        for k in ('w', 'd', 'src'):
            t = c.call('TYPE', k)
            if t == 'list':
                out.append(c.call('LRANGE', k, '0', '-1'))
            elif t == 'zset':
                out.append(c.call('ZRANGE', k, '0', '-1', 'WITHSCORES'))
            else:
                out.append(t)
        return out

    with peer() as r:
        for proto in (2, 3):
            for block_cmd, pushes in cases:
                res = []
                for srv in (s, r):
                    with srv.client() as waiter, srv.client() as pusher:
                        if proto == 3:
                            waiter.hello(3)
                        pusher.call('FLUSHALL')
                        waiter.send(*block_cmd)
                        wait_blocked(pusher, 1)
                        for cmd in pushes:
                            pusher.call(*cmd)
                        res.append([read_within(waiter, SLOW), after(pusher)])
                assert_eq(res[0], res[1], 'RESP%d %s then %s'
                          % (proto, short(block_cmd), short(pushes)))


def test_pipeline_order_around_a_block(s):
    with s.client() as waiter, s.client() as pusher:
        waiter.send_raw(b''.join([
            b'*3\r\n$5\r\nBLPOP\r\n$2\r\npq\r\n$1\r\n0\r\n',
            b'*2\r\n$4\r\nECHO\r\n$5\r\nafter\r\n',
            b'*3\r\n$5\r\nBLPOP\r\n$2\r\npq\r\n$1\r\n0\r\n',
            b'*1\r\n$4\r\nPING\r\n']))
        wait_blocked(pusher, 1)
        assert_eq(read_within(waiter, QUIET), '<none>', 'nothing before')
        pusher.call('RPUSH', 'pq', 'one')
        assert_eq(waiter.read_reply(), [b'pq', b'one'])
        assert_eq(waiter.read_reply(), b'after')
        wait_blocked(pusher, 1)
        pusher.call('RPUSH', 'pq', 'two')
        assert_eq(waiter.read_reply(), [b'pq', b'two'])
        assert_eq(waiter.read_reply(), 'PONG')


def test_timeouts(s):
    with s.client() as c:
        for cmd, want in [(('BLPOP', 'tk', '0.2'), None),
                          (('BLMOVE', 'tk', 'd', 'LEFT', 'LEFT', '0.2'), None),
                          (('BZMPOP', '0.2', '1', 'tk', 'MIN'), None)]:
            t0 = time.monotonic()
            assert_eq(c.call(*cmd), want, short(cmd))
            took = time.monotonic() - t0
            assert_true(0.18 <= took < 2.0, '%s took %.3fs' % (cmd[0], took))
        c.hello(3)
        assert_eq(c.call('BLPOP', 'tk', '0.05'), None)
        with s.client() as other:
            assert_eq(blocked(other), 0)


def test_disconnect_while_blocked_is_forgotten(s):
    with s.client() as a, s.client() as b, s.client() as p:
        a.send('BLPOP', 'dk', '0')
        wait_blocked(p, 1)
        a.close()
        wait_blocked(p, 0)
        b.send('BLPOP', 'dk', '0')
        wait_blocked(p, 1)
        assert_eq(p.call('RPUSH', 'dk', 'x', 'y'), 2)
        assert_eq(b.read_reply(), [b'dk', b'x'])
        assert_eq(p.call('LRANGE', 'dk', '0', '-1'), [b'y'], 'the rest stays')


def test_watch_breaks_on_a_served_move(s):
    """A BLMOVE served into a WATCHed key is a write: the EXEC fails."""
    with s.client() as w, s.client() as mover, s.client() as p:
        mover.send('BLMOVE', 'wsrc', 'wdst', 'LEFT', 'LEFT', '0')
        wait_blocked(p, 1)
        assert_eq(w.call('WATCH', 'wdst'), 'OK')
        p.call('RPUSH', 'wsrc', 'v')
        assert_eq(mover.read_reply(), b'v')
        assert_eq(w.call('MULTI'), 'OK')
        assert_eq(w.call('GET', 'x'), 'QUEUED')
        assert_eq(w.call('EXEC'), None)


def test_client_unblock(s):
    with s.client() as a, s.client() as c:
        a.send('BLPOP', 'uk', '0')
        wait_blocked(c, 1)
        aid = None
        for line in c.call('CLIENT', 'LIST').decode().splitlines():
            if ' cmd=blpop ' in line:
                aid = int(line.split()[0].split('=')[1])
        assert_true(aid is not None, 'the blocked client in CLIENT LIST')
        assert_eq(c.call('CLIENT', 'UNBLOCK', aid), 1)
        assert_eq(a.read_reply(), None)
        assert_eq(c.call('CLIENT', 'UNBLOCK', aid), 0)
        a.send('BLMOVE', 'uk', 'x', 'LEFT', 'LEFT', '0')
        wait_blocked(c, 1)
        assert_eq(c.call('CLIENT', 'UNBLOCK', aid, 'ERROR'), 1)
        assert_error(a.read_reply(),
                     'UNBLOCKED client unblocked via CLIENT UNBLOCK')
        assert_eq(a.call('PING'), 'PONG')
        assert_eq(c.call('CLIENT', 'UNBLOCK', c.call('CLIENT', 'ID')), 0)


# --------------------------------------------------------------------------
# across workers

def test_wakeup_across_workers():
    larder_only()
    with Server(workers=2) as srv:
        waiter, pusher = on_workers(srv, 'AB')
        assert_true(worker_of(waiter) != worker_of(pusher), 'two workers')
        for i in range(20):
            waiter.send('BRPOP', 'xq', '0')
            wait_blocked(pusher, 1)
            pusher.call('LPUSH', 'xq', 'job%d' % i)
            assert_eq(waiter.read_reply(), [b'xq', b'job%d' % i])
        # A push on the waiter's own worker is served the same way.
        same, = on_workers(srv, 'A')
        waiter.send('BLPOP', 'xq', '0')
        wait_blocked(pusher, 1)
        same.call('RPUSH', 'xq', 'local')
        assert_eq(waiter.read_reply(), [b'xq', b'local'])
        same.close()
        waiter.close()
        pusher.close()


def test_fifo_across_workers():
    """Clients that blocked one after the other are served in that order,
    whatever worker each is on and whatever worker pushes."""
    larder_only()
    with Server(workers=3) as srv:
        cs = on_workers(srv, 'ABCABCAB')
        probe = cs[-1]
        waiters = cs[:-1]
        try:
            for rnd in range(3):
                for i, w in enumerate(waiters):
                    w.send('BLPOP', 'fifo', '0')
                    wait_blocked(probe, i + 1)
                for i in range(len(waiters)):
                    free = [probe] + waiters[:i]    # not blocked now
                    pusher = free[(i + rnd) % len(free)]
                    pusher.call('RPUSH', 'fifo', 'e%d' % i)
                    got = read_within(waiters[i], SLOW)
                    assert_eq(got, [b'fifo', b'e%d' % i],
                              'round %d: waiter %d (worker %d)'
                              % (rnd, i, worker_of(probe)))
                wait_blocked(probe, 0)
        finally:
            for c in cs:
                c.close()


def test_many_waiters_many_pushers_exactly_once():
    larder_only()
    nwait, npush, per = 12, 4, 250
    with Server(workers=3) as srv:
        cs = on_workers(srv, 'ABC' * ((nwait + npush) // 3 + 1))
        waiters, pushers = cs[:nwait], cs[nwait:nwait + npush]
        for c in cs[nwait + npush:]:
            c.close()
        got, errors = [], []
        lock = threading.Lock()
        total = npush * per

        def consume(c):
            try:
                while True:
                    r = c.call('BLPOP', 'mq', 'mq2', '2')
                    if r is None:
                        return
                    with lock:
                        got.append(r[1])
            except Exception as e:      # reported below
                errors.append(repr(e))

        def produce(c, tag):
            try:
                for i in range(per):
                    c.call('RPUSH', 'mq' if i % 3 else 'mq2', '%s:%d' % (tag, i))
            except Exception as e:      # reported below
                errors.append(repr(e))
        ts = [threading.Thread(target=consume, args=(w,)) for w in waiters]
        ts += [threading.Thread(target=produce, args=(p, 'p%d' % i))
               for i, p in enumerate(pushers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(120)
        assert_eq(errors, [])
        assert_eq(len(got), total, 'elements taken')
        assert_eq(sorted(got), sorted(b'p%d:%d' % (i, j) for i in range(npush)
                                      for j in range(per)), 'each once')
        with srv.client() as c:
            assert_eq(c.call('EXISTS', 'mq', 'mq2'), 0)
            assert_eq(blocked(c), 0)
        for c in cs[:nwait + npush]:
            c.close()


def test_waiter_gone_before_its_grant_loses_nothing():
    """Waiters that disconnect or time out while elements arrive: every
    element is taken by one live client or is still in the list."""
    larder_only()
    with Server(workers=2) as srv:
        live = on_workers(srv, 'ABA')
        pusher, = on_workers(srv, 'B')
        for rnd in range(10):
            doomed = on_workers(srv, 'ABAB')
            for c in live:
                c.send('BLPOP', 'gq', '0')
            for c in doomed:
                c.send('BLPOP', 'gq', '0' if rnd % 2 == 0 else '0.05')
            wait_blocked(pusher, len(live) + len(doomed))
            if rnd % 2 == 0:
                for c in doomed:
                    c.close()
                wait_blocked(pusher, len(live))
            pushed = [b'r%d:%d' % (rnd, i)
                      for i in range(len(live) + len(doomed))]
            pusher.call('RPUSH', 'gq', *pushed)
            taken = []
            for c in live:
                r = read_within(c, SLOW)
                assert_true(isinstance(r, list), 'live waiter served: %r'
                            % (r,))
                taken.append(r[1])
            if rnd % 2:
                for c in doomed:
                    r = read_within(c, SLOW)
                    if isinstance(r, list):
                        taken.append(r[1])
                    c.close()
            left = pusher.call('LRANGE', 'gq', '0', '-1')
            if rnd % 2 == 0:
                assert_eq(len(left), len(doomed), 'what the gone left stays')
            assert_eq(sorted(taken + left), sorted(pushed),
                      'round %d: each element taken once or kept' % rnd)
            pusher.call('DEL', 'gq')
            wait_blocked(pusher, 0)
        for c in live + [pusher]:
            c.close()


def test_unblock_and_list_across_workers():
    larder_only()
    with Server(workers=2) as srv:
        waiter, ctl = on_workers(srv, 'AB')
        waiter.send('BLPOP', 'ck', '0')
        wait_blocked(ctl, 1)
        lines = ctl.call('CLIENT', 'LIST').decode().splitlines()
        mine = [l for l in lines if ' cmd=blpop ' in l]
        assert_eq(len(mine), 1, 'the waiter of the other worker is listed')
        assert_true(' flags=b ' in mine[0], 'flag b: %s' % mine[0])
        wid = int(mine[0].split()[0].split('=')[1])
        assert_eq(ctl.call('CLIENT', 'UNBLOCK', wid, 'ERROR'), 1)
        assert_error(waiter.read_reply(),
                     'UNBLOCKED client unblocked via CLIENT UNBLOCK')
        waiter.close()
        ctl.close()


def test_kill_broker_while_clients_block():
    """kill -9 of the broker: blocked clients are still served (pushes on
    their own worker at once, others once the broker is back) or time
    out; nothing hangs."""
    larder_only()
    with Server(workers=2) as srv:
        a1, a2, b1, b2 = on_workers(srv, 'AABB')
        a1.send('BLPOP', 'kq', '0')
        b1.send('BLPOP', 'kq2', '0')
        a2.send('BLPOP', 'kq3', '0.5')
        wait_blocked(b2, 3)
        victim = broker_pid(srv)
        assert_true(victim, 'a broker process')
        os.kill(victim, signal.SIGKILL)
        wait_until(lambda: not proc_alive(victim), SLOW, 'broker to die')
        assert_eq(read_within(a2, SLOW), None, 'a timeout still fires')
        a2.call('RPUSH', 'kq', 'same-worker')
        assert_eq(read_within(a1, SLOW), [b'kq', b'same-worker'])
        b2.call('RPUSH', 'kq', 'other')       # nobody waits on it now
        a2.call('RPUSH', 'kq2', 'cross')      # b1's worker may be cut off
        assert_eq(read_within(b1, SLOW), [b'kq2', b'cross'],
                  'served once the broker is back')
        wait_until(lambda: broker_pid(srv) not in (None, victim), SLOW,
                   'a new broker')
        b1.send('BLPOP', 'kq4', '0')
        wait_blocked(b2, 1)
        a2.call('RPUSH', 'kq4', 'after')
        assert_eq(read_within(b1, SLOW), [b'kq4', b'after'])
        assert_eq(a2.call('LRANGE', 'kq', '0', '-1'), [b'other'])
        for c in (a1, a2, b1, b2):
            c.close()


def test_served_while_the_broker_is_away():
    """While the broker is away (dead, and the master not yet respawning
    it: here the master is stopped), a push on another worker still serves
    a blocked client within the away poll (0.1 s), in FIFO order on its
    worker, and every element exactly once; once the broker is back
    wake-ups go through it again."""
    larder_only()
    with Server(workers=2) as srv:
        a1, a2, b1 = on_workers(srv, 'AAB')
        victim = broker_pid(srv)
        assert_true(victim, 'a broker process')
        os.kill(srv.pid, signal.SIGSTOP)
        try:
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: not proc_alive(victim) or
                       open('/proc/%d/stat' % victim).read().split()[2] ==
                       'Z', SLOW, 'broker to die')
            a1.send('BLPOP', 'away', '0')
            a2.send('BLPOP', 'away', '0')
            wait_blocked(b1, 2)
            t0 = time.monotonic()
            assert_eq(b1.call('RPUSH', 'away', 'e1'), 1)
            assert_eq(read_within(a1, 2), [b'away', b'e1'],
                      'the oldest waiter, served with the broker away')
            took = time.monotonic() - t0
            assert_eq(read_within(a2, 0.3), '<none>', 'one element, one pop')
            assert_eq(b1.call('RPUSH', 'away', 'e2', 'e3'), 2)
            assert_eq(read_within(a2, 2), [b'away', b'e2'])
            assert_eq(b1.call('LRANGE', 'away', '0', '-1'), [b'e3'])
            assert_true(broker_pid(srv) in (None, victim),
                        'the broker is still away (not respawned) while '
                        'they were served')
            print('# served %.0f ms after the push with the broker away'
                  % (took * 1000))
        finally:
            os.kill(srv.pid, signal.SIGCONT)
        wait_until(lambda: broker_pid(srv) not in (None, victim), SLOW,
                   'a new broker')
        a1.send('BLPOP', 'back', '0')
        wait_blocked(b1, 1)
        assert_eq(b1.call('RPUSH', 'back', 'x'), 1)
        assert_eq(read_within(a1, SLOW), [b'back', b'x'])
        for c in (a1, a2, b1):
            c.close()


def test_fifo_when_the_older_registration_is_late():
    """The client that blocked first is served first even when its
    worker is slow to go on after the commit that blocked it (DEBUG
    REGISTER-SLEEP stalls it there for 0.5 s) and a younger waiter on
    another worker has registered and a push came meanwhile: the older
    waiter's registration is in the broker's socket before its commit, so
    before any push that commits after it."""
    larder_only()
    with Server(workers=3, args=['--enable-debug-command', 'yes']) as srv:
        setter, a, b, pusher = on_workers(srv, 'AABC')
        assert_error(setter.call('DEBUG', 'REGISTER-SLEEP', 'abc'),
                     'ERR value is not an integer or out of range')
        assert_error(setter.call('DEBUG', 'REGISTER-SLEEP', '-1'),
                     'ERR value is out of range')
        assert_error(setter.call('DEBUG', 'REGISTER-SLEEP', '60001'),
                     'ERR value is out of range')
        for rnd in range(3):
            assert_eq(setter.call('DEBUG', 'REGISTER-SLEEP', '500'), 'OK')
            t0 = time.monotonic()
            a.send('BLPOP', 'late', '0')
            wait_blocked(pusher, 1)
            b.send('BLPOP', 'late', '0')
            wait_blocked(pusher, 2)
            assert_eq(pusher.call('RPUSH', 'late', 'e1'), 1)
            pushed = time.monotonic() - t0
            assert_eq(read_within(a, SLOW), [b'late', b'e1'],
                      'round %d: the older waiter (pushed %.0f ms after it '
                      'blocked)' % (rnd, pushed * 1000))
            assert_eq(read_within(b, 0.2), '<none>', 'one element, one pop')
            assert_eq(pusher.call('RPUSH', 'late', 'e2'), 1)
            assert_eq(read_within(b, SLOW), [b'late', b'e2'])
            assert_true(pushed < 0.5, 'the push came while the older '
                        "waiter's worker slept (%.0f ms)" % (pushed * 1000))
            wait_blocked(pusher, 0)
        for c in (setter, a, b, pusher):
            c.close()


if __name__ == '__main__':
    main(globals(), workers=2)
