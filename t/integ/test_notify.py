"""Checks keyspace notifications: notify-keyspace-events (CONFIG SET/GET and its errors), the events every command family emits (their names, order, keys, keyspace and keyevent channels, "new", emptied keys' "del") and the replies, compared command by command with redis-server; commands inside EXEC; "expired" from lazy and active expiry; subscribers on every worker; delivery in commit order across workers; and the cost of the checks when notifications are off."""

import shutil
import threading
import time

from larder_test import (IS_REDIS, Client, Push, RespError, Server, Skip,
                         assert_eq, assert_error, assert_true, larder_only,
                         main, short, wait_until)

MARKER = '__notify_test_marker__'
# Commands whose array replies are sets (any order).
UNORDERED = ('SPOP', 'SMEMBERS')
SLOW = 10.0


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


def run_script(srv, script, flags='KEA', db=0, proto=2):
    """The replies of `script` and the events it caused, as (channel,
    message) pairs in arrival order; both clients speak RESP `proto` (in
    RESP3 the subscription's ack and every event must be pushes)."""
    with srv.client() as sub, srv.client() as c:
        if proto == 3:
            for x in (sub, c):
                x.call('HELLO', '3')
        assert_eq(c.call('CONFIG', 'SET', 'notify-keyspace-events', flags),
                  'OK')
        ack = sub.call('PSUBSCRIBE', '__key*__:*')
        assert_eq(list(ack), [b'psubscribe', b'__key*__:*', 1])
        if proto == 3:
            assert_true(isinstance(ack, Push), 'RESP3 ack is a push')
        if db:
            assert_eq(c.call('SELECT', db), 'OK')
        replies = [c.call(*cmd) for cmd in script]
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KEA')
        c.call('SELECT', 0)
        c.call('SET', MARKER, 'x')
        got = []
        sub.settimeout(SLOW)
        while True:
            m = sub.read_reply()
            assert_true(m[0] == b'pmessage', 'a pmessage: %r' % (m,))
            if proto == 3:
                assert_true(isinstance(m, Push), 'RESP3 event is a push')
            if m[2] == b'__keyevent@0__:set' and m[3] == MARKER.encode():
                break
            if m[2] == b'__keyspace@0__:' + MARKER.encode():
                continue
            got.append((m[2], m[3]))
        c.call('DEL', MARKER)
        c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
    return replies, got


def compare(s, r, script, flags='KEA', db=0, what=''):
    for srv in (s, r):
        with srv.client() as c:
            c.call('FLUSHALL')
    mine = run_script(s, script, flags, db)
    theirs = run_script(r, script, flags, db)
    for i, cmd in enumerate(script):
        a, b = mine[0][i], theirs[0][i]
        if cmd[0] in UNORDERED and isinstance(a, list):
            a, b = sorted(a), sorted(b)
        assert_eq(a, b, '%s reply of %s' % (what, short(cmd)))
    a, b = mine[1], theirs[1]
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or a[i] != b[i]:
            raise AssertionError(
                '%s: events differ at %d: larder %s, redis %s (before: %s)'
                % (what, i, short(a[i:i + 4]), short(b[i:i + 4]),
                   short(b[max(0, i - 3):i])))


STRINGS = [
    ('SET', 's1', 'v'), ('SET', 's1', 'w', 'EX', '100'),
    ('SET', 's1', 'w', 'KEEPTTL'), ('SET', 's1', 'x', 'GET'),
    ('SET', 's1', 'x', 'NX'), ('SET', 's2', 'x', 'XX'),
    ('SET', 's2', 'x', 'PX', '100000', 'NX'), ('SETNX', 's2', 'y'),
    ('SETNX', 's3', 'y'), ('SETEX', 's4', '100', 'v'),
    ('PSETEX', 's5', '100000', 'v'), ('GETSET', 's4', 'n'),
    ('GETSET', 's6', 'n'), ('GETDEL', 's6'), ('GETDEL', 's6'),
    ('GETEX', 's1', 'EX', '50'), ('GETEX', 's1', 'PERSIST'),
    ('GETEX', 's1', 'PERSIST'), ('GETEX', 's1'), ('GETEX', 'nokey', 'EX', '5'),
    ('MSET', 'm1', 'a', 'm2', 'b', 'm1', 'c'), ('MSETNX', 'm3', 'a', 'm4', 'b'),
    ('MSETNX', 'm3', 'a', 'm5', 'b'), ('INCR', 'n'), ('DECR', 'n'),
    ('INCRBY', 'n', '5'), ('DECRBY', 'n', '2'), ('INCRBYFLOAT', 'n', '1.5'),
    ('INCR', 's1'), ('APPEND', 'a', 'x'), ('APPEND', 'a', 'yz'),
    ('SETRANGE', 'a', '1', 'Q'), ('SETRANGE', 'a', '1', ''),
    ('SETRANGE', 'b', '0', ''), ('SETRANGE', 'b', '2', 'x'),
    ('GET', 's1'), ('SET', 's7', 'v', 'EX', '0'), ('GETEX', 's4', 'PXAT', '1'),
    ('STRLEN', 'a'), ('GETRANGE', 'a', '0', '-1'), ('MGET', 'a', 'b'),
]
# Not compared: SET with an expiry already past. Redis stores the key
# (events new, set, expire) and expires it when it is next read
# ("expired"); larder drops it at once (set, expire).


KEYS = [
    ('SET', 'a', '1'), ('SET', 'b', '2'), ('RPUSH', 'l', 'x'),
    ('DEL', 'a', 'nokey', 'l'), ('UNLINK', 'b', 'b'), ('SET', 'c', '3'),
    ('EXPIRE', 'c', '100'), ('PEXPIRE', 'c', '100000', 'XX'),
    ('EXPIRE', 'c', '100', 'NX'), ('EXPIREAT', 'c', '99999999999'),
    ('PEXPIREAT', 'c', '99999999999999'), ('PERSIST', 'c'), ('PERSIST', 'c'),
    ('EXPIRE', 'nokey', '10'), ('SET', 'd', '4'), ('EXPIRE', 'd', '0'),
    ('SET', 'd', '4'), ('EXPIRE', 'd', '-5'), ('SET', 'd', '4'),
    ('PEXPIREAT', 'd', '1'), ('SET', 'e', '5'), ('RENAME', 'e', 'f'),
    ('SET', 'g', '6'), ('RENAME', 'g', 'f'), ('RENAME', 'f', 'f'),
    ('RENAMENX', 'f', 'g'), ('SET', 'h', '7'), ('RENAMENX', 'h', 'g'),
    ('RENAME', 'nokey', 'x'), ('COPY', 'g', 'i'), ('COPY', 'g', 'i'),
    ('COPY', 'g', 'i', 'REPLACE'), ('COPY', 'g', 'i', 'DB', '2'),
    ('COPY', 'g', 'i', 'DB', '2', 'REPLACE'), ('RPUSH', 'l2', 'a', 'b'),
    ('RENAME', 'l2', 'l3'), ('COPY', 'l3', 'l4'), ('TYPE', 'l4'),
    ('EXISTS', 'l4'), ('TOUCH', 'l4'),
]

LISTS = [
    ('LPUSH', 'l', 'a', 'b'), ('RPUSH', 'l', 'c'), ('LPUSHX', 'l', 'd'),
    ('RPUSHX', 'l', 'e'), ('LPUSHX', 'nokey', 'x'), ('RPUSHX', 'nokey', 'x'),
    ('LPOP', 'l'), ('RPOP', 'l'), ('LPOP', 'l', '0'), ('LPOP', 'l', '2'),
    ('RPOP', 'l', '5'), ('LPOP', 'l'), ('RPUSH', 'l', '1', '2', '3', '2'),
    ('LSET', 'l', '0', 'x'), ('LSET', 'l', '9', 'x'),
    ('LINSERT', 'l', 'BEFORE', '2', 'y'), ('LINSERT', 'l', 'AFTER', 'zz', 'y'),
    ('LREM', 'l', '0', '2'), ('LREM', 'l', '0', 'nope'),
    ('LTRIM', 'l', '0', '1'), ('LTRIM', 'l', '0', '-1'),
    ('LTRIM', 'l', '5', '3'), ('RPUSH', 'a', '1', '2'),
    ('LMOVE', 'a', 'b', 'LEFT', 'RIGHT'), ('RPOPLPUSH', 'a', 'b'),
    ('RPOPLPUSH', 'a', 'b'), ('LMOVE', 'b', 'b', 'LEFT', 'LEFT'),
    ('LMPOP', '2', 'nokey', 'b', 'RIGHT', 'COUNT', '5'), ('RPUSH', 'c', 'x'),
    ('LREM', 'c', '1', 'x'), ('RPUSH', 'c', 'x', 'y'), ('BLPOP', 'c', '0'),
    ('BRPOP', 'nokey', 'c', '0'), ('RPUSH', 'c', 'x'),
    ('BLMOVE', 'c', 'd', 'RIGHT', 'LEFT', '0'), ('BRPOPLPUSH', 'd', 'd', '0'),
    ('BLMPOP', '0', '1', 'd', 'LEFT'), ('LLEN', 'd'),
]

SETS = [
    ('SADD', 's', 'a', 'b', 'c'), ('SADD', 's', 'a'), ('SREM', 's', 'x'),
    ('SREM', 's', 'a', 'b'), ('SPOP', 's'), ('SPOP', 's', '0'),
    ('SADD', 's', 'a', 'b'), ('SPOP', 's', '5'),
    ('SADD', 's', 'a'), ('SADD', 's1', 'only'), ('SPOP', 's1', '1'),
    ('SMOVE', 's', 't', 'nope'), ('SMEMBERS', 's'),
    ('SADD', 'u', 'p'), ('SMOVE', 'u', 't', 'p'), ('SADD', 'u', 'q'),
    ('SADD', 't', 'q'), ('SMOVE', 'u', 't', 'q'), ('SMOVE', 't', 't', 'q'),
    ('SADD', 'x', '1', '2'), ('SADD', 'y', '2', '3'),
    ('SINTERSTORE', 'd1', 'x', 'y'), ('SUNIONSTORE', 'd2', 'x', 'y'),
    ('SDIFFSTORE', 'd3', 'x', 'y'), ('SINTERSTORE', 'd1', 'x', 'nokey'),
    ('SINTERSTORE', 'd9', 'x', 'nokey'), ('SDIFFSTORE', 'd2', 'x', 'x'),
    ('SREM', 'x', '1', '2'), ('SCARD', 'x'),
]

HASHES = [
    ('HSET', 'h', 'a', '1', 'b', '2'), ('HSET', 'h', 'a', '1'),
    ('HMSET', 'h', 'c', '3'), ('HSETNX', 'h', 'a', 'x'),
    ('HSETNX', 'h', 'd', '4'), ('HDEL', 'h', 'nope'), ('HDEL', 'h', 'a', 'b'),
    ('HINCRBY', 'h', 'n', '5'), ('HINCRBYFLOAT', 'h', 'f', '1.5'),
    ('HINCRBY', 'h', 'c', 'x'), ('HDEL', 'h', 'c', 'd', 'n', 'f'),
    ('HSETNX', 'g', 'a', '1'), ('HINCRBY', 'g2', 'a', '1'), ('HLEN', 'h'),
]

ZSETS = [
    ('ZADD', 'z', '1', 'a', '2', 'b'), ('ZADD', 'z', '1', 'a'),
    ('ZADD', 'z', '5', 'a'), ('ZADD', 'z', 'NX', '9', 'a'),
    ('ZADD', 'z', 'XX', '9', 'nope'), ('ZADD', 'z', 'INCR', '1', 'a'),
    ('ZADD', 'z', 'CH', '3', 'c'), ('ZINCRBY', 'z', '2', 'b'),
    ('ZREM', 'z', 'nope'), ('ZREM', 'z', 'c'), ('ZADD', 'z', '7', 'd', '8', 'e'),
    ('ZREMRANGEBYSCORE', 'z', '100', '200'), ('ZREMRANGEBYSCORE', 'z', '7', '7'),
    ('ZREMRANGEBYRANK', 'z', '0', '0'), ('ZREMRANGEBYRANK', 'z', '50', '60'),
    ('ZADD', 'lx', '0', 'p', '0', 'q'), ('ZREMRANGEBYLEX', 'lx', '[p', '[p'),
    ('ZREMRANGEBYLEX', 'lx', '[a', '[b'), ('ZREMRANGEBYLEX', 'lx', '-', '+'),
    ('ZPOPMIN', 'z'), ('ZPOPMAX', 'z', '0'), ('ZPOPMAX', 'z', '2'),
    ('ZPOPMIN', 'z', '9'), ('ZPOPMIN', 'nokey'),
    ('ZADD', 'y', '1', 'a', '2', 'b'), ('ZADD', 'x', '2', 'b', '3', 'c'),
    ('ZUNIONSTORE', 'u', '2', 'x', 'y'), ('ZINTERSTORE', 'i', '2', 'x', 'y'),
    ('ZDIFFSTORE', 'd', '2', 'x', 'y'), ('ZINTERSTORE', 'i', '2', 'x', 'nokey'),
    ('ZINTERSTORE', 'i9', '2', 'x', 'nokey'),
    ('ZRANGESTORE', 'r', 'x', '0', '-1'), ('ZRANGESTORE', 'r', 'x', '5', '9'),
    ('ZRANGESTORE', 'r9', 'x', '5', '9'), ('ZMPOP', '1', 'x', 'MIN'),
    ('BZPOPMAX', 'x', '0'), ('BZMPOP', '0', '1', 'y', 'MAX', 'COUNT', '9'),
    ('ZADD', 'w', '1', 'a'), ('BZPOPMIN', 'w', '0'), ('ZCARD', 'w'),
]

TRANSACTIONS = [
    ('MULTI',), ('SET', 'a', '1'), ('RPUSH', 'l', 'x'), ('DEL', 'a'),
    ('EXEC',), ('MULTI',), ('SET', 'b', '1'), ('DISCARD',),
    ('SET', 'c', '1'), ('WATCH', 'c'), ('MULTI',), ('SET', 'c', '2'),
    ('EXEC',), ('WATCH', 'c'), ('SET', 'c', '3'), ('MULTI',),
    ('SET', 'c', '4'), ('EXEC',),
]


def test_config_flags_match_redis(s):
    with peer() as r, s.client() as a, r.client() as b:
        for flags in ['KEA', 'Kg$lshzxetdnm', 'Eg', 'xyz', 'g', 'AKEnm', 'gA',
                      '', 'KE', 'K$', 'El', 'A', 'Ex', 'nK', 'mK', 'q',
                      'KEA ', 'kea', 'KEAA', 'Ag$lshzxeKEtmdn']:
            got = [a.call('CONFIG', 'SET', 'notify-keyspace-events', flags),
                   a.call('CONFIG', 'GET', 'notify-keyspace-events')]
            want = [b.call('CONFIG', 'SET', 'notify-keyspace-events', flags),
                    b.call('CONFIG', 'GET', 'notify-keyspace-events')]
            assert_eq(got, want, 'flags %r' % flags)
        a.call('CONFIG', 'SET', 'notify-keyspace-events', '')


def test_string_events_match_redis(s):
    with peer() as r:
        compare(s, r, STRINGS, 'KEA', what='KEA')
        compare(s, r, STRINGS, 'K$', what='K$')
        compare(s, r, STRINGS, 'Eg', what='Eg')
        compare(s, r, STRINGS, 'KEAn', what='KEAn')
        compare(s, r, STRINGS, 'E$', db=3, what='db 3')


def test_key_events_match_redis(s):
    with peer() as r:
        compare(s, r, KEYS, 'KEA', what='KEA')
        compare(s, r, KEYS, 'KEAn', what='KEAn')
        compare(s, r, KEYS, 'Kg', what='Kg')


def test_list_events_match_redis(s):
    with peer() as r:
        compare(s, r, LISTS, 'KEA', what='KEA')
        compare(s, r, LISTS, 'El', what='El')
        compare(s, r, LISTS, 'KEgn', what='KEgn')


def test_set_events_match_redis(s):
    with peer() as r:
        compare(s, r, SETS, 'KEA', what='KEA')
        compare(s, r, SETS, 'Ks', what='Ks')


def test_hash_events_match_redis(s):
    with peer() as r:
        compare(s, r, HASHES, 'KEA', what='KEA')
        compare(s, r, HASHES, 'Eh', what='Eh')


def test_zset_events_match_redis(s):
    with peer() as r:
        compare(s, r, ZSETS, 'KEA', what='KEA')
        compare(s, r, ZSETS, 'Kz', what='Kz')


def test_events_inside_exec_match_redis(s):
    with peer() as r:
        compare(s, r, TRANSACTIONS, 'KEA', what='KEA')


def collect(sub, until, deadline=SLOW):
    """pmessages until `until(msgs)` is true (or the deadline passes)."""
    out = []
    end = time.time() + deadline
    while not until(out) and time.time() < end:
        sub.settimeout(max(0.05, end - time.time()))
        try:
            m = sub.read_reply()
        except OSError:
            break
        out.append((m[2], m[3]))
    sub.settimeout(SLOW)
    return out


def test_expired_exactly_once(s):
    """Keys expiring while readers race the reaper: one "expired" event
    per key, whichever of lazy and active expiry deletes it."""
    n = 40
    with s.client() as sub, s.client() as c:
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'Ex')
        sub.call('SUBSCRIBE', '__keyevent@0__:expired')
        for i in range(n):
            c.call('SET', 'ex%d' % i, 'v', 'PX', 100 + i % 5)
        time.sleep(0.12)
        for i in range(0, n, 2):
            c.call('GET', 'ex%d' % i)           # lazy expiry for half
        got = []
        end = time.time() + SLOW
        while len(got) < n and time.time() < end:
            got.append(sub.read_reply()[2])
        sub.settimeout(0.5)
        try:
            extra = sub.read_reply()
        except OSError:
            extra = None
        c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
    assert_eq(sorted(got), sorted(b'ex%d' % i for i in range(n)),
              'one expired event per key')
    assert_eq(extra, None, 'no second event')


def test_expired_by_the_reaper(s):
    """Nobody reads the key: the reaper's expiry is an event too."""
    with s.client() as sub, s.client() as c:
        c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KEA')
        sub.call('PSUBSCRIBE', '__key*__:*')
        c.call('SET', 'rk', 'v', 'PX', '50')
        got = collect(sub, lambda m: (b'__keyevent@0__:expired', b'rk') in m)
        c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
    assert_eq(got, [(b'__keyspace@0__:rk', b'set'),
                    (b'__keyevent@0__:set', b'rk'),
                    (b'__keyspace@0__:rk', b'expire'),
                    (b'__keyevent@0__:expire', b'rk'),
                    (b'__keyspace@0__:rk', b'expired'),
                    (b'__keyevent@0__:expired', b'rk')])


def test_lazy_expiry_matches_redis(s):
    """A read of an expired key: the same events as redis-server."""
    script_a = [('SET', 'lz', 'v', 'PX', '100'), ('HSET', 'lh', 'f', 'v'),
                ('PEXPIRE', 'lh', '100')]
    script_b = [('GET', 'lz'), ('HGET', 'lh', 'f'), ('EXISTS', 'lz', 'lh')]
    with peer() as r:
        res = []
        for srv in (s, r):
            with srv.client() as sub, srv.client() as c:
                c.call('FLUSHALL')
                c.call('CONFIG', 'SET', 'notify-keyspace-events', 'KEA')
                sub.call('PSUBSCRIBE', '__key*__:*')
                for cmd in script_a:
                    c.call(*cmd)
                time.sleep(0.3)
                replies = [c.call(*cmd) for cmd in script_b]
                got = collect(sub, lambda m: len(m) >= 12)
                c.call('CONFIG', 'SET', 'notify-keyspace-events', '')
                res.append((replies, sorted(got[6:]), got[:6]))
        assert_eq(res[0], res[1])


def worker_of(c):
    for f in c.call('CLIENT', 'INFO').decode().split():
        if f.startswith('worker='):
            return int(f.split('=')[1])
    return None


def on_workers(srv, n):
    """n clients on n different workers."""
    pool, got = [], {}
    try:
        while len(got) < n:
            assert_true(len(pool) < 200, 'clients on %d workers' % n)
            c = srv.client()
            pool.append(c)
            w = worker_of(c)
            if w not in got:
                got[w] = c
        return list(got.values())
    finally:
        for c in pool:
            if c not in got.values():
                c.close()


def test_commit_order_across_workers():
    """Writers on two workers write at once; subscribers on every worker
    see the events in the order the writes committed (which a list the
    same transactions append to records)."""
    larder_only()
    per = 300
    with Server(workers=3) as srv:
        subs = on_workers(srv, 3)
        writers = on_workers(srv, 2)
        try:
            writers[0].call('CONFIG', 'SET', 'notify-keyspace-events', 'E$')
            for c in subs:
                c.call('SUBSCRIBE', '__keyevent@0__:set')
            errors = []

            def write(c, tag):
                try:
                    for i in range(per):
                        r = c.pipeline([('MULTI',),
                                        ('RPUSH', 'log', '%s:%d' % (tag, i)),
                                        ('SET', '%s:%d' % (tag, i), 'x'),
                                        ('EXEC',)])
                        if r[-1] != [r[-1][0], 'OK']:
                            errors.append(r)
                except Exception as e:      # reported below
                    errors.append(repr(e))
            ts = [threading.Thread(target=write, args=(c, 'w%d' % i))
                  for i, c in enumerate(writers)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(120)
            assert_eq(errors, [])
            with srv.client() as c:
                log = c.call('LRANGE', 'log', '0', '-1')
            assert_eq(len(log), 2 * per)
            for c in subs:
                got = [c.read_reply()[2] for _ in range(2 * per)]
                assert_eq(got, log, 'events in commit order')
            writers[0].call('CONFIG', 'SET', 'notify-keyspace-events', '')
        finally:
            for c in subs + writers:
                c.close()


def test_events_without_the_broker():
    """kill -9 of the broker: a subscriber on the writer's worker still
    gets the events (worker-local), and every worker again once the
    broker is back."""
    larder_only()
    import os
    import signal
    from larder_test import proc_alive, proc_children
    with Server(workers=2) as srv:
        a, b = on_workers(srv, 2)
        w = a
        sub_same, sub_other = srv.client(), srv.client()
        try:
            while worker_of(sub_same) != worker_of(w):
                sub_same.close()
                sub_same = srv.client()
            while worker_of(sub_other) == worker_of(w):
                sub_other.close()
                sub_other = srv.client()
            w.call('CONFIG', 'SET', 'notify-keyspace-events', 'E$')
            for c in (sub_same, sub_other):
                c.call('SUBSCRIBE', '__keyevent@0__:set')
            broker = [p for p in proc_children(srv.pid)
                      if open('/proc/%d/comm' % p).read().strip() ==
                      'larder-broker'][0]
            os.kill(broker, signal.SIGKILL)
            wait_until(lambda: not proc_alive(broker), SLOW, 'broker gone')
            w.call('SET', 'during', 'x')
            assert_eq(sub_same.read_reply(), [b'message',
                                              b'__keyevent@0__:set',
                                              b'during'])

            def flows():
                w.call('SET', 'probe', 'x')
                sub_other.settimeout(0.3)
                try:
                    while True:
                        m = sub_other.read_reply()
                        if m[2] == b'probe':
                            return True
                except OSError:
                    return False
                finally:
                    sub_other.settimeout(SLOW)
            wait_until(flows, SLOW, 'events to reach the other worker')
            w.call('CONFIG', 'SET', 'notify-keyspace-events', '')
        finally:
            for c in (a, b, sub_same, sub_other):
                c.close()


if __name__ == '__main__':
    main(globals(), workers=2)
