"""Checks MULTI EXEC DISCARD WATCH UNWATCH: replies and errors as Redis 7 gives them, EXECABORT, WATCH aborts (other clients, own writes, expiry, DEL, FLUSHALL, collection writes), atomicity seen from other workers, and a transfer workload whose total balance never changes."""

import threading
import time

from larder_test import (IS_REDIS, Client, Server, assert_eq, assert_error,
                         assert_error_prefix, assert_true, larder_only, main)

WORKERS = 3
EXECABORT = 'EXECABORT Transaction discarded because of previous errors.'
WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'


def test_queue_and_exec(s):
    with s.client() as c:
        assert_eq(c.call('MULTI'), 'OK')
        assert_eq(c.call('SET', 'a', '1'), 'QUEUED')
        assert_eq(c.call('INCR', 'a'), 'QUEUED')
        assert_eq(c.call('LPUSH', 'a', 'x'), 'QUEUED')
        assert_eq(c.call('GET', 'a'), 'QUEUED')
        r = c.call('EXEC')
        assert_eq(r[:2], ['OK', 2])
        assert_error(r[2], WRONGTYPE)       # a run-time error does not stop
        assert_eq(r[3], b'2')
        assert_eq(c.call('MULTI'), 'OK')
        assert_eq(c.call('EXEC'), [])
        # An empty pipeline of a whole transaction, in one packet.
        r = c.pipeline([('MULTI',), ('SET', 'p', 'v'), ('GET', 'p'),
                        ('EXEC',), ('GET', 'p')])
        assert_eq(r, ['OK', 'QUEUED', 'QUEUED', ['OK', b'v'], b'v'])


def test_state_errors(s):
    with s.client() as c:
        assert_error(c.call('EXEC'), 'ERR EXEC without MULTI')
        assert_error(c.call('DISCARD'), 'ERR DISCARD without MULTI')
        assert_eq(c.call('UNWATCH'), 'OK')
        assert_error(c.call('WATCH'),
                     "ERR wrong number of arguments for 'watch' command")
        assert_eq(c.call('MULTI'), 'OK')
        assert_error(c.call('MULTI'), 'ERR MULTI calls can not be nested')
        assert_error(c.call('WATCH', 'a'),
                     'ERR WATCH inside MULTI is not allowed')
        assert_eq(c.call('SET', 'a', '1'), 'QUEUED')
        # Neither error above spoils the transaction.
        assert_eq(c.call('EXEC'), ['OK'])


def test_execabort(s):
    with s.client() as c:
        c.call('SET', 'k', 'old')
        assert_eq(c.call('MULTI'), 'OK')
        assert_eq(c.call('SET', 'k', 'new'), 'QUEUED')
        r = c.call('NOSUCHCMD', 'x')
        assert_error(r, "ERR unknown command 'NOSUCHCMD', with args "
                        "beginning with: 'x' ")
        assert_error(c.call('GET', 'a', 'b'),
                     "ERR wrong number of arguments for 'get' command")
        assert_eq(c.call('SET', 'k', 'newer'), 'QUEUED')
        assert_error(c.call('EXEC'), EXECABORT)
        assert_eq(c.call('GET', 'k'), b'old')
        assert_error(c.call('EXEC'), 'ERR EXEC without MULTI')
        # Arity alone aborts too.
        c.call('MULTI')
        c.call('INCR')
        assert_error(c.call('EXEC'), EXECABORT)


def test_discard(s):
    with s.client() as c:
        assert_eq(c.call('MULTI'), 'OK')
        assert_eq(c.call('SET', 'd', '1'), 'QUEUED')
        assert_eq(c.call('DISCARD'), 'OK')
        assert_eq(c.call('GET', 'd'), None)
        assert_error(c.call('EXEC'), 'ERR EXEC without MULTI')
        assert_eq(c.call('MULTI'), 'OK')
        assert_eq(c.call('RESET'), 'RESET')
        assert_error(c.call('EXEC'), 'ERR EXEC without MULTI')


def test_session_state_inside(s):
    with s.client() as c:
        c.call('MULTI')
        c.call('SELECT', '1')
        c.call('SET', 'q', 'in1')
        assert_eq(c.call('EXEC'), ['OK', 'OK'])
        assert_eq(c.call('GET', 'q'), b'in1')      # SELECT stays
        c.call('SELECT', '0')
        assert_eq(c.call('GET', 'q'), None)
        c.call('SET', 'gone', '1')
        c.call('MULTI')
        c.call('SET', 'x', '1')
        c.call('FLUSHDB')
        c.call('SET', 'y', '2')
        assert_eq(c.call('EXEC'), ['OK', 'OK', 'OK'])
        assert_eq(c.call('KEYS', '*'), [b'y'])
        c.call('SELECT', '1')
        assert_eq(c.call('GET', 'q'), b'in1')      # FLUSHDB spared db 1


def test_resp3_shapes(s):
    with s.client() as c, s.client() as o:
        c.hello(3)
        c.call('MULTI')
        c.call('HSET', 'h', 'f', 'v')
        c.call('HGETALL', 'h')
        assert_eq(c.call('EXEC'), [1, {b'f': b'v'}])
        c.call('WATCH', 'h')
        o.call('HSET', 'h', 'f', 'w')
        c.call('MULTI')
        c.call('HGET', 'h', 'f')
        assert_eq(c.call('EXEC'), None)
        c.send('MULTI')
        c.read_reply()
        c.send('EXEC')
        assert_eq(c.read_raw(4), b'*0\r\n')


def test_watch_other_client(s):
    with s.client() as c, s.client() as o:
        c.call('SET', 'w', '1')
        assert_eq(c.call('WATCH', 'w'), 'OK')
        o.call('SET', 'w', '2')
        c.call('MULTI')
        c.call('SET', 'w', 'mine')
        assert_eq(c.call('EXEC'), None)
        assert_eq(c.call('GET', 'w'), b'2')
        # The failed EXEC unwatched: the next transaction commits.
        c.call('MULTI')
        c.call('SET', 'w', 'mine')
        assert_eq(c.call('EXEC'), ['OK'])
        assert_eq(o.call('GET', 'w'), b'mine')
        # RESP2 nil array on the wire.
        c.call('WATCH', 'w')
        o.call('APPEND', 'w', '!')
        c.call('MULTI')
        c.send('EXEC')
        assert_eq(c.read_raw(5), b'*-1\r\n')


def test_watch_untouched_commits(s):
    with s.client() as c, s.client() as o:
        c.call('SET', 'u', '1')
        c.call('WATCH', 'u', 'absent')
        o.call('SET', 'other', 'x')
        o.call('GET', 'u')
        c.call('MULTI')
        c.call('INCR', 'u')
        assert_eq(c.call('EXEC'), [2])


def test_watch_changes_that_abort(s):
    def watched_then(prepare, change, key='k'):
        with s.client() as c, s.client() as o:
            c.call('DEL', key)
            if prepare:
                prepare(o)
            c.call('WATCH', key)
            change(o)
            c.call('MULTI')
            c.call('PING')
            return c.call('EXEC')

    set_k = lambda o: o.call('SET', 'k', 'v')
    hash_k = lambda o: o.call('HSET', 'k', 'f', '1', 'g', '2')
    cases = [
        ('created', None, set_k),
        ('deleted', set_k, lambda o: o.call('DEL', 'k')),
        ('expire set', set_k, lambda o: o.call('EXPIRE', 'k', '100')),
        ('persisted', lambda o: o.call('SET', 'k', 'v', 'EX', '100'),
         lambda o: o.call('PERSIST', 'k')),
        ('flushall', set_k, lambda o: o.call('FLUSHALL')),
        ('renamed away', set_k, lambda o: o.call('RENAME', 'k', 'k2')),
        ('hash field overwritten', hash_k,
         lambda o: o.call('HSET', 'k', 'f', 'changed')),
        ('hash field deleted', hash_k, lambda o: o.call('HDEL', 'k', 'f')),
        ('list pushed', lambda o: o.call('RPUSH', 'k', 'a'),
         lambda o: o.call('RPUSH', 'k', 'b')),
        ('zset score changed', lambda o: o.call('ZADD', 'k', '1', 'm'),
         lambda o: o.call('ZADD', 'k', '2', 'm')),
        ('set member added', lambda o: o.call('SADD', 'k', 'a'),
         lambda o: o.call('SADD', 'k', 'b')),
    ]
    for what, prepare, change in cases:
        assert_eq(watched_then(prepare, change), None, what)


def test_watch_own_write_aborts(s):
    with s.client() as c:
        c.call('SET', 'o', '1')
        c.call('WATCH', 'o')
        c.call('SET', 'o', '2')
        c.call('MULTI')
        c.call('GET', 'o')
        assert_eq(c.call('EXEC'), None)
        # The same in one pipeline (one group transaction on larder).
        r = c.pipeline([('WATCH', 'o'), ('INCR', 'o'), ('MULTI',),
                        ('GET', 'o'), ('EXEC',)])
        assert_eq(r, ['OK', 3, 'OK', 'QUEUED', None])


def test_watch_expiry_aborts(s):
    with s.client() as c:
        c.call('SET', 'e', '1', 'PX', '100')
        c.call('WATCH', 'e')
        time.sleep(0.3)
        c.call('MULTI')
        c.call('SET', 'x', 'y')
        assert_eq(c.call('EXEC'), None)
        assert_eq(c.call('GET', 'x'), None)
        # A key already expired when watched is just absent.
        c.call('SET', 'e', '1', 'PX', '1')
        time.sleep(0.05)
        c.call('WATCH', 'e')
        c.call('MULTI')
        c.call('SET', 'x', 'y')
        assert_eq(c.call('EXEC'), ['OK'])


def test_unwatch_and_discard_forget(s):
    with s.client() as c, s.client() as o:
        for forget in (('UNWATCH',), ('DISCARD',)):
            c.call('SET', 'f', '1')
            c.call('WATCH', 'f')
            o.call('SET', 'f', '2')
            if forget == ('DISCARD',):
                c.call('MULTI')
            assert_eq(c.call(*forget), 'OK')
            c.call('MULTI')
            c.call('GET', 'f')
            assert_eq(c.call('EXEC'), [b'2'], forget[0])


def test_watch_other_db(s):
    with s.client() as c, s.client() as o:
        c.call('SELECT', '2')
        c.call('WATCH', 'k')
        c.call('SELECT', '0')
        o.call('SET', 'k', 'db0')           # another db's k: no effect
        c.call('MULTI')
        c.call('PING')
        assert_eq(c.call('EXEC'), ['PONG'])
        c.call('SELECT', '2')
        c.call('WATCH', 'k')
        o.call('SELECT', '2')
        o.call('SET', 'k', 'db2')
        c.call('MULTI')
        c.call('PING')
        assert_eq(c.call('EXEC'), None)


def test_client_list_shows_multi(s):
    with s.client() as c:
        c.call('MULTI')
        c.call('SET', 'a', '1')
        c.call('SET', 'b', '2')
        c.call('CLIENT', 'INFO')
        info = c.call('EXEC')[-1].decode()
        # Redis shows the transaction of the client running CLIENT INFO
        # through EXEC as it runs: flags and queue as queued.
        assert_true('flags=x' in info or 'flags=N' in info, info)
        c.call('MULTI')
        c.call('PING')
        with s.client() as o:
            line = [l for l in o.call('CLIENT', 'LIST').decode().split('\n')
                    if 'cmd=ping' in l or 'cmd=multi' in l]
        c.call('DISCARD')
        if not IS_REDIS:
            # larder lists only the answering worker's clients.
            return
        assert_true(any('flags=x' in l and 'multi=1' in l for l in line), line)


def test_publish_inside_exec(s):
    """MULTI/PUBLISH/EXEC (redis-py's default pipeline): EXEC's array
    carries each PUBLISH's receiver count, from subscribers on every
    worker, and the commands pipelined after EXEC answer after it."""
    subs = [s.client() for _ in range(6)]
    try:
        for x in subs:
            assert_eq(x.call('SUBSCRIBE', 'news'), [b'subscribe', b'news', 1])
        subs[0].send('PSUBSCRIBE', 'n*')
        subs[0].read_reply()
        with s.client() as c:
            r = c.pipeline([('MULTI',), ('PUBLISH', 'news', 'one'),
                            ('SET', 'after', '1'), ('PUBLISH', 'nothing', 'x'),
                            ('PUBLISH', 'news', 'two'), ('EXEC',),
                            ('GET', 'after'), ('PUBLISH', 'news', 'three')])
            assert_eq(r, ['OK', 'QUEUED', 'QUEUED', 'QUEUED', 'QUEUED',
                          [7, 'OK', 1, 7], b'1', 7])
        for i, x in enumerate(subs):
            got = [x.read_reply() for _ in range(3 if i else 6)]
            msgs = [g[-1] for g in got if g[0] == b'message']
            assert_eq(msgs, [b'one', b'two', b'three'], 'subscriber %d' % i)
    finally:
        for x in subs:
            x.close()


def test_atomic_from_other_workers(s):
    """Writers move units between two keys in transactions; readers on
    other connections (other workers) read both keys in a transaction and
    must always see the same sum."""
    total = 1000
    with s.client() as c:
        c.call('MSET', 'acc:a', str(total), 'acc:b', '0')
    stop = time.time() + 3
    bad = []
    counts = {'w': 0, 'r': 0}

    def writer():
        with s.client() as w:
            while time.time() < stop:
                r = w.pipeline([('MULTI',), ('DECRBY', 'acc:a', '1'),
                                ('INCRBY', 'acc:b', '1'), ('EXEC',)])
                if not isinstance(r[3], list):
                    bad.append(('writer', r))
                    return
                counts['w'] += 1

    def reader():
        with s.client() as rd:
            while time.time() < stop:
                r = rd.pipeline([('MULTI',), ('GET', 'acc:a'),
                                 ('GET', 'acc:b'), ('EXEC',)])[3]
                if int(r[0]) + int(r[1]) != total:
                    bad.append(('reader', r))
                    return
                counts['r'] += 1

    ts = [threading.Thread(target=f) for f in (writer, writer, reader,
                                               reader)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert_eq(bad, [])
    assert_true(counts['w'] > 100 and counts['r'] > 100, counts)
    with s.client() as c:
        a, b = c.call('MGET', 'acc:a', 'acc:b')
        assert_eq(int(a) + int(b), total)
        assert_eq(int(b), counts['w'])


def test_transfer_balance_kept(s):
    """The optimistic-locking loop clients use: WATCH, read, MULTI, write,
    EXEC, retry on nil. Totals hold and every abort was a real conflict."""
    accounts, start = 8, 100
    with s.client() as c:
        c.call('MSET', *sum([['t:%d' % i, str(start)]
                             for i in range(accounts)], []))
    stop = time.time() + 3
    stats = {'commits': 0, 'aborts': 0}
    errors = []

    def client(seed):
        import random
        rnd = random.Random(seed)
        with s.client() as x:
            while time.time() < stop:
                a, b = rnd.sample(range(accounts), 2)
                ka, kb = 't:%d' % a, 't:%d' % b
                x.call('WATCH', ka, kb)
                va, vb = (int(v) for v in x.call('MGET', ka, kb))
                amount = rnd.randint(1, 5)
                if va < amount:
                    x.call('UNWATCH')
                    continue
                r = x.pipeline([('MULTI',), ('SET', ka, str(va - amount)),
                                ('SET', kb, str(vb + amount)), ('EXEC',)])
                if r[3] is None:
                    stats['aborts'] += 1
                elif r[3] == ['OK', 'OK']:
                    stats['commits'] += 1
                else:
                    errors.append(r)
                    return

    ts = [threading.Thread(target=client, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert_eq(errors, [])
    with s.client() as c:
        vals = [int(v) for v in c.call('MGET', *['t:%d' % i
                                                 for i in range(accounts)])]
    assert_eq(sum(vals), accounts * start, vals)
    assert_true(min(vals) >= 0, vals)
    assert_true(stats['commits'] > 50, stats)
    assert_true(stats['aborts'] > 0, stats)     # 6 clients on 8 accounts


def test_other_clients_unaffected(s):
    """A client left inside MULTI with a long queue, and one that
    disconnects mid-transaction, change nothing for others."""
    with s.client() as c:
        c.call('MULTI')
        for i in range(2000):
            c.call('SET', 'queued:%d' % i, 'x')
        with s.client() as o:
            assert_eq(o.call('SET', 'free', '1'), 'OK')
            assert_eq(o.call('GET', 'queued:1'), None)
    with s.client() as o:                    # c closed without EXEC
        assert_eq(o.call('EXISTS', 'queued:1'), 0)
        assert_eq(o.call('GET', 'free'), b'1')


HUGE = 'y' * 2000000          # does not fit --maxdisk 1mb


def test_disk_full_inside_exec():
    """A write that fails for lack of space inside EXEC loses the whole
    transaction: EXEC answers that one error and no queued write lands.
    Meanwhile a transaction queued by another client in the same worker
    group (which the failure rewinds and replays) runs exactly once."""
    larder_only()
    s = Server(workers=1, args=['--maxdisk', '1mb'])
    try:
        with s.client() as c, s.client() as b:
            r = c.pipeline([('MULTI',), ('SET', 'small', 'v'),
                            ('SET', 'huge', HUGE), ('EXEC',)])
            assert_eq(r[:3], ['OK', 'QUEUED', 'QUEUED'])
            assert_error_prefix(r[3], 'ERR disk full')
            assert_eq(c.call('EXISTS', 'small', 'huge'), 0)
            for i in range(40):
                # b's MULTI and queued SET and c's failing pipeline arrive
                # together: often in one group, which c's failure rewinds.
                b.send_raw(b'*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n'
                           b'$1\r\nq\r\n$1\r\n1\r\n*2\r\n$4\r\nINCR\r\n'
                           b'$2\r\nqn\r\n')
                c.send('SET', 'small%d' % i, 'v')
                c.send('SET', 'huge', HUGE)
                assert_eq([b.read_reply() for _ in range(3)],
                          ['OK', 'QUEUED', 'QUEUED'])
                assert_eq(c.read_reply(), 'OK')
                assert_error_prefix(c.read_reply(), 'ERR disk full')
                assert_eq(b.call('EXEC'), ['OK', i + 1])
            assert_eq(b.call('GET', 'qn'), b'40')
            # A lost EXEC ends the transaction like any EXEC.
            r = c.pipeline([('MULTI',), ('SET', 'huge', HUGE), ('EXEC',),
                            ('SET', 'after', '1')])
            assert_error_prefix(r[2], 'ERR disk full')
            assert_eq(r[3], 'OK')
    finally:
        s.cleanup()


if __name__ == '__main__':
    main(globals(), workers=WORKERS)
