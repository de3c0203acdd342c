"""Checks pub/sub: SUBSCRIBE PSUBSCRIBE SSUBSCRIBE and their UNSUBSCRIBE forms, PUBLISH SPUBLISH across workers (counts, message and pmessage shapes in RESP2 and RESP3), PUBSUB CHANNELS NUMSUB NUMPAT SHARD* HELP, subscribed-mode errors, pipeline order around PUBLISH, exactly-once delivery when the group commit rewinds, 8 MiB messages, dropped clients, and kill -9 of the broker and of a worker."""

import os
import signal
import threading
import time

from larder_test import (IS_REDIS, Client, ConnectionClosed, Push, RespError,
                         Server, assert_eq, assert_error, assert_true,
                         encode_command, larder_only, main, proc_alive,
                         proc_children, wait_until)

ONLY = ("only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
        "allowed in this context")
MIB = 1024 * 1024
QUIET = 0.3             # seconds without a message: none is coming
OUTAGE_REPLY_S = 2.0    # PUBLISH without a broker answers within this
BROKER_COMM = 'larder-broker'


def cant(cmd):
    return "ERR Can't execute '%s': %s" % (cmd, ONLY)


def worker_of(c):
    """The worker process serving c (None against redis)."""
    if IS_REDIS:
        return None
    for line in c.call('INFO', 'server').decode().split('\r\n'):
        if line.startswith('worker_process_id:'):
            return int(line.split(':')[1])
    raise AssertionError('no worker_process_id in INFO')


def spread(s, n, workers=2):
    """n connections of s; on larder they are on at least `workers`
    different workers. Returns [(client, worker pid)]."""
    pool = []
    try:
        while True:
            c = s.client()
            pool.append((c, worker_of(c)))
            if len(pool) < n:
                continue
            if IS_REDIS:
                return pool
            pids = set(p for _, p in pool)
            if len(pids) >= workers:
                break
            assert_true(len(pool) < 60, 'connections on %d workers' % workers)
        # Keep n, covering the workers seen (one of each first).
        chosen, seen = [], set()
        for item in pool:
            if item[1] not in seen:
                chosen.append(item)
                seen.add(item[1])
        for item in pool:
            if len(chosen) >= n:
                break
            if item not in chosen:
                chosen.append(item)
        for item in pool:
            if item not in chosen:
                item[0].close()
        return chosen[:n]
    except BaseException:
        for c, _ in pool:
            c.close()
        raise


def close_all(pairs):
    for c, _ in pairs:
        c.close()


def read_within(c, t):
    """Replies arriving within t seconds (until t passes with none)."""
    out = []
    c.settimeout(t)
    try:
        while True:
            out.append(c.read_reply())
    except OSError:                     # socket.timeout
        pass
    finally:
        c.settimeout(10)
    return out


def confirmed(c, *cmd):
    """Send a (UN)SUBSCRIBE-family command naming channels or patterns and
    read its confirmation for each of them."""
    c.send(*cmd)
    for name in cmd[1:]:
        r = c.read_reply()
        assert_eq(r[1], name.encode(), '%s: the confirmation of each name'
                  % cmd[0])


def numsub(c, *chans):
    r = c.call('PUBSUB', 'NUMSUB', *chans)
    return dict(zip(r[0::2], r[1::2]))


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
# replies of the subscription commands

def test_unsubscribe_without_subscriptions(s):
    with s.client() as c:
        c.send('UNSUBSCRIBE')
        c.expect_raw(b'*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n')
        assert_eq(c.call('PUNSUBSCRIBE'), [b'punsubscribe', None, 0])
        assert_eq(c.call('SUNSUBSCRIBE'), [b'sunsubscribe', None, 0])
        c.send('UNSUBSCRIBE', 'a', 'b')
        assert_eq([c.read_reply(), c.read_reply()],
                  [[b'unsubscribe', b'a', 0], [b'unsubscribe', b'b', 0]])
        # Not subscribed: still a normal connection.
        assert_eq(c.call('PING'), 'PONG')
        assert_eq(c.call('SET', 'k', 'v'), 'OK')
        c.hello(3)
        assert_eq(c.call('UNSUBSCRIBE'), Push([b'unsubscribe', None, 0]))
        c.send_raw(encode_command('PUNSUBSCRIBE'))
        c.expect_raw(b'>3\r\n$12\r\npunsubscribe\r\n_\r\n:0\r\n')


def test_subscribe_counts_resp2(s):
    with s.client() as c:
        c.send('SUBSCRIBE', 'r2:a', 'r2:b', 'r2:a')
        c.expect_raw(b'*3\r\n$9\r\nsubscribe\r\n$4\r\nr2:a\r\n:1\r\n')
        assert_eq(c.read_reply(), [b'subscribe', b'r2:b', 2])
        assert_eq(c.read_reply(), [b'subscribe', b'r2:a', 2])
        # Patterns count with channels; shard channels apart.
        c.send('PSUBSCRIBE', 'r2:*', 'r2:*')
        assert_eq([c.read_reply(), c.read_reply()],
                  [[b'psubscribe', b'r2:*', 3], [b'psubscribe', b'r2:*', 3]])
        assert_eq(c.call('SSUBSCRIBE', 'r2:s'), [b'ssubscribe', b'r2:s', 1])
        assert_eq(c.call('UNSUBSCRIBE', 'nope'), [b'unsubscribe', b'nope', 3])
        assert_eq(c.call('PUNSUBSCRIBE', 'nope'),
                  [b'punsubscribe', b'nope', 3])
        assert_eq(c.call('SUNSUBSCRIBE', 'nope'),
                  [b'sunsubscribe', b'nope', 1])
        # No arguments: every channel, in no particular order.
        c.send('UNSUBSCRIBE')
        got = [c.read_reply(), c.read_reply()]
        assert_eq(sorted(r[1] for r in got), [b'r2:a', b'r2:b'])
        assert_eq(sorted(r[2] for r in got), [1, 2])
        assert_eq(got[0][0], b'unsubscribe')
        # Only the pattern left: the no-argument form has nothing to name.
        assert_eq(c.call('UNSUBSCRIBE'), [b'unsubscribe', None, 1])
        assert_eq(c.call('PUNSUBSCRIBE'), [b'punsubscribe', b'r2:*', 0])
        assert_eq(c.call('PUNSUBSCRIBE'), [b'punsubscribe', None, 0])
        # The shard channel keeps the connection in subscribed mode.
        assert_eq(c.call('PING'), [b'pong', b''])
        assert_eq(c.call('SUNSUBSCRIBE'), [b'sunsubscribe', b'r2:s', 0])
        assert_eq(c.call('PING'), 'PONG')
        assert_eq(c.call('GET', 'nokey'), None)


def test_subscribe_errors(s):
    with s.client() as c:
        for cmd in ('SUBSCRIBE', 'PSUBSCRIBE', 'SSUBSCRIBE', 'PUBSUB'):
            assert_error(c.call(cmd), "ERR wrong number of arguments for "
                         "'%s' command" % cmd.lower())
        assert_error(c.call('PUBLISH', 'x'),
                     "ERR wrong number of arguments for 'publish' command")
        assert_error(c.call('SPUBLISH', 'x', 'y', 'z'),
                     "ERR wrong number of arguments for 'spublish' command")


def test_subscribed_mode_resp2(s):
    with s.client() as c:
        assert_eq(c.call('SUBSCRIBE', 'm2:a'), [b'subscribe', b'm2:a', 1])
        assert_error(c.call('GET', 'x'), cant('get'))
        assert_error(c.call('PUBLISH', 'm2:a', 'x'), cant('publish'))
        assert_error(c.call('ECHO', 'x'), cant('echo'))
        assert_error(c.call('HELLO', '3'), cant('hello'))
        assert_error(c.call('SELECT', '1'), cant('select'))
        # Subcommands are named; unknown ones and arity errors come first.
        assert_error(c.call('CLIENT', 'ID'), cant('client|id'))
        assert_error(c.call('CONFIG', 'GET', 'x'), cant('config|get'))
        assert_error(c.call('PUBSUB', 'CHANNELS'), cant('pubsub|channels'))
        assert_error(c.call('PUBSUB', 'NUMSUB', 'x'), cant('pubsub|numsub'))
        assert_error(c.call('PUBSUB', 'FOO'),
                     "ERR unknown subcommand 'FOO'. Try PUBSUB HELP.")
        assert_error(c.call('PUBSUB', 'NUMPAT', 'x'), "ERR wrong number of "
                     "arguments for 'pubsub|numpat' command")
        assert_error(c.call('CLIENT', 'FOO'),
                     "ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
        assert_error(c.call('GET'),
                     "ERR wrong number of arguments for 'get' command")
        assert_error(c.call('NOSUCH'), "ERR unknown command 'NOSUCH', with "
                     "args beginning with: ")
        # Allowed: the subscription commands, PING (as an array), QUIT,
        # RESET.
        assert_eq(c.call('PING'), [b'pong', b''])
        assert_eq(c.call('PING', 'hi'), [b'pong', b'hi'])
        assert_error(c.call('PING', 'a', 'b'),
                     "ERR wrong number of arguments for 'ping' command")
        assert_eq(c.call('PSUBSCRIBE', 'm2:*'), [b'psubscribe', b'm2:*', 2])
        assert_eq(c.call('RESET'), 'RESET')
        assert_eq(c.call('PING'), 'PONG')
        assert_eq(c.call('GET', 'x'), None)
        assert_eq(c.call('UNSUBSCRIBE'), [b'unsubscribe', None, 0])
        assert_eq(c.call('SUBSCRIBE', 'm2:a'), [b'subscribe', b'm2:a', 1])
        assert_eq(c.call('QUIT'), 'OK')
        assert_true(c.is_closed(), 'QUIT closes a subscribed connection')


def test_resp3_subscribed_runs_any_command(s):
    with s.client() as c:
        c.hello(3)
        c.send('SUBSCRIBE', 'm3:a')
        c.expect_raw(b'>3\r\n$9\r\nsubscribe\r\n$4\r\nm3:a\r\n:1\r\n')
        assert_eq(c.call('PING'), 'PONG')
        assert_eq(c.call('SET', 'm3:k', 'v'), 'OK')
        assert_eq(c.call('GET', 'm3:k'), b'v')
        assert_eq(c.call('PSUBSCRIBE', 'm3:*'),
                  Push([b'psubscribe', b'm3:*', 2]))
        # Its own message comes before the PUBLISH reply, as with Redis.
        c.send('PUBLISH', 'm3:a', 'hello')
        assert_eq(c.read_reply(), Push([b'message', b'm3:a', b'hello']))
        assert_eq(c.read_reply(), Push([b'pmessage', b'm3:*', b'm3:a',
                                        b'hello']))
        assert_eq(c.read_reply(), 2)
        # HELLO 2 while subscribed: now RESP2's subscribed mode.
        r = c.hello(2)
        assert_true(isinstance(r, list) and r[r.index(b'proto') + 1] == 2,
                    'HELLO 2 while subscribed: %r' % (r,))
        assert_error(c.call('GET', 'm3:k'), cant('get'))
        assert_eq(c.call('PING'), [b'pong', b''])


def test_message_shapes_and_counts(s):
    subs = spread(s, 3)
    try:
        a, b, p = subs[0][0], subs[1][0], subs[2][0]
        b.hello(3)
        assert_eq(a.call('SUBSCRIBE', 'sh:ch'), [b'subscribe', b'sh:ch', 1])
        assert_eq(a.call('PSUBSCRIBE', 'sh:*'), [b'psubscribe', b'sh:*', 2])
        assert_eq(b.call('PSUBSCRIBE', 'sh:c?'),
                  Push([b'psubscribe', b'sh:c?', 1]))
        assert_eq(b.call('SSUBSCRIBE', 'sh:ch'),
                  Push([b'ssubscribe', b'sh:ch', 1]))
        # Causality: every confirmation was read, so a PUBLISH from any
        # worker counts every subscription (channel + matching patterns).
        assert_eq(p.call('PUBLISH', 'sh:ch', 'm1'), 3)
        a.expect_raw(b'*3\r\n$7\r\nmessage\r\n$5\r\nsh:ch\r\n$2\r\nm1\r\n')
        a.expect_raw(b'*4\r\n$8\r\npmessage\r\n$4\r\nsh:*\r\n$5\r\nsh:ch\r\n'
                     b'$2\r\nm1\r\n')
        b.expect_raw(b'>4\r\n$8\r\npmessage\r\n$5\r\nsh:c?\r\n$5\r\nsh:ch\r\n'
                     b'$2\r\nm1\r\n')
        assert_eq(p.call('PUBLISH', 'sh:other', 'm2'), 1)
        assert_eq(a.read_reply(), [b'pmessage', b'sh:*', b'sh:other', b'm2'])
        assert_eq(p.call('PUBLISH', 'nobody', 'm3'), 0)
        # Shard channels: their own namespace, no patterns.
        assert_eq(p.call('SPUBLISH', 'sh:ch', 'm4'), 1)
        b.expect_raw(b'>3\r\n$8\r\nsmessage\r\n$5\r\nsh:ch\r\n$2\r\nm4\r\n')
        assert_eq(p.call('SPUBLISH', 'sh:cx', 'm5'), 0)
        assert_eq(read_within(a, QUIET) + read_within(b, QUIET), [],
                  'no other message')
        # Binary-safe names and payloads, empty ones too.
        assert_eq(a.call('SUBSCRIBE', b'\x00\r\n'), [b'subscribe', b'\x00\r\n',
                                                    3])
        assert_eq(p.call('PUBLISH', b'\x00\r\n', b''), 1)
        assert_eq(a.read_reply(), [b'message', b'\x00\r\n', b''])
    finally:
        close_all(subs)


def test_publish_across_workers(s):
    nsub, npat = 12, 4
    subs = spread(s, nsub + npat + 1, workers=1 if IS_REDIS else 3)
    try:
        pub = subs[-1][0]
        chans, pats = subs[:nsub], subs[nsub:nsub + npat]
        for c, _ in chans:
            assert_eq(c.call('SUBSCRIBE', 'aw:news')[0], b'subscribe')
        for c, _ in pats:
            assert_eq(c.call('PSUBSCRIBE', 'aw:*')[0], b'psubscribe')
        if not IS_REDIS:
            workers = set(p for _, p in subs)
            assert_true(len(workers) >= 2, 'subscribers on several workers')
        for i in range(5):
            assert_eq(pub.call('PUBLISH', 'aw:news', 'n%d' % i), nsub + npat)
        assert_eq(pub.call('PUBLISH', 'aw:misc', 'x'), npat)
        for c, _ in chans:
            got = [c.read_reply() for _ in range(5)]
            assert_eq(got, [[b'message', b'aw:news', b'n%d' % i]
                            for i in range(5)])
        for c, _ in pats:
            got = [c.read_reply() for _ in range(6)]
            assert_eq(got, [[b'pmessage', b'aw:*', b'aw:news', b'n%d' % i]
                            for i in range(5)] +
                      [[b'pmessage', b'aw:*', b'aw:misc', b'x']])
        assert_eq(sum(len(read_within(c, 0.05)) for c, _ in subs[:-1]), 0,
                  'no duplicate')
    finally:
        close_all(subs)


def test_subscribe_then_publish_is_causal(s):
    """Once a client has read its SUBSCRIBE (UNSUBSCRIBE) confirmation, a
    PUBLISH or PUBSUB NUMSUB sent after that from a client of another
    worker counts it (no longer counts it), as with one Redis process,
    also while other clients keep the broker busy."""
    pairs = spread(s, 4)
    stop = threading.Event()
    errors = []

    def background(c, tag):
        try:
            while not stop.is_set():
                c.pipeline([('PUBLISH', 'ca:bg', tag)] * 20)
        except Exception as e:          # reported below
            errors.append(repr(e))
    ths = []
    try:
        (sub, _), (pub, _) = pairs[:2]
        if not IS_REDIS:
            assert_true(pairs[0][1] != pairs[1][1], 'two workers')
        ths = [threading.Thread(target=background, args=(c, 'b%d' % i))
               for i, (c, _) in enumerate(pairs[2:])]
        for t in ths:
            t.start()
        for i in range(300):
            ch = 'ca:%d' % i
            assert_eq(sub.call('SUBSCRIBE', ch), [b'subscribe', ch.encode(), 1])
            assert_eq(pub.call('PUBSUB', 'NUMSUB', ch), [ch.encode(), 1],
                      'iteration %d' % i)
            assert_eq(pub.call('PUBLISH', ch, 'm'), 1, 'iteration %d' % i)
            assert_eq(sub.read_reply(), [b'message', ch.encode(), b'm'])
            assert_eq(sub.call('UNSUBSCRIBE', ch),
                      [b'unsubscribe', ch.encode(), 0])
            # Unsubscribed: no longer counted, nothing reaches it.
            assert_eq(pub.call('PUBSUB', 'NUMSUB', ch), [ch.encode(), 0],
                      'iteration %d' % i)
            assert_eq(pub.call('PUBLISH', ch, 'gone'), 0, 'iteration %d' % i)
    finally:
        stop.set()
        for t in ths:
            t.join(30)
        close_all(pairs)
    assert_eq(errors, [], 'background publishers')


def test_pubsub_introspection(s):
    subs = spread(s, 5)
    try:
        q = subs[-1][0]
        with s.client() as c0:
            base_pat = c0.call('PUBSUB', 'NUMPAT')
        (a, _), (b, _), (c, _), (d, _) = subs[:4]
        # Every confirmation is read (one per name) before the next step,
        # so each step is in effect when the next query is sent.
        confirmed(a, 'SUBSCRIBE', 'in:x', 'in:y')
        confirmed(b, 'SUBSCRIBE', 'in:x')
        confirmed(c, 'PSUBSCRIBE', 'in:*', 'zz:*')
        confirmed(d, 'PSUBSCRIBE', 'in:*')      # the same pattern again
        confirmed(d, 'SSUBSCRIBE', 'in:s')
        assert_eq(numsub(q, 'in:x', 'in:y', 'in:z', 'in:*', 'in:s'),
                  {b'in:x': 2, b'in:y': 1, b'in:z': 0, b'in:*': 0,
                   b'in:s': 0})
        assert_eq(q.call('PUBSUB', 'NUMSUB', 'in:x', 'in:x'),
                  [b'in:x', 2, b'in:x', 2])
        assert_eq(q.call('PUBSUB', 'NUMSUB'), [])
        # Unique patterns, server-wide.
        assert_eq(q.call('PUBSUB', 'NUMPAT'), base_pat + 2)
        assert_eq(sorted(q.call('PUBSUB', 'CHANNELS', 'in:*')),
                  [b'in:x', b'in:y'])
        assert_eq(sorted(q.call('PUBSUB', 'CHANNELS', 'in:?')),
                  [b'in:x', b'in:y'])
        assert_eq(sorted(q.call('PUBSUB', 'CHANNELS', 'in:[xz]')), [b'in:x'])
        assert_true({b'in:x', b'in:y'} <= set(q.call('PUBSUB', 'CHANNELS')),
                    'CHANNELS without a pattern lists all')
        assert_eq(q.call('PUBSUB', 'SHARDCHANNELS', 'in:*'), [b'in:s'])
        assert_eq(q.call('PUBSUB', 'SHARDNUMSUB', 'in:s', 'in:x'),
                  [b'in:s', 1, b'in:x', 0])
        assert_eq(q.call('PUBLISH', 'in:x', 'v'), 4)
        for r, kind in ((a, b'message'), (b, b'message'), (c, b'pmessage'),
                        (d, b'pmessage')):
            assert_eq(r.read_reply()[0], kind)
        q.hello(3)
        assert_eq(q.call('PUBSUB', 'NUMSUB', 'in:y'), [b'in:y', 1])
        assert_eq(q.call('PUBSUB', 'NUMPAT'), base_pat + 2)
        # Unsubscribing takes them out.
        confirmed(a, 'UNSUBSCRIBE', 'in:y')
        confirmed(c, 'PUNSUBSCRIBE', 'in:*', 'zz:*')
        assert_eq(d.call('RESET'), 'RESET')
        assert_eq(numsub(q, 'in:x', 'in:y'), {b'in:x': 2, b'in:y': 0})
        assert_eq(q.call('PUBSUB', 'NUMPAT'), base_pat)
        assert_eq(q.call('PUBSUB', 'CHANNELS', 'in:*'), [b'in:x'])
        assert_eq(q.call('PUBSUB', 'SHARDCHANNELS', 'in:*'), [])
    finally:
        close_all(subs)


def test_pubsub_help_and_errors(s):
    with s.client() as c:
        r = c.call('PUBSUB', 'HELP')
        assert_eq(len(r), 14)
        assert_eq(r[0], 'PUBSUB <subcommand> [<arg> [value] [opt] ...]. '
                  'Subcommands are:')
        assert_eq(r[-1], '    Prints this help.')
        assert_error(c.call('PUBSUB', 'help', 'x'),
                     "ERR wrong number of arguments for 'pubsub|help' "
                     "command")
        assert_error(c.call('PUBSUB', 'nope'),
                     "ERR unknown subcommand 'nope'. Try PUBSUB HELP.")
        assert_error(c.call('PUBSUB', 'numpat', 'x'),
                     "ERR wrong number of arguments for 'pubsub|numpat' "
                     "command")
        assert_error(c.call('PUBSUB', 'channels', 'a', 'b'),
                     "ERR unknown subcommand or wrong number of arguments "
                     "for 'channels'. Try PUBSUB HELP.")
        assert_error(c.call('PUBSUB', 'SHARDCHANNELS', 'a', 'b'),
                     "ERR unknown subcommand or wrong number of arguments "
                     "for 'SHARDCHANNELS'. Try PUBSUB HELP.")


def test_publish_keeps_pipeline_order(s):
    subs = spread(s, 3)
    try:
        sub, c, other = subs[0][0], subs[1][0], subs[2][0]
        sub.call('SUBSCRIBE', 'po:ch')
        cmds = [('SET', 'po:k', '1'), ('PUBLISH', 'po:ch', 'm1'),
                ('GET', 'po:k'), ('INCR', 'po:n'),
                ('PUBLISH', 'po:ch', 'm2'), ('PING',),
                ('PUBLISH', 'po:none', 'x'), ('PUBSUB', 'NUMSUB', 'po:ch'),
                ('PUBLISH', 'po:ch', 'm3'), ('GET', 'po:n')]
        want = ['OK', 1, b'1', 1, 1, 'PONG', 0, [b'po:ch', 1], 1, b'1']
        c.send_raw(b''.join(encode_command(*x) for x in cmds))
        # Another connection is served meanwhile.
        assert_eq(other.call('PING'), 'PONG')
        assert_eq([c.read_reply() for _ in cmds], want)
        assert_eq([sub.read_reply() for _ in range(3)],
                  [[b'message', b'po:ch', b'm%d' % i] for i in (1, 2, 3)])
        # Many pipelined PUBLISHes from several connections: every reply
        # in place, every message once, each publisher's in order.
        n = 200

        def burst(conn, tag, out):
            try:
                cmds = []
                for i in range(n):
                    cmds.append(('PUBLISH', 'po:ch', '%s:%d' % (tag, i)))
                    cmds.append(('INCR', 'po:c:' + tag))
                out[tag] = conn.pipeline(cmds)
            except Exception as e:      # reported below
                out[tag] = repr(e)
        pubs = spread(s, 3)
        try:
            out = {}
            ths = [threading.Thread(target=burst, args=(pc, 'p%d' % i, out))
                   for i, (pc, _) in enumerate(pubs)]
            for t in ths:
                t.start()
            for t in ths:
                t.join(60)
            for i in range(3):
                tag = 'p%d' % i
                want = []
                for j in range(n):
                    want += [1, j + 1]
                assert_eq(out[tag], want, 'replies of %s' % tag)
        finally:
            close_all(pubs)
        got = [sub.read_reply() for _ in range(3 * n)]
        seqs = {}
        for m in got:
            assert_eq(m[:2], [b'message', b'po:ch'])
            tag, i = m[2].decode().split(':')
            seqs.setdefault(tag, []).append(int(i))
        assert_eq(seqs, {'p%d' % i: list(range(n)) for i in range(3)})
        assert_eq(read_within(sub, QUIET), [], 'no duplicate')
    finally:
        close_all(subs)


def test_disconnected_subscriber_leaves_counts(s):
    subs = spread(s, 4)
    try:
        q = subs[-1][0]
        for c, _ in subs[:3]:
            c.call('SUBSCRIBE', 'dc:ch')
            c.call('PSUBSCRIBE', 'dc:*')
        base = q.call('PUBSUB', 'NUMPAT')
        assert_eq(q.call('PUBLISH', 'dc:ch', 'x'), 6)
        subs[0][0].close()
        wait_until(lambda: numsub(q, 'dc:ch') == {b'dc:ch': 2}, 10,
                   'the closed subscriber to leave NUMSUB')
        assert_eq(q.call('PUBLISH', 'dc:ch', 'y'), 4)
        subs[1][0].close()
        subs[2][0].close()
        wait_until(lambda: numsub(q, 'dc:ch') == {b'dc:ch': 0}, 10,
                   'every closed subscriber to leave NUMSUB')
        wait_until(lambda: q.call('PUBSUB', 'NUMPAT') == base - 1, 10,
                   'the pattern to go')
        assert_eq(q.call('PUBLISH', 'dc:ch', 'z'), 0)
        assert_eq(q.call('PUBSUB', 'CHANNELS', 'dc:*'), [])
    finally:
        close_all(subs)


def test_big_message(s):
    subs = spread(s, 3)
    try:
        a, b, p = subs[0][0], subs[1][0], subs[2][0]
        b.hello(3)
        a.call('SUBSCRIBE', 'big:ch')
        b.call('PSUBSCRIBE', 'big:*')
        msg = os.urandom(8 * MIB)
        assert_eq(p.call('PUBLISH', 'big:ch', msg), 2)
        assert_eq(a.read_reply(), [b'message', b'big:ch', msg])
        assert_eq(b.read_reply(), Push([b'pmessage', b'big:*', b'big:ch',
                                        msg]))
        # And small ones still flow after it.
        assert_eq(p.call('PUBLISH', 'big:ch', 'after'), 2)
        assert_eq(a.read_reply(), [b'message', b'big:ch', b'after'])
        assert_eq(b.read_reply()[3], b'after')
    finally:
        close_all(subs)


def test_exactly_once_when_the_group_rewinds():
    """Writers on the edge of a full disk make groups fail and replay
    their commands one transaction each; PUBLISHes run in those groups by
    other clients are answered and delivered exactly once."""
    larder_only()
    with Server(workers=2, args=['--maxdisk', '2mb']) as srv:
        sub = srv.client()
        assert_eq(sub.call('SUBSCRIBE', 'once'), [b'subscribe', b'once', 1])
        nwriters, npub, per, keep = 4, 4, 12, 11
        published, errors, refused = 300, [], []
        stop = threading.Event()
        replies = {}

        def writer(tag):
            # Live data stays about `keep` rounds: the disk stays full but
            # frees space all the time, so groups mix good and failed
            # writes.
            try:
                with srv.client() as c:
                    r = 0
                    while not stop.is_set():
                        cmds = [('DEL',) + tuple('%s:%d:%d' % (tag, r - keep, j)
                                                 for j in range(per))]
                        cmds += [('SET', '%s:%d:%d' % (tag, r, j),
                                  os.urandom(4000)) for j in range(per)]
                        for x in c.pipeline(cmds)[1:]:
                            if (isinstance(x, RespError) and
                                    x.message.startswith('ERR disk full')):
                                refused.append(tag)
                            elif x != 'OK':
                                errors.append(repr(x))
                        r += 1
            except Exception as e:      # reported below
                errors.append(repr(e))

        def publisher(tag):
            try:
                with srv.client() as c:
                    got = []
                    for i in range(0, published, 3):
                        got += c.pipeline([('PUBLISH', 'once', '%s:%d'
                                            % (tag, j))
                                           for j in range(i, i + 3)])
                    replies[tag] = got
            except Exception as e:      # reported below
                errors.append(repr(e))
        ws = [threading.Thread(target=writer, args=('w%d' % i,))
              for i in range(nwriters)]
        ps = [threading.Thread(target=publisher, args=('p%d' % i,))
              for i in range(npub)]
        # The publishers start once the disk has been full often, so that
        # their PUBLISHes run among failing groups (they may finish in a
        # fraction of a second: a fixed start raced them against the fill).
        for t in ws:
            t.start()
        wait_until(lambda: len(refused) > 100 or errors, 60,
                   'the disk full often')
        before = len(refused)
        for t in ps:
            t.start()
        for t in ps:
            t.join(120)
        during = len(refused) - before
        stop.set()
        for t in ws:
            t.join(120)
        assert_eq(errors, [], 'client errors')
        print('# %d writes refused (disk full), %d while publishing'
              % (len(refused), during))
        assert_true(during > 0, 'the disk was full while they published')
        for tag, got in replies.items():
            assert_eq(got, [1] * published, 'PUBLISH replies of %s' % tag)
        got = [sub.read_reply() for _ in range(npub * published)]
        assert_eq(sorted(m[2] for m in got),
                  sorted(b'p%d:%d' % (i, j) for i in range(npub)
                         for j in range(published)))
        assert_eq(read_within(sub, QUIET), [], 'no message twice')
        sub.close()


def test_kill_broker():
    """kill -9 of the broker: service goes on, PUBLISH answers without
    hanging, the respawned broker learns every subscription again."""
    larder_only()
    with Server(workers=2) as srv:
        subs = spread(srv, 5)
        try:
            pub = subs[-1][0]
            for c, _ in subs[:3]:
                c.call('SUBSCRIBE', 'kb:ch')
            subs[3][0].call('PSUBSCRIBE', 'kb:*')
            assert_eq(pub.call('PUBLISH', 'kb:ch', 'before'), 4)
            for c, _ in subs[:4]:
                assert_eq(c.read_reply()[-1], b'before')
            victim = broker_pid(srv)
            assert_true(victim, 'a broker process')
            # PUBLISHes in flight when the broker dies are answered too:
            # kill it while a pipelined flood is half delivered.
            nflood = 3000
            fsub, flood, flood_out = subs[4][0], srv.client(), []
            fsub.call('SUBSCRIBE', 'flood:kb')

            def publish_flood():
                try:
                    cmds = [('PUBLISH', 'flood:kb', 'x')] * nflood
                    flood_out.extend(flood.pipeline(cmds))
                except Exception as e:  # reported below
                    flood_out.append(repr(e))
            th = threading.Thread(target=publish_flood)
            th.start()
            for _ in range(100):
                fsub.read_reply()
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: not proc_alive(victim), 10, 'broker to die')
            th.join(120)
            assert_true(not th.is_alive(), 'the flood ended')
            flood.close()
            assert_eq(len(flood_out), nflood, 'every flooded PUBLISH answered')
            assert_eq([r for r in flood_out if r not in (0, 1)], [],
                      'flood replies: 1, or 0 when the broker died first')
            print('# %d of %d flooded PUBLISHes answered 0 (pending when '
                  'the broker died, or run without it and no subscriber on '
                  'their worker)' % (flood_out.count(0), nflood))
            read_within(fsub, QUIET)
            assert_eq(fsub.call('UNSUBSCRIBE'), [b'unsubscribe', b'flood:kb',
                                                 0])
            # Other commands go on; PUBLISH answers (0 or a count).
            assert_eq(pub.call('SET', 'kb:k', 'v'), 'OK')
            t0 = time.monotonic()
            r = pub.call('PUBLISH', 'kb:ch', 'during')
            assert_true(time.monotonic() - t0 < OUTAGE_REPLY_S,
                        'PUBLISH answered promptly without a broker')
            assert_true(isinstance(r, int) and 0 <= r <= 4,
                        'PUBLISH during the outage: %r' % (r,))
            wait_until(lambda: broker_pid(srv) not in (None, victim), 10,
                       'a new broker')
            # Every worker re-sent its subscriptions to the new broker.
            wait_until(lambda: pub.call('PUBLISH', 'kb:ch', 'probe') == 4, 10,
                       'messages to flow to every subscriber again')
            assert_eq(numsub(pub, 'kb:ch'), {b'kb:ch': 3})
            assert_eq(pub.call('PUBSUB', 'NUMPAT'), 1)
            for c, _ in subs[:4]:
                read_within(c, QUIET)           # 'during' and the probes
            assert_eq(pub.call('PUBLISH', 'kb:ch', 'after'), 4)
            for c, _ in subs[:4]:
                assert_eq(c.read_reply()[-1], b'after')
            # New subscriptions work too.
            assert_eq(subs[4][0].call('PING'), 'PONG')
            assert_eq(subs[0][0].call('SUBSCRIBE', 'kb:new'),
                      [b'subscribe', b'kb:new', 2])
            assert_eq(pub.call('PUBLISH', 'kb:new', 'x'), 2)
        finally:
            close_all(subs)


def test_kill_worker_drops_its_subscriptions():
    larder_only()
    with Server(workers=2) as srv:
        subs = spread(srv, 10)
        try:
            for c, _ in subs:
                c.call('SUBSCRIBE', 'kw:ch')
            by_worker = {}
            for _, p in subs:
                by_worker[p] = by_worker.get(p, 0) + 1
            victim = max(by_worker, key=by_worker.get)
            left = len(subs) - by_worker[victim]
            with srv.client() as c:
                assert_eq(c.call('PUBLISH', 'kw:ch', 'x'), len(subs))
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: not proc_alive(victim), 10, 'worker to die')

            def counts():
                with srv.client() as c:
                    return numsub(c, 'kw:ch') == {b'kw:ch': left}
            wait_until(counts, 10, "the dead worker's subscriptions to go")
            with srv.client() as c:
                assert_eq(c.call('PUBLISH', 'kw:ch', 'y'), left)
        finally:
            close_all(subs)


if __name__ == '__main__':
    main(globals(), workers=3)
