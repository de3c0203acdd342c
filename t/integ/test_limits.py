"""Bounded memory per connection: a client that pipelines a million commands without reading stalls at client-reply-backlog and then gets every reply; a reply that would pass client-reply-limit (HGETALL, LRANGE, SMEMBERS, ZRANGE, KEYS of big data, SRANDMEMBER with a huge count, a subscriber that never reads) closes that connection alone, with the worker's RSS bounded and other clients served; the limit is a runtime directive."""

import socket
import threading
import time

from larder_test import (Client, RespError, Server, asan_small_quarantine,
                         assert_eq, assert_true, larder_only, main, proc_kib,
                         rss_bound_mib, short, wait_until)

MIB = 1024 * 1024
VALUE = b'x' * 100
PIPELINE = 1000000          # commands the never-reading client sends
BACKLOG = '4mb'             # its server's client-reply-backlog
# RSS a worker may gain while such a client is stalled: the backlog in a
# buffer that doubles (8 MiB), what it read but did not run, and the
# allocator's slack. Unbounded it would hold 108 MB of replies and 22 MB
# of commands.
PIPELINE_RSS_MIB = rss_bound_mib(24)
LIMIT = '2mb'               # client-reply-limit of the big-reply tests
BIG = 10000                 # elements of each big collection
ELEM = b'e' * 300           # so that each holds about 3 MB
# A worker's RSS (less its mapped file pages) with the big data set read
# and one reply refused at 2 MB; SRANDMEMBER s -100000000 alone
# would be 30 GB without the limit.
BIG_RSS_MIB = rss_bound_mib(96)
# A worker's RSS with a small data set (a few keys).
SMALL_RSS_MIB = rss_bound_mib(64)
asan_small_quarantine()


def max_child_rss_mib(server):
    """The children's peak RSS less the file pages they map now (LMDB's
    pages read through the map: as large as the data file, which the
    durable pin lets outgrow the data, and the kernel's to drop): what
    they allocated."""
    return max(proc_kib(p) - (proc_kib(p, 'RssFile') or 0)
               for p in server.children()) / 1024.0


def log_has(server, text):
    return text in server.log_text()


# ---------------------------------------------------------------------

def test_pipeline_that_is_never_read_costs_bounded_memory():
    larder_only()
    with Server(workers=1, args=['--client-reply-backlog', BACKLOG]) as s:
        with s.client() as c:
            assert_eq(c.call('SET', 'v', VALUE), 'OK')
        base = max_child_rss_mib(s)
        cmd = b'*2\r\n$3\r\nGET\r\n$1\r\nv\r\n'
        unit = b'$%d\r\n%s\r\n' % (len(VALUE), VALUE)
        sock = socket.create_connection(('127.0.0.1', s.port))
        sent = [0]

        def sender():
            chunk = cmd * 1000
            for _ in range(PIPELINE // 1000):
                sock.sendall(chunk)
                sent[0] += 1000

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        # The server stops reading it: the sender stalls, far from done.
        last, still = -1, 0
        while still < 10:
            time.sleep(0.1)
            still = still + 1 if sent[0] == last else 0
            last = sent[0]
        assert_true(sent[0] < PIPELINE, 'the server read all %d commands '
                    'of a client that reads nothing' % PIPELINE)
        peak = max(max_child_rss_mib(s) for _ in range(5))
        assert_true(peak - base <= PIPELINE_RSS_MIB, 'worker RSS grew %.1f '
                    'MiB (bound %d) for a client that does not read'
                    % (peak - base, PIPELINE_RSS_MIB))
        with s.client() as other:          # the same worker serves others
            other.settimeout(1.0)
            assert_eq(other.call('PING'), 'PONG')
        # Now it reads: every reply arrives, in order, and the rest of its
        # commands run.
        want = PIPELINE * len(unit)
        got = 0
        sock.settimeout(30)
        while got < want:
            data = sock.recv(1 << 20)
            assert_true(data, 'connection closed after %d of %d bytes'
                        % (got, want))
            off = got % len(unit)
            n = len(data)
            ref = (unit * (n // len(unit) + 2))[off:off + n]
            assert_true(data == ref, 'reply bytes differ at offset %d' % got)
            got += n
        t.join(30)
        assert_true(not t.is_alive(), 'sender still blocked')
        sock.close()
        print('# pipeline of %d GETs never read: the server took %d commands '
              'before stalling, worker RSS +%.1f MiB (bound %d); then all '
              '%d MB of replies arrived' % (PIPELINE, last, peak - base,
                                          PIPELINE_RSS_MIB, want // 10 ** 6))


def big_data(c):
    """h, l, s, z of BIG elements of 300+ bytes, and BIG string keys."""
    step = 500
    for i in range(0, BIG, step):
        rng = range(i, i + step)
        cmds = [
            ['HSET', 'h'] + [x for j in rng for x in (b'%d' % j, ELEM)],
            ['RPUSH', 'l'] + [ELEM + b'%d' % j for j in rng],
            ['SADD', 's'] + [ELEM + b'%d' % j for j in rng],
            ['ZADD', 'z'] + [x for j in rng for x in (b'%d' % j,
                                                     ELEM + b'%d' % j)],
            ['MSET'] + [x for j in rng for x in (ELEM + b'%d' % j, b'1')],
        ]
        for r in c.pipeline(cmds):
            assert_true(not isinstance(r, RespError), short(r))


BIG_REPLIES = [
    ('HGETALL', 'h'), ('HVALS', 'h'), ('LRANGE', 'l', '0', '-1'),
    ('SMEMBERS', 's'), ('ZRANGE', 'z', '0', '-1', 'WITHSCORES'),
    ('KEYS', '*'), ('SRANDMEMBER', 's', '-100000000'),
    ('HRANDFIELD', 'h', '-100000000', 'WITHVALUES'),
    ('ZRANDMEMBER', 'z', '-100000000'), ('SCAN', '0', 'COUNT', '100000'),
]


def test_reply_over_the_limit_closes_that_connection_only():
    larder_only()
    with Server(workers=2, args=['--client-reply-limit', LIMIT]) as s:
        with s.client() as c:
            big_data(c)
            for cmd in BIG_REPLIES:
                with s.client() as victim:
                    t0 = time.time()
                    victim.send(*cmd)
                    assert_true(victim.is_closed(5.0), '%s: the connection '
                                'stayed open' % (cmd,))
                    took = time.time() - t0
                    assert_true(took < 2.0, '%s took %.1f s to be refused'
                                % (cmd, took))
                c.settimeout(1.0)
                assert_eq(c.call('PING'), 'PONG', 'another client')
            assert_eq(c.call('HLEN', 'h'), BIG)
            peak = max_child_rss_mib(s)
            assert_true(peak <= BIG_RSS_MIB, 'worker RSS %.1f MiB over %d'
                        % (peak, BIG_RSS_MIB))
            assert_true(log_has(s, 'its replies passed client-reply-limit'),
                        'the closing is logged')
            # Under the limit the same data is served; the directive is
            # live and the default (1gb) serves all of it.
            assert_eq(len(c.call('HMGET', 'h', *[b'%d' % j
                                                  for j in range(1000)])),
                      1000)
            assert_eq(c.call('CONFIG', 'SET', 'client-reply-limit', '1gb'),
                      'OK')
            with s.client() as big:
                r = big.call('HGETALL', 'h')
                assert_eq(len(r), 2 * BIG)
                assert_eq(len(big.call('LRANGE', 'l', '0', '-1')), BIG)
                assert_eq(len(big.call('SRANDMEMBER', 's', '-20000')), 20000)
            assert_eq(c.call('CONFIG', 'GET', 'client-reply-limit'),
                      [b'client-reply-limit', b'1073741824'])


def test_count_that_cannot_fit_is_refused_at_once():
    larder_only()
    with Server(workers=1) as s:           # the default limit, 1gb
        with s.client() as c:
            assert_eq(c.call('SADD', 's', 'a', 'b', 'c'), 3)
            assert_eq(c.call('HSET', 'h', 'a', '1'), 1)
            assert_eq(c.call('ZADD', 'z', '1', 'a'), 1)
        # 2^31 elements of 6 bytes at least: 12 GB. Dropped before any.
        for cmd in [('SRANDMEMBER', 's', '-2147483648'),
                    ('HRANDFIELD', 'h', '-2147483648', 'WITHVALUES'),
                    ('ZRANDMEMBER', 'z', '-9223372036854775807')]:
            with s.client() as victim:
                t0 = time.time()
                victim.send(*cmd)
                assert_true(victim.is_closed(5.0), '%s answered' % (cmd,))
                assert_true(time.time() - t0 < 1.0, '%s was slow' % (cmd,))
        assert_true(max_child_rss_mib(s) < SMALL_RSS_MIB, 'RSS')
        with s.client() as c:
            assert_eq(len(c.call('SRANDMEMBER', 's', '-1000')), 1000)


def test_subscriber_that_never_reads_is_dropped():
    larder_only()
    with Server(workers=2, args=['--client-reply-limit', LIMIT]) as s:
        sub = s.client()
        assert_eq(sub.call('SUBSCRIBE', 'ch'),
                  [b'subscribe', b'ch', 1])
        msg = b'm' * 10000
        with s.client() as pub:
            # 50 MB: past the kernel's socket buffers and the limit.
            for _ in range(50):
                rs = pub.pipeline([('PUBLISH', 'ch', msg)] * 100)
                assert_true(all(isinstance(r, int) for r in rs), short(rs))
            wait_until(lambda: pub.call('PUBLISH', 'ch', 'x') == 0, 10,
                       'the subscriber to be dropped')
            assert_eq(pub.call('PING'), 'PONG')
        assert_true(sub.is_closed(5.0), 'subscriber still connected')
        sub.close()
        assert_true(max_child_rss_mib(s) < BIG_RSS_MIB, 'RSS')


if __name__ == '__main__':
    main(globals())
