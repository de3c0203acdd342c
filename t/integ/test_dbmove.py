"""Checks COPY (DB, REPLACE), MOVE and SWAPDB against redis-server 7.0 reply by reply for every type and encoding, with TTLs and numeric edge arguments, RESP2 and RESP3; SWAPDB's effect on WATCH as Redis has it; and on larder, that a SWAPDB is atomic for readers on other workers and that the shared cache follows it."""

import threading
import time

from dump_data import every_encoding, load, peer, snapshot, ttl_class
from larder_test import (Client, Server, assert_eq, assert_true,
                         larder_only, main)

NUMERIC_EDGES = [b'0', b'-1', b'1', b'15', b'16', b'2147483647',
                 b'2147483648', b'-2147483648', b'-2147483649',
                 b'9223372036854775807', b'-9223372036854775808',
                 b'18446744073709551616', b'nan', b'inf', b'abc', b'',
                 b'1.0', b' 1']


def both(lc, rc, *args):
    a, b = lc.call(*args), rc.call(*args)
    assert_eq(a, b, 'reply to %r' % (args[:4],))
    return a


def same_keys(lc, rc, keys, dbs):
    for db in dbs:
        lc.call('SELECT', db)
        rc.call('SELECT', db)
        for k in keys:
            assert_eq(snapshot(lc, k), snapshot(rc, k), 'db %d %r' % (db, k))
            assert_eq(ttl_class(lc, k), ttl_class(rc, k),
                      'TTL of db %d %r' % (db, k))
        assert_eq(lc.call('DBSIZE'), rc.call('DBSIZE'), 'DBSIZE %d' % db)
    lc.call('SELECT', 0)
    rc.call('SELECT', 0)


SMALL = (b'str:int', b'str:short', b'str:lzf', b'list:small', b'list:ints',
         b'set:intset', b'set:str', b'zset:small', b'zset:129', b'hash:small',
         b'hash:65')


def keyset(small):
    return [(n, cmds) for n, cmds in every_encoding()
            if not small or n in SMALL]


def names(small=False):
    return [n for n, _ in keyset(small)]


def setup_pair(lc, rc, small=False):
    for c in (lc, rc):
        load(c, keyset(small))
        for i, k in enumerate(names(small)):
            if i % 3 == 0:
                assert_eq(c.call('PEXPIRE', k, 3600000 + i), 1, 'TTL')


def test_copy_every_type(larder):
    with peer() as r, larder.client() as lc, r.client() as rc:
        setup_pair(lc, rc)
        for k in names():
            both(lc, rc, 'COPY', k, k + b':c')
            both(lc, rc, 'COPY', k, k + b':c')             # exists: 0
            both(lc, rc, 'COPY', k, k + b':c', 'REPLACE')
            both(lc, rc, 'COPY', k, k, 'DB', 1)
            both(lc, rc, 'COPY', k, k, 'DB', 1)             # exists: 0
            both(lc, rc, 'COPY', k, k + b':x', 'db', '2', 'replace')
            both(lc, rc, 'COPY', k, k)                      # same object
            both(lc, rc, 'COPY', k, k, 'DB', 0)
        # Changing the copy leaves the source alone.
        both(lc, rc, 'RPUSH', 'list:small:c', 'more')
        both(lc, rc, 'HSET', 'hash:small:c', 'new', 'v')
        both(lc, rc, 'ZADD', 'zset:small:c', 5, 'new')
        both(lc, rc, 'SADD', 'set:str:c', 'new')
        copies = names() + [k + b':c' for k in names()] + \
            [k + b':x' for k in names()]
        same_keys(lc, rc, copies, (0, 1, 2))
        both(lc, rc, 'COPY', 'nosuch', 'x')
        both(lc, rc, 'COPY', 'nosuch', 'x', 'DB', 3)
        for v in NUMERIC_EDGES:
            both(lc, rc, 'COPY', 'str:int', 'y', 'DB', v)
            both(lc, rc, 'COPY', 'str:int', 'y', 'DB', v, 'BOGUS')
        for args in (['DB'], ['REPLACE', 'DB'], ['BOGUS'], ['REPLACE',
                                                             'REPLACE'],
                     ['DB', 1, 'DB', 2], ['DB', 99, 'BOGUS']):
            both(lc, rc, 'COPY', 'str:int', 'z', *args)
        both(lc, rc, 'COPY', 'str:int')
        lc.hello(3)
        rc.hello(3)
        both(lc, rc, 'COPY', 'str:int', 'r3')
        both(lc, rc, 'COPY', 'str:int', 'r3')


def test_move_every_type(larder):
    with peer() as r, larder.client() as lc, r.client() as rc:
        setup_pair(lc, rc)
        for k in names():
            both(lc, rc, 'MOVE', k, 1)
            both(lc, rc, 'MOVE', k, 1)                     # gone: 0
            both(lc, rc, 'COPY', k, k, 'DB', 2)             # nothing
        same_keys(lc, rc, names(), (0, 1))
        for c in (lc, rc):
            c.call('SELECT', 1)
        for k in names():
            both(lc, rc, 'MOVE', k, 0)
            both(lc, rc, 'MOVE', k, 1)                     # same db
        both(lc, rc, 'SET', 'dup', 'one')
        for c in (lc, rc):
            c.call('SELECT', 0)
        both(lc, rc, 'SET', 'dup', 'zero')
        both(lc, rc, 'MOVE', 'dup', 1)                     # exists: 0
        same_keys(lc, rc, names() + [b'dup'], (0, 1))
        for v in NUMERIC_EDGES:
            both(lc, rc, 'MOVE', 'str:int', v)
            both(lc, rc, 'MOVE', 'nosuch', v)
        same_keys(lc, rc, names(), (0, 1, 15))
        both(lc, rc, 'MOVE', 'str:int')
        both(lc, rc, 'MOVE', 'str:int', 1, 2)


def test_swapdb_replies_and_contents(larder):
    with peer() as r, larder.client() as lc, r.client() as rc:
        setup_pair(lc, rc, small=True)
        for c in (lc, rc):
            c.call('SELECT', 3)
            load(c, every_encoding()[:10])
            c.call('SET', 'only3', 'x', 'PX', 5000000)
            c.call('SELECT', 0)
        for a in NUMERIC_EDGES:
            for b in (b'0', b'3', a):
                both(lc, rc, 'SWAPDB', a, b)
        keys = names(True) + [b'only3']
        same_keys(lc, rc, keys, (0, 1, 3, 15))
        for a, b in ((0, 3), (3, 5), (5, 0), (0, 0), (15, 0), (0, 15)):
            both(lc, rc, 'SWAPDB', a, b)
            same_keys(lc, rc, keys, (0, 3, 5, 15))
        # Writes after a swap land in what the number names now.
        both(lc, rc, 'SET', 'after', 'swap')
        both(lc, rc, 'SWAPDB', 0, 7)
        same_keys(lc, rc, [b'after', b'only3'], (0, 7))
        # In MULTI, and FLUSHDB of a swapped number.
        both(lc, rc, 'MULTI')
        both(lc, rc, 'SWAPDB', 7, 8)
        both(lc, rc, 'SELECT', 8)
        both(lc, rc, 'GET', 'after')
        both(lc, rc, 'EXEC')
        both(lc, rc, 'FLUSHDB')
        for c in (lc, rc):
            c.call('SELECT', 0)
        same_keys(lc, rc, keys + [b'after'], (0, 3, 5, 7, 8))
        both(lc, rc, 'SWAPDB', 1)
        both(lc, rc, 'SWAPDB', 1, 2, 3)
        lc.hello(3)
        rc.hello(3)
        both(lc, rc, 'SWAPDB', 1, 2)
        both(lc, rc, 'SWAPDB', 1, 99)


def watch_case(server, setup, action, watch_db=0):
    """EXEC's reply after WATCH k in watch_db, then `action` by another
    client."""
    with server.client() as a, server.client() as b:
        b.call('FLUSHALL')
        for db, cmd in setup:
            b.call('SELECT', db)
            b.call(*cmd)
        b.call('SELECT', 0)
        a.call('SELECT', watch_db)
        assert_eq(a.call('WATCH', 'k'), 'OK')
        for cmd in action:
            b.call(*cmd)
        a.call('MULTI')
        a.call('SET', 'other', 1)
        return a.call('EXEC')


def test_swapdb_and_watch(larder):
    """A watched key that exists in either swapped database is touched;
    one absent from both is not; other databases' swaps do not matter."""
    cases = [
        ([(0, ['SET', 'k', 'v'])], [['SWAPDB', 0, 1]], 0),
        ([], [['SWAPDB', 0, 1]], 0),
        ([(1, ['SET', 'k', 'v'])], [['SWAPDB', 0, 1]], 0),
        ([(1, ['SET', 'k', 'v'])], [['SWAPDB', 1, 0]], 0),
        ([(0, ['SET', 'k', 'v'])], [['SWAPDB', 0, 1], ['SWAPDB', 0, 1]], 0),
        ([(0, ['SET', 'k', 'v']), (1, ['SET', 'k', 'w'])],
         [['SWAPDB', 0, 1]], 0),
        ([(2, ['SET', 'k', 'v'])], [['SWAPDB', 0, 1]], 2),
        ([(0, ['SET', 'k', 'v'])], [['SWAPDB', 0, 0]], 0),
        ([(0, ['SET', 'k', 'v'])], [['SWAPDB', 1, 2]], 0),
        ([(0, ['RPUSH', 'k', 'a'])], [['SWAPDB', 0, 3]], 3),
        ([(3, ['HSET', 'k', 'f', 'v'])], [['SWAPDB', 0, 3]], 0),
        ([(0, ['SET', 'k', 'v'])], [['SWAPDB', 5, 6]], 1),
    ]
    with peer() as r:
        for setup, action, db in cases:
            assert_eq(watch_case(larder, setup, action, db),
                      watch_case(r, setup, action, db),
                      'EXEC after %r then %r (watching in db %d)'
                      % (setup, action, db))


def test_swapdb_atomic_across_workers():
    """Readers on every worker never see half a swap: MGET of two keys of
    db 0 gives both from one database, while another client swaps
    continually; and the cache follows the swap."""
    larder_only()
    with Server(workers=3) as s:
        with s.client() as c:
            c.call('MSET', 'a', 'zero', 'b', 'zero')
            c.call('SELECT', 1)
            c.call('MSET', 'a', 'one', 'b', 'one')
        stop = time.time() + 2.0
        bad = []
        seen = set()

        def reader():
            with s.client() as c:
                while time.time() < stop:
                    got = tuple(c.call('MGET', 'a', 'b'))
                    seen.add(got)
                    if got[0] != got[1]:
                        bad.append(got)
        threads = [threading.Thread(target=reader) for _ in range(4)]
        for t in threads:
            t.start()
        swaps = 0
        with s.client() as c:
            while time.time() < stop:
                assert_eq(c.call('SWAPDB', 0, 1), 'OK')
                swaps += 1
        for t in threads:
            t.join()
        assert_eq(bad, [], 'MGET saw half a swap')
        assert_true(len(seen) == 2, 'readers saw both sides: %r' % seen)
        # An even number of swaps later, db 0 has "zero" (cache or not).
        with s.client() as c:
            if swaps % 2:
                c.call('SWAPDB', 0, 1)
            for _ in range(3):
                assert_eq(c.call('GET', 'a'), b'zero', 'db 0 after swaps')
            c.call('SWAPDB', 0, 1)
            for _ in range(3):
                assert_eq(c.call('GET', 'a'), b'one', 'db 0 swapped')


def test_swapdb_survives_restart():
    """The swap is on disk: a restarted server keeps it."""
    larder_only()
    with Server(workers=2) as s:
        with s.client() as c:
            c.call('SET', 'k', 'zero')
            c.call('SELECT', 4)
            c.call('SET', 'k', 'four')
            assert_eq(c.call('SWAPDB', 0, 4), 'OK')
        s.restart()
        with s.client() as c:
            assert_eq(c.call('GET', 'k'), b'four')
            c.call('SELECT', 4)
            assert_eq(c.call('GET', 'k'), b'zero')
            assert_eq(c.call('DBSIZE'), 1)


def swap_wakes(server_client):
    """A client blocked in BLPOP on k in db 0 while k exists only in db 1;
    SWAPDB 0 1 from another connection: what the waiter gets."""
    got = {}
    with server_client() as setup:
        setup.call('SELECT', 1)
        setup.call('DEL', 'k')
        setup.call('RPUSH', 'k', 'from-db1')
        setup.call('SELECT', 0)
        setup.call('DEL', 'k')
    waiter = server_client()

    def wait():
        got['reply'] = waiter.call('BLPOP', 'k', 5)
    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)  # the waiter is blocked by now (or the reply says not)
    with server_client() as c:
        assert_eq(c.call('SWAPDB', 0, 1), 'OK')
        t.join(10)
        left = c.call('LLEN', 'k')
    waiter.close()
    return got.get('reply'), left


def test_swapdb_wakes_blocked_clients():
    """SWAPDB serves a client blocked on a key the swap brings into its
    database, as Redis does, from any worker (waiters spread over 3)."""
    with peer() as r:
        want = swap_wakes(r.client)
    assert_eq(want, ([b'k', b'from-db1'], 0), "redis-server's answer")
    with Server(workers=3) as s:
        for _ in range(3):  # connections land on different workers
            assert_eq(swap_wakes(s.client), want, 'the waiter after SWAPDB')


if __name__ == '__main__':
    main(globals())
