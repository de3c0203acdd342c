"""Checks pub/sub inside scripts with subscribers on different workers (placed by CLIENT INFO's worker= field): redis.call / pcall of PUBLISH and SPUBLISH give every worker's receiver count (channels, patterns, shard channels) as Redis does, PUBSUB NUMSUB / CHANNELS / NUMPAT inside a script count every worker, the messages reach each subscriber once and after the script's writes are visible, a script that errors still publishes (as Redis), two workers' scripts publishing at once do not wait on each other, and (larder only) a killed script's messages are never delivered. Run with LARDER_TEST_AGAINST=redis for the replies."""

import threading
import time

from larder_test import (IS_REDIS, Push, RespError, assert_eq, assert_error,
                         assert_error_prefix, assert_true, larder_only, main,
                         wait_until)

WORKERS = 3
KILLED = 'ERR Script killed by user with SCRIPT KILL...'


def worker_of(c):
    """The worker serving c (None on redis-server: one process)."""
    if IS_REDIS:
        return None
    line = c.call('CLIENT', 'INFO').decode()
    for field in line.split():
        if field.startswith('worker='):
            return int(field[len('worker='):])
    raise AssertionError('no worker= in CLIENT INFO: %r' % line)


def on_workers(s, want, limit=200):
    """Connections placed as `want` says ('AAB': the first two on one
    worker, the third on another); on redis any connections."""
    if IS_REDIS:
        return [s.client() for _ in want]
    labels, chosen, spare = {}, [], []
    try:
        for label in want:
            for _ in range(limit):
                c = s.client()
                w = worker_of(c)
                ok = (w == labels[label] if label in labels
                      else w not in labels.values())
                if ok:
                    labels.setdefault(label, w)
                    chosen.append(c)
                    break
                spare.append(c)
            else:
                raise AssertionError('connections placed as %r' % want)
        return chosen
    finally:
        for c in spare:
            c.close()


def subscribe(c, cmd, *names):
    """SUBSCRIBE / PSUBSCRIBE / SSUBSCRIBE and read the confirmations."""
    c.send(cmd, *names)
    for i, n in enumerate(names):
        r = c.read_reply()
        assert_eq(r[1], n.encode(), '%s confirmation' % cmd)
        assert_eq(r[2], i + 1, '%s count' % cmd)


def next_push(c, timeout=5.0):
    c.settimeout(timeout)
    try:
        return list(c.read_reply())
    finally:
        c.settimeout(10)


def no_push_before(c, marker_pub, marker):
    """The next push c receives is the marker message published now: any
    message queued before it would come first."""
    assert_true(marker_pub() >= 1, 'the marker reached someone')
    got = next_push(c)
    assert_eq(got[-1], marker, 'the first message is the marker')


def wait_numsub(c, ch, n):
    wait_until(lambda: c.call('PUBSUB', 'NUMSUB', ch)[1] == n, 5,
               'NUMSUB %s = %d' % (ch, n))


def close_all(*cs):
    for c in cs:
        c.close()


def test_publish_counts_every_worker(s):
    """PUBLISH / SPUBLISH inside a script count the receivers on every
    worker, channel and pattern subscribers both; each gets the message
    once."""
    pub, a, b, pat, sh = on_workers(s, 'ABCBC')
    try:
        subscribe(a, 'SUBSCRIBE', 'news')
        subscribe(b, 'SUBSCRIBE', 'news')
        subscribe(pat, 'PSUBSCRIBE', 'n*')
        subscribe(sh, 'SSUBSCRIBE', 'shard')
        wait_numsub(pub, 'news', 2)
        body = ("return {redis.call('publish', 'news', ARGV[1]), "
                "redis.pcall('publish', 'nobody', 'x'), "
                "redis.call('spublish', 'shard', 's1'), "
                "redis.call('publish', 'nope', 'y')}")
        assert_eq(pub.call('EVAL', body, 0, 'm1'), [3, 1, 1, 1])
        assert_eq(next_push(a), [b'message', b'news', b'm1'])
        assert_eq(next_push(b), [b'message', b'news', b'm1'])
        assert_eq(next_push(pat), [b'pmessage', b'n*', b'news', b'm1'])
        assert_eq(next_push(pat), [b'pmessage', b'n*', b'nobody', b'x'])
        assert_eq(next_push(pat), [b'pmessage', b'n*', b'nope', b'y'])
        assert_eq(next_push(sh), [b'smessage', b'shard', b's1'])
        # EVALSHA and a function the same way
        sha = pub.call('SCRIPT', 'LOAD',
                       "return redis.call('publish', KEYS[1], ARGV[1])")
        assert_eq(pub.call('EVALSHA', sha, 1, 'news', 'm2'), 3)
        for c in (a, b):
            assert_eq(next_push(c), [b'message', b'news', b'm2'])
        assert_eq(next_push(pat), [b'pmessage', b'n*', b'news', b'm2'])
        assert_eq(pub.call('FUNCTION', 'LOAD', 'REPLACE',
                           "#!lua name=psl\nredis.register_function('pf', "
                           "function(k, a) return redis.call('publish', "
                           "'news', a[1]) end)"), b'psl')
        assert_eq(pub.call('FCALL', 'pf', 0, 'm3'), 3)
        assert_eq(next_push(a), [b'message', b'news', b'm3'])
        assert_eq(pub.call('FUNCTION', 'DELETE', 'psl'), 'OK')
        # outside a script, the same counts
        assert_eq(pub.call('PUBLISH', 'news', 'm4'), 3)
    finally:
        close_all(pub, a, b, pat, sh)


def test_pubsub_queries_in_script(s):
    """PUBSUB NUMSUB / CHANNELS / NUMPAT inside a script see every
    worker's subscribers, as outside."""
    pub, a, b, pat = on_workers(s, 'ABCB')
    try:
        subscribe(a, 'SUBSCRIBE', 'q1', 'q2')
        subscribe(b, 'SUBSCRIBE', 'q1')
        subscribe(pat, 'PSUBSCRIBE', 'zz*')
        wait_numsub(pub, 'q1', 2)
        got = pub.call('EVAL', "return redis.call('pubsub', 'numsub', "
                       "'q1', 'q2', 'q3')", 0)
        assert_eq(got, [b'q1', 2, b'q2', 1, b'q3', 0])
        got = pub.call('EVAL', "local r = redis.call('pubsub', 'channels', "
                       "'q*') table.sort(r) return r", 0)
        assert_eq(got, [b'q1', b'q2'])
        assert_eq(pub.call('EVAL', "return redis.call('pubsub', 'numpat')",
                           0), 1)
        # several in one script, with a PUBLISH between them
        got = pub.call('EVAL', "return {redis.call('pubsub', 'numsub', "
                       "'q1')[2], redis.call('publish', 'q1', 'hi'), "
                       "redis.call('pubsub', 'numpat')}", 0)
        assert_eq(got, [2, 2, 1])
        assert_eq(next_push(a), [b'message', b'q1', b'hi'])
        assert_eq(next_push(b), [b'message', b'q1', b'hi'])
        got = pub.call('EVAL', "return redis.call('pubsub', 'shardnumsub', "
                       "'q1')", 0)
        assert_eq(got, [b'q1', 0])
    finally:
        close_all(pub, a, b, pat)


def test_writes_visible_when_message_arrives(s):
    """A subscriber on another worker that reads the key a script wrote
    just before publishing sees the new value."""
    pub, sub, reader = on_workers(s, 'ABB')
    try:
        subscribe(sub, 'SUBSCRIBE', 'changed')
        wait_numsub(pub, 'changed', 1)
        body = ("redis.call('set', KEYS[1], ARGV[1]) "
                "return redis.call('publish', 'changed', KEYS[1])")
        for i in range(20):
            assert_eq(pub.call('EVAL', body, 1, 'vis', str(i)), 1)
            assert_eq(next_push(sub), [b'message', b'changed', b'vis'])
            assert_eq(reader.call('GET', 'vis'), str(i).encode())
    finally:
        close_all(pub, sub, reader)


def test_error_after_publish_still_delivers(s):
    """A script that fails after its PUBLISH: the message was sent (Redis
    has no rollback, and neither has a script error in larder)."""
    pub, sub = on_workers(s, 'AB')
    try:
        subscribe(sub, 'SUBSCRIBE', 'e')
        wait_numsub(pub, 'e', 1)
        got = pub.call('EVAL', "redis.call('publish', 'e', 'before') "
                       "return redis.error_reply('MY stop')", 0)
        assert_error(got, 'MY stop')
        assert_eq(next_push(sub), [b'message', b'e', b'before'])
        got = pub.call('EVAL', "redis.call('publish', 'e', 'b2') "
                       "redis.call('nosuchcmd')", 0)
        assert_true(isinstance(got, RespError), 'the script failed')
        assert_eq(next_push(sub), [b'message', b'e', b'b2'])
    finally:
        close_all(pub, sub)


def test_scripts_publishing_on_two_workers_at_once(s):
    """Scripts on two workers that each publish many times, at once (each
    waits for counts the other worker gives): both finish, counts
    right."""
    p1, p2, sub = on_workers(s, 'ABC')
    try:
        subscribe(sub, 'SUBSCRIBE', 'both')
        wait_numsub(p1, 'both', 1)
        body = ("local n = 0 for i = 1, 50 do n = n + "
                "redis.call('publish', 'both', ARGV[1]) "
                "redis.call('incr', KEYS[1]) end return n")
        out = {}

        def run(c, key, tag):
            out[tag] = c.call('EVAL', body, 1, key, tag)

        t0 = time.time()
        ts = [threading.Thread(target=run, args=(p1, 'cnt1', 'x')),
              threading.Thread(target=run, args=(p2, 'cnt2', 'y'))]
        for t in ts:
            t.start()
        for t in ts:
            t.join(20)
        assert_eq(out, {'x': 50, 'y': 50})
        assert_true(time.time() - t0 < 10, 'both done in time')
        got = [next_push(sub)[2] for _ in range(100)]
        assert_eq(sorted(set(got)), [b'x', b'y'])
        assert_eq(got.count(b'x'), 50)
        assert_eq(p1.call('MGET', 'cnt1', 'cnt2'), [b'50', b'50'])
    finally:
        close_all(p1, p2, sub)


def test_killed_script_publishes_nothing(s):
    """larder: a killed script's messages are dropped with its
    transaction, whether it wrote or not (Redis delivers them)."""
    larder_only()
    pub, sub, other = on_workers(s, 'ABB')
    try:
        subscribe(sub, 'SUBSCRIBE', 'doom')
        wait_numsub(other, 'doom', 1)
        for wrote in (True, False):
            body = ("redis.call('publish', 'doom', 'never') %s "
                    "while true do end" %
                    ("redis.call('set', 'doomkey', '1')" if wrote else ''))
            out = {}

            def run():
                out['r'] = pub.call('EVAL', body, 0)

            t = threading.Thread(target=run)
            t.start()
            wait_until(lambda: other.call('FUNCTION', 'STATS')[1], 5,
                       'the script runs')
            assert_eq(other.call('SCRIPT', 'KILL'), 'OK')
            t.join(10)
            assert_error_prefix(out['r'], KILLED)
            no_push_before(sub, lambda: other.call('PUBLISH', 'doom',
                                                   'marker'), b'marker')
            assert_eq(other.call('GET', 'doomkey'), None)
    finally:
        close_all(pub, sub, other)


if __name__ == '__main__':
    main(globals(), workers=WORKERS)
