"""Checks MIGRATE from larder and from redis-server to either (COPY, REPLACE, KEYS, AUTH, AUTH2, destination database, every type and TTLs), its replies against redis-server's as the source for the same target and arguments (NOKEY, target errors, IOERR on refused connections and on a silent target within the timeout, syntax and numeric errors), and that a moved key is gone from the source unless COPY."""

import socket
import threading
import time

from dump_data import every_encoding, load, peer, snapshot, ttl_class
from larder_test import (RespError, Server, assert_eq, assert_true,
                         free_port, larder_only, main)

NUMERIC_EDGES = [b'0', b'-1', b'1', b'2147483647', b'2147483648',
                 b'-2147483648', b'-2147483649', b'9223372036854775807',
                 b'-9223372036854775808', b'9223372036854775808',
                 b'18446744073709551616', b'nan', b'inf', b'-inf', b'abc',
                 b'', b'1.5', b' 1', b'0x10', b'65536', b'99999']
SMALL = (b'str:int', b'str:lzf', b'list:small', b'list:nodes', b'set:intset',
         b'set:big', b'zset:small', b'zset:big', b'hash:small', b'hash:big')


def keyset():
    return [(n, c) for n, c in every_encoding() if n in SMALL]


def names():
    return [n for n, _ in keyset()]


class Silent:
    """A TCP port that accepts and reads but never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(('127.0.0.1', 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.stopped = False
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        self.sock.settimeout(0.2)
        while not self.stopped:
            try:
                c, _ = self.sock.accept()
                self.conns.append(c)
            except OSError:
                continue

    def close(self):
        self.stopped = True
        self.t.join()
        for c in self.conns:
            c.close()
        self.sock.close()


def migrate_all(src, dst_port, db, *opts, keys=None):
    return src.call('MIGRATE', '127.0.0.1', dst_port, '', db, 5000, *opts,
                    'KEYS', *(keys or names()))


def test_larder_to_redis_every_type(larder):
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(lc, keyset())
        load(rc, keyset())              # the reference copy, in db 0
        for i, k in enumerate(names()):
            if i % 2:
                lc.call('PEXPIRE', k, 3600000)
                rc.call('PEXPIRE', k, 3600000)
        for k in names():
            assert_eq(lc.call('MIGRATE', '127.0.0.1', r.port, k, 1, 5000),
                      'OK', 'MIGRATE %r' % k)
            assert_eq(lc.call('EXISTS', k), 0, 'gone from the source')
            want = snapshot(rc, k)
            ttl = ttl_class(rc, k)
            rc.call('SELECT', 1)
            assert_eq(snapshot(rc, k), want, 'moved %r' % k)
            assert_eq(ttl_class(rc, k), ttl, 'TTL of %r' % k)
            rc.call('SELECT', 0)


def test_redis_to_larder_and_back(larder):
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(rc, keyset())
        want = {k: snapshot(rc, k) for k in names()}
        assert_eq(migrate_all(rc, larder.port, 2, 'COPY'), 'OK')
        lc.call('SELECT', 2)
        for k in names():
            assert_eq(snapshot(lc, k), want[k], 'in larder %r' % k)
        # larder to larder, then back to redis with REPLACE.
        with Server(workers=2) as other, other.client() as oc:
            assert_eq(migrate_all(lc, other.port, 0), 'OK')
            assert_eq(lc.call('DBSIZE'), 0, 'moved out of larder')
            for k in names():
                assert_eq(snapshot(oc, k), want[k], 'in the other %r' % k)
            assert_eq(migrate_all(oc, r.port, 0, 'REPLACE'), 'OK')
            assert_eq(oc.call('DBSIZE'), 0)
        for k in names():
            assert_eq(snapshot(rc, k), want[k], 'back in redis %r' % k)


def both_sources(lc, rc, target_reset, *args):
    """The same MIGRATE from larder and from redis-server (each from the
    same source data, to the same target state): equal replies and equal
    source state afterwards."""
    replies = []
    for c in (lc, rc):
        target_reset()
        c.call('FLUSHALL')
        c.call('SET', 'a', '1')
        c.call('RPUSH', 'b', 'x', 'y')
        c.call('SET', 'c', '3', 'PX', 100000)
        replies.append(c.call(*args))
        replies.append(sorted(c.call('KEYS', '*')))
    assert_eq(replies[0], replies[2], 'reply to %r' % (args[3:],))
    assert_eq(replies[1], replies[3], 'source keys after %r' % (args[3:],))
    return replies[0]


def test_replies_match_redis(larder):
    with peer() as r, peer(extra=['--requirepass', 'sekret']) as t, \
            larder.client() as lc, r.client() as rc, t.client() as tc:
        assert_eq(tc.call('AUTH', 'sekret'), 'OK')
        assert_eq(tc.call('ACL', 'SETUSER', 'mover', 'on', '>pw', '~*',
                          '+@all'), 'OK')

        def reset(pre=()):
            def f():
                tc.call('FLUSHALL')
                for cmd in pre:
                    tc.call(*cmd)
            return f
        h, p = '127.0.0.1', t.port
        cases = [
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000]),               # NOAUTH
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'AUTH', 'bad']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'AUTH', 'sekret']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'AUTH2', 'mover',
                       'pw']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'AUTH2', 'mover',
                       'no']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'COPY', 'AUTH',
                       'sekret']),
            (reset([['SET', 'a', 'there']]),
             ['MIGRATE', h, p, 'a', 0, 5000, 'AUTH', 'sekret']),   # BUSYKEY
            (reset([['SET', 'a', 'there']]),
             ['MIGRATE', h, p, 'a', 0, 5000, 'REPLACE', 'AUTH', 'sekret']),
            (reset([['SET', 'b', 'there']]),
             ['MIGRATE', h, p, '', 0, 5000, 'AUTH', 'sekret', 'KEYS', 'a',
              'b', 'c', 'nosuch']),                                # partial
            (reset(), ['MIGRATE', h, p, '', 3, 5000, 'AUTH', 'sekret',
                       'KEYS', 'a', 'b', 'c']),
            (reset(), ['MIGRATE', h, p, '', 99, 5000, 'AUTH', 'sekret',
                       'KEYS', 'a']),                              # SELECT
            (reset(), ['MIGRATE', h, p, 'nosuch', 0, 5000]),          # NOKEY
            (reset(), ['MIGRATE', h, p, '', 0, 5000, 'KEYS', 'x', 'y']),
            (reset(), ['MIGRATE', h, p, '', 0, 5000, 'KEYS']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'KEYS', 'b']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'BOGUS']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'AUTH']),
            (reset(), ['MIGRATE', h, p, 'a', 0, 5000, 'AUTH2', 'x']),
            (reset(), ['MIGRATE', h, p, 'a', 'abc', 5000]),
            (reset(), ['MIGRATE', h, p, 'a', 0, 'abc']),
            (reset(), ['MIGRATE', h, p, 'a', 0, '1.5']),
            (reset(), ['MIGRATE', h, p, 'a', '9223372036854775808', 5000]),
            (reset(), ['MIGRATE', h, p, 'a', 0]),
            (reset(), ['MIGRATE', h, p, 'a', 0, 0, 'AUTH', 'sekret']),
            (reset(), ['MIGRATE', h, p, 'a', 0, -5, 'AUTH', 'sekret']),
        ]
        for target_reset, args in cases:
            both_sources(lc, rc, target_reset, *args)
        # Every numeric edge in the destination database, the timeout
        # and the port (Redis takes the port as C's atoi would).
        for v in NUMERIC_EDGES:
            both_sources(lc, rc, reset(), 'MIGRATE', h, p, 'a', v, 5000,
                         'COPY', 'AUTH', 'sekret')
            if v != b'1':       # 1 ms: whether the target makes it varies
                both_sources(lc, rc, reset(), 'MIGRATE', h, p, 'a', 0, v,
                             'COPY', 'AUTH', 'sekret')
            both_sources(lc, rc, reset(), 'MIGRATE', h, v, 'a', 0, 1000,
                         'COPY', 'AUTH', 'sekret')
        # A refused connection, and a target that never answers.
        closed = free_port()
        both_sources(lc, rc, reset(), 'MIGRATE', h, closed, 'a', 0, 1000)
        silent = Silent()
        try:
            for c in (lc, rc):
                c.call('SET', 'a', 1)
            t0 = time.time()
            got = lc.call('MIGRATE', h, silent.port, 'a', 0, 300)
            took = time.time() - t0
            want = rc.call('MIGRATE', h, silent.port, 'a', 0, 300)
            assert_eq(got, want, 'silent target')
            assert_true(isinstance(got, RespError) and
                        got.message.startswith('IOERR'), repr(got))
            assert_true(0.25 < took < 5, 'timeout honoured (%.2fs)' % took)
            assert_eq(lc.call('EXISTS', 'a'), 1, 'kept after IOERR')
        finally:
            silent.close()


def test_migrate_keeps_a_key_written_meanwhile(larder):
    """The key is deleted only if it is still the version sent: one that
    another client rewrote while MIGRATE waited for the target is kept
    (the target has the older value)."""
    larder_only()
    with peer() as r, larder.client() as lc, larder.client() as other:
        lc.call('SET', 'k', 'old')
        # MIGRATE to a redis that is paused: the other client writes the
        # key while MIGRATE waits for the reply.
        with r.client() as rc:
            rc.call('CLIENT', 'PAUSE', 700, 'ALL')
            th = threading.Thread(target=lambda: (time.sleep(0.2),
                                                  other.call('SET', 'k',
                                                             'new')))
            th.start()
            assert_eq(lc.call('MIGRATE', '127.0.0.1', r.port, 'k', 0, 5000),
                      'OK')
            th.join()
            assert_eq(rc.call('GET', 'k'), b'old', 'target got the old')
        assert_eq(lc.call('GET', 'k'), b'new', 'newer write kept')


if __name__ == '__main__':
    main(globals())
