"""Checks that a write on one connection (worker) is seen at once by connections on other workers: no stale cache after SET DEL EXPIRE RENAME FLUSH*, and expiry/active expiry."""

import threading
import time

from larder_test import (Client, ConnectionClosed, Skip, assert_eq,
                         assert_true, assert_ttl, main, wait_until)

WORKERS = 2


def serving_pid(c):
    fields = {}
    for line in c.call('INFO', 'server').decode().split('\r\n'):
        k, _, v = line.partition(':')
        fields[k] = v
    return int(fields.get('worker_process_id') or fields['process_id'])


def pair(s):
    """Two clients on different workers (any two against redis-server)."""
    first = s.client()
    pid = serving_pid(first)
    spare = []
    try:
        for _ in range(50):
            c = s.client()
            if serving_pid(c) != pid:
                return first, c
            spare.append(c)
        # One process serves everything (redis-server, or a single worker).
        return first, spare.pop()
    finally:
        for c in spare:
            c.close()


def test_set_then_get_elsewhere(s):
    a, b = pair(s)
    with a, b:
        for i in range(300):
            w, r = (a, b) if i % 2 == 0 else (b, a)
            assert_eq(w.call('SET', 'k', i), 'OK')
            assert_eq(r.call('GET', 'k'), str(i).encode(), 'read %d' % i)


def test_warm_cache_then_overwrite(s):
    a, b = pair(s)
    with a, b:
        a.call('SET', 'k', 'old')
        for _ in range(5):
            assert_eq(b.call('GET', 'k'), b'old')     # b's side is cached
        a.call('SET', 'k', 'new')
        assert_eq(b.call('GET', 'k'), b'new')
        a.call('APPEND', 'k', '+')
        assert_eq(b.call('GET', 'k'), b'new+')
        a.call('SETRANGE', 'k', '0', 'N')
        assert_eq(b.call('GET', 'k'), b'New+')
        a.call('SET', 'n', '1')
        assert_eq(b.call('GET', 'n'), b'1')
        a.call('INCRBY', 'n', '10')
        assert_eq(b.call('GET', 'n'), b'11')
        a.call('INCRBYFLOAT', 'n', '0.5')
        assert_eq(b.call('GET', 'n'), b'11.5')
        assert_eq(a.call('GETSET', 'n', 'x'), b'11.5')
        assert_eq(b.call('GET', 'n'), b'x')
        a.call('MSET', 'k', 'm1', 'n', 'm2')
        assert_eq(b.call('MGET', 'k', 'n'), [b'm1', b'm2'])


def test_delete_visible_elsewhere(s):
    a, b = pair(s)
    with a, b:
        for cmd in (('DEL', 'k'), ('UNLINK', 'k'), ('GETDEL', 'k'),
                    ('EXPIRE', 'k', '0'), ('PEXPIREAT', 'k', '1'),
                    ('GETEX', 'k', 'PXAT', '1'),
                    ('SET', 'k', 'v', 'PXAT', '1')):
            a.call('SET', 'k', 'v')
            assert_eq(b.call('GET', 'k'), b'v')
            a.call(*cmd)
            assert_eq(b.call('GET', 'k'), None, 'after %s' % (cmd,))
            assert_eq(b.call('EXISTS', 'k'), 0)
            assert_eq(b.call('TTL', 'k'), -2)


def test_ttl_visible_elsewhere(s):
    a, b = pair(s)
    with a, b:
        a.call('SET', 'k', 'v')
        assert_eq(b.call('TTL', 'k'), -1)
        a.call('EXPIRE', 'k', '100')
        assert_ttl(b, 'k', 100)
        a.call('PERSIST', 'k')
        assert_eq(b.call('TTL', 'k'), -1)
        a.call('SET', 'k', 'v2', 'EX', '50')
        assert_ttl(b, 'k', 50)
        a.call('SET', 'k', 'v3', 'KEEPTTL')
        assert_ttl(b, 'k', 50)
        assert_eq(b.call('GET', 'k'), b'v3')
        a.call('SET', 'k', 'v4')
        assert_eq(b.call('TTL', 'k'), -1)
        a.call('SET', 'k', 'v', 'PX', '600')
        assert_eq(b.call('GET', 'k'), b'v')
        wait_until(lambda: b.call('GET', 'k') is None, 5,
                   'expiry seen by the other worker')
        assert_eq(a.call('GET', 'k'), None)


def test_rename_copy_visible_elsewhere(s):
    a, b = pair(s)
    with a, b:
        a.call('SET', 'src', 'one')
        a.call('SET', 'dst', 'old')
        assert_eq(b.call('MGET', 'src', 'dst'), [b'one', b'old'])
        a.call('RENAME', 'src', 'dst')
        assert_eq(b.call('MGET', 'src', 'dst'), [None, b'one'])
        a.call('RENAMENX', 'dst', 'src')
        assert_eq(b.call('MGET', 'src', 'dst'), [b'one', None])
        a.call('SET', 'dst', 'old')
        assert_eq(b.call('GET', 'dst'), b'old')
        a.call('COPY', 'src', 'dst', 'REPLACE')
        assert_eq(b.call('GET', 'dst'), b'one')


def test_flush_visible_elsewhere(s):
    a, b = pair(s)
    with a, b:
        a.call('MSET', 'x', '1', 'y', '2')
        assert_eq(b.call('MGET', 'x', 'y'), [b'1', b'2'])
        a.call('FLUSHDB')
        assert_eq(b.call('MGET', 'x', 'y'), [None, None])
        a.call('MSET', 'x', '1', 'y', '2')
        b.call('SELECT', '1')
        b.call('SET', 'x', 'db1')
        assert_eq(b.call('GET', 'x'), b'db1')
        a.call('SELECT', '1')
        assert_eq(a.call('GET', 'x'), b'db1')
        a.call('FLUSHALL')
        assert_eq(b.call('GET', 'x'), None)
        b.call('SELECT', '0')
        assert_eq(b.call('MGET', 'x', 'y'), [None, None])
        assert_eq(b.call('DBSIZE'), 0)


def test_databases_distinct_elsewhere(s):
    a, b = pair(s)
    with a, b:
        a.call('SELECT', '7')
        a.call('SET', 'k', 'seven')
        assert_eq(b.call('GET', 'k'), None)
        b.call('SELECT', '7')
        assert_eq(b.call('GET', 'k'), b'seven')
        b.call('SELECT', '0')
        b.call('SET', 'k', 'zero')
        assert_eq(a.call('GET', 'k'), b'seven')


def _hammer(port, key, n, errors, barrier):
    try:
        with Client(port) as c:
            barrier.wait()
            for i in range(n):
                v = c.call('SET', key, i)
                got = c.call('GET', key)
                if v != 'OK' or not isinstance(got, bytes):
                    errors.append((key, i, v, got))
                    return
    except (OSError, ConnectionClosed) as e:
        errors.append(repr(e))


def test_concurrent_writers_then_read_everywhere(s):
    # Several connections overwrite the same keys; when all are done every
    # connection must read the same final value (no stale cache copy).
    n = 8
    errors = []
    barrier = threading.Barrier(n)
    threads = [threading.Thread(target=_hammer,
                                args=(s.port, 'hot%d' % (i % 2), 300,
                                      errors, barrier))
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert_eq(errors, [])
    clients = [s.client() for _ in range(12)]
    try:
        views = set(tuple(c.call('MGET', 'hot0', 'hot1')) for c in clients)
        assert_eq(len(views), 1, 'every connection sees one value: %r'
                  % views)
    finally:
        for c in clients:
            c.close()


def test_active_expiry(s):
    # Keys nobody reads are still removed (DBSIZE and INFO keyspace fall).
    with s.client() as c:
        c.pipeline([('SET', 'e%d' % i, 'v', 'PX', '20') for i in range(200)])
        c.call('SET', 'live', 'v')
        wait_until(lambda: c.call('DBSIZE') == 1, 10,
                   'active expiry to remove 200 unread keys')
        text = c.call('INFO', 'keyspace').decode()
        assert_true('db0:keys=1,expires=0,' in text, 'INFO keyspace after '
                    'active expiry: %r' % text)


def _concurrently(s, n, fn):
    errors = []
    barrier = threading.Barrier(n)

    def run(i):
        try:
            with Client(s.port) as c:
                barrier.wait()
                fn(c, i)
        except Exception as e:          # reported by the main thread
            errors.append(repr(e))
    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert_eq(errors, [], 'client errors')


def test_setnx_race_one_winner(s):
    wins = []

    def race(c, i):
        for k in range(100):
            if c.call('SETNX', 'race%d' % k, 'client%d' % i) == 1:
                wins.append((k, i))
    _concurrently(s, 8, race)
    assert_eq(sorted(k for k, _ in wins), list(range(100)),
              'exactly one SETNX winner per key')
    with s.client() as c:
        for k, i in wins:
            assert_eq(c.call('GET', 'race%d' % k), b'client%d' % i)


def test_msetnx_race_atomic(s):
    wins = []

    def race(c, i):
        for k in range(50):
            args = []
            for j in range(3):
                args += ['m%d:%d' % (k, j), 'c%d' % i]
            if c.call('MSETNX', *args) == 1:
                wins.append(k)
    _concurrently(s, 6, race)
    assert_eq(sorted(wins), list(range(50)), 'one MSETNX winner per group')
    with s.client() as c:
        for k in range(50):
            vals = c.call('MGET', *['m%d:%d' % (k, j) for j in range(3)])
            assert_eq(len(set(vals)), 1, 'group %d written by one client: %r'
                      % (k, vals))


def test_append_and_incrbyfloat_concurrent(s):
    def work(c, i):
        for _ in range(100):
            c.call('APPEND', 'log', 'x')
            c.call('INCRBYFLOAT', 'f', '0.5')
            c.call('DECRBY', 'd', '3')
    _concurrently(s, 6, work)
    with s.client() as c:
        assert_eq(c.call('STRLEN', 'log'), 600)
        assert_eq(c.call('GET', 'f'), b'300')
        assert_eq(c.call('GET', 'd'), b'-1800')


def test_overwritten_ttl_keys_survive_expiry(s):
    # A key whose TTL was removed or extended must not be deleted by a
    # stale entry of the expiry index.
    with s.client() as c:
        n, ttl = 50, 400
        t0 = time.time()
        setx = [('SET', '%s%d' % (p, i), 'v', 'PX', ttl)
                for p in ('over', 'ext', 'per', 'del', 'ren')
                for i in range(n)]
        assert_eq(set(c.pipeline(setx)), {'OK'})
        mods = ([('SET', 'over%d' % i, 'w') for i in range(n)] +
                [('PEXPIRE', 'ext%d' % i, '100000') for i in range(n)] +
                [('PERSIST', 'per%d' % i) for i in range(n)] +
                [('DEL', 'del%d' % i) for i in range(n)] +
                [('SET', 'del%d' % i, 'new') for i in range(n)] +
                [('RENAME', 'ren%d' % i, 'moved%d' % i) for i in range(n)] +
                [('SET', 'ren%d' % i, 'fresh') for i in range(n)])
        got = c.pipeline(mods)
        if time.time() - t0 >= ttl / 1000.0:
            raise Skip('machine too slow: the TTLs ran out before the '
                       'changes were made')
        assert_eq(set(got), {'OK', 1}, 'the changes applied')
        # Sentinels expire after the stale entries: once active expiry
        # has removed them (and the moved keys), it has seen those too.
        assert_eq(set(c.pipeline([('SET', 'sent%d' % i, 'v', 'PX', ttl + 50)
                                  for i in range(n)])), {'OK'})
        wait_until(lambda: c.call('DBSIZE') <= 5 * n, 10,
                   'active expiry of the sentinels and moved keys')
        for pat in ('over%d', 'ext%d', 'per%d', 'del%d', 'ren%d'):
            names = [pat % i for i in range(n)]
            assert_eq(c.call('EXISTS', *names), n, 'keys %s survive' % pat)
        assert_eq(c.call('MGET', 'over0', 'del0', 'ren0'),
                  [b'w', b'new', b'fresh'])
        assert_eq(c.call('EXISTS', *['moved%d' % i for i in range(n)]), 0)
        assert_eq(c.call('TTL', 'over1'), -1)
        assert_ttl(c, 'ext1', 100)

if __name__ == '__main__':
    main(globals(), workers=WORKERS)
