"""Checks client control part 2 across workers: CLIENT TRACKING (default,
BCAST PREFIX, OPTIN/OPTOUT with CACHING, NOLOOP, REDIRECT; RESP3 pushes and
RESP2 redirection; a write on another worker invalidates; FLUSHALL), CLIENT
TRACKINGINFO / GETREDIR, INFO tracking_clients, MONITOR (Redis's line
format, commands of every worker), CLIENT PAUSE / UNPAUSE (WRITE, ALL,
timeout, clients of another worker), CLIENT REPLY ON|OFF|SKIP and
client-output-buffer-limit (a slow subscriber dropped at its limit while
another keeps receiving; omem in CLIENT LIST). Argument errors and
tracking's replies are compared reply by reply with redis-server."""

import re
import socket
import threading
import time

from larder_test import (IS_REDIS, Client, ConnectionClosed, Push,
                         RespError, Server, assert_eq, assert_error,
                         assert_true, encode_command, larder_only, main,
                         wait_until)
from test_clients import fields, lines, my_id, on_workers, peer

SLOW = 10.0
QUIET = 0.3  # how long "nothing arrives" is watched


def info_line(c):
    return fields(c.call('CLIENT', 'INFO').decode().strip())


def nothing_arrives(c, secs=QUIET):
    c.settimeout(secs)
    try:
        r = c.read_reply()
    except socket.timeout:
        return True
    finally:
        c.settimeout(SLOW)
    raise AssertionError('unexpected %r' % (r,))


def next_push(c):
    c.settimeout(SLOW)
    r = c.read_reply()
    assert_true(isinstance(r, Push), 'a push, got %r' % (r,))
    return list(r)


def settle(reader, writer):
    """Wait until the invalidations of writer's earlier writes reached the
    tracking reader (in default mode): they travel through the broker in
    commit order, so the one of a later write closes them. Whatever
    arrived meanwhile is dropped (a write's message may reach a reader
    after its next read of the key on another worker: a spurious
    invalidation, never a missed one)."""
    reader.call('GET', '__settle')
    writer.call('SET', '__settle', '1')
    while True:
        p = next_push(reader)
        if p[1] and b'__settle' in p[1]:
            return


def pair(s, want='AB'):
    if IS_REDIS:
        return [s.client() for _ in want]
    return on_workers(s, want)


# ---- tracking ----

def test_tracking_default_mode_across_workers(s):
    reader, writer = pair(s)
    with reader, writer:
        assert_eq(reader.hello(3)[b'proto'], 3)
        assert_eq(reader.call('CLIENT', 'TRACKING', 'on'), 'OK')
        writer.call('SET', 'tk1', 'a')
        writer.call('SET', 'tk2', 'a')
        settle(reader, writer)
        assert_eq(reader.call('GET', 'tk1'), b'a')
        assert_eq(reader.call('MGET', 'tk2', 'tkx'), [b'a', None])
        writer.call('SET', 'tk1', 'b')
        assert_eq(next_push(reader), [b'invalidate', [b'tk1']])
        writer.call('DEL', 'tk2')
        assert_eq(next_push(reader), [b'invalidate', [b'tk2']])
        # Forgotten once invalidated: no second message until read again.
        writer.call('SET', 'tk1', 'c')
        assert_true(nothing_arrives(reader))
        # A key written that was never read: nothing.
        writer.call('SET', 'tkx', 'c')
        assert_eq(next_push(reader), [b'invalidate', [b'tkx']])
        writer.call('SET', 'tkother', 'c')
        assert_true(nothing_arrives(reader))
        # Its own write invalidates too (no NOLOOP).
        settle(reader, writer)
        assert_eq(reader.call('GET', 'tk1'), b'c')
        assert_eq(reader.call('SET', 'tk1', 'd'), 'OK')
        assert_eq(next_push(reader), [b'invalidate', [b'tk1']])
        assert_eq(reader.call('CLIENT', 'TRACKING', 'off'), 'OK')
        assert_eq(reader.call('GET', 'tk1'), b'd')
        writer.call('SET', 'tk1', 'e')
        assert_true(nothing_arrives(reader))


def test_tracking_resp2_redirect_across_workers(s):
    sub, tracker, writer = pair(s, 'ABA')
    with sub, tracker, writer:
        sid = my_id(sub)
        assert_eq(sub.call('SUBSCRIBE', '__redis__:invalidate'),
                  [b'subscribe', b'__redis__:invalidate', 1])
        assert_eq(tracker.call('CLIENT', 'TRACKING', 'on', 'REDIRECT', sid),
                  'OK')
        assert_eq(tracker.call('CLIENT', 'GETREDIR'), sid)
        writer.call('SET', 'rd1', 'x')
        assert_eq(tracker.call('GET', 'rd1'), b'x')
        writer.call('APPEND', 'rd1', 'y')
        sub.settimeout(SLOW)
        assert_eq(sub.read_reply(),
                  [b'message', b'__redis__:invalidate', [b'rd1']])
        info = tracker.call('CLIENT', 'TRACKINGINFO')
        assert_eq(info, [b'flags', [b'on'], b'redirect', sid,
                         b'prefixes', []])


def test_tracking_broken_redirect(s):
    sub, tracker = pair(s, 'AA')
    with sub, tracker:
        sid = my_id(sub)
        assert_eq(tracker.call('CLIENT', 'TRACKING', 'on', 'REDIRECT', sid),
                  'OK')
        tracker.call('GET', 'br1')
        sub.close()
        wait_until(lambda: all(int(l['id']) != sid for l in lines(tracker)),
                   SLOW, 'the redirection gone')
        tracker.call('SET', 'br1', 'x')
        wait_until(lambda: info_line(tracker)['flags'] == 'tR', SLOW,
                   'flag R')
        assert_eq(tracker.call('CLIENT', 'TRACKINGINFO'),
                  [b'flags', [b'on', b'broken_redirect'], b'redirect', sid,
                   b'prefixes', []])


def test_tracking_bcast_prefix_and_noloop(s):
    reader, writer = pair(s)
    with reader, writer:
        reader.hello(3)
        assert_eq(reader.call('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX',
                              'bc:', 'PREFIX', 'zz', 'NOLOOP'), 'OK')
        info = reader.call('CLIENT', 'TRACKINGINFO')
        assert_eq(info[b'flags'], {b'on', b'bcast', b'noloop'})
        assert_eq(info[b'prefixes'], [b'bc:', b'zz'])
        writer.call('SET', 'bc:1', 'x')  # never read: BCAST sends anyway
        assert_eq(next_push(reader), [b'invalidate', [b'bc:1']])
        writer.call('SET', 'other', 'x')
        assert_true(nothing_arrives(reader))
        reader.call('SET', 'bc:2', 'x')  # NOLOOP: not its own writes
        assert_true(nothing_arrives(reader))
        writer.call('MSET', 'zz9', '1', 'bc:3', '2')
        got = []
        while len(got) < 2:
            got += next_push(reader)[1]
        assert_eq(sorted(got), [b'bc:3', b'zz9'])
        assert_eq(info_line(reader)['flags'], 'tB')


def test_tracking_optin_optout(s):
    reader, writer = pair(s)
    with reader, writer:
        reader.hello(3)
        writer.call('MSET', 'oi1', '1', 'oi2', '2')
        assert_eq(reader.call('CLIENT', 'TRACKING', 'on', 'OPTIN'), 'OK')
        reader.call('CLIENT', 'CACHING', 'yes')
        settle(reader, writer)
        reader.call('GET', 'oi1')                     # not cached
        assert_eq(reader.call('CLIENT', 'CACHING', 'yes'), 'OK')
        reader.call('GET', 'oi2')                     # cached
        writer.call('SET', 'oi1', 'x')
        writer.call('SET', 'oi2', 'x')
        assert_eq(next_push(reader), [b'invalidate', [b'oi2']])
        assert_true(nothing_arrives(reader))
        assert_error(reader.call('CLIENT', 'CACHING', 'no'),
                     'ERR CLIENT CACHING NO is only valid when tracking is '
                     'enabled in OPTOUT mode.')
        assert_eq(reader.call('CLIENT', 'TRACKING', 'off'), 'OK')
        assert_eq(reader.call('CLIENT', 'TRACKING', 'on', 'OPTOUT'), 'OK')
        settle(reader, writer)
        assert_eq(reader.call('CLIENT', 'CACHING', 'no'), 'OK')
        reader.call('GET', 'oi1')                     # not cached
        reader.call('GET', 'oi2')                     # cached
        writer.call('SET', 'oi1', 'y')
        writer.call('SET', 'oi2', 'y')
        assert_eq(next_push(reader), [b'invalidate', [b'oi2']])
        assert_true(nothing_arrives(reader))
        reader.call('CLIENT', 'TRACKING', 'off')


def test_tracking_flushall_invalidates_everything(s):
    reader, writer = pair(s)
    with reader, writer:
        reader.hello(3)
        reader.call('CLIENT', 'TRACKING', 'on')
        writer.call('SET', 'fl1', '1')
        settle(reader, writer)
        reader.call('GET', 'fl1')
        assert_eq(writer.call('FLUSHALL'), 'OK')
        assert_eq(next_push(reader), [b'invalidate', None])


def test_tracking_clients_in_info(s):
    a, b = pair(s)
    with a, b:
        def count():
            text = a.call('INFO', 'clients').decode()
            return int(re.search(r'tracking_clients:(\d+)', text).group(1))
        base = count()
        b.call('CLIENT', 'TRACKING', 'on')
        assert_eq(count(), base + 1)
        a.call('CLIENT', 'TRACKING', 'on', 'BCAST')
        assert_eq(count(), base + 2)
        b.close()
        wait_until(lambda: count() == base + 1, SLOW, 'the closed one gone')


TRACKING_CALLS = [
    ('CLIENT', 'TRACKING'), ('CLIENT', 'TRACKING', 'maybe'),
    ('CLIENT', 'TRACKING', 'on', 'foo'),
    ('CLIENT', 'TRACKING', 'on', 'REDIRECT'),
    ('CLIENT', 'TRACKING', 'on', 'REDIRECT', 'x'),
    ('CLIENT', 'TRACKING', 'on', 'REDIRECT', '-1'),
    ('CLIENT', 'TRACKING', 'on', 'REDIRECT', '9223372036854775808'),
    ('CLIENT', 'TRACKING', 'on', 'REDIRECT', '987654'),
    ('CLIENT', 'TRACKING', 'on', 'PREFIX', 'a'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX'),
    ('CLIENT', 'TRACKING', 'on', 'OPTIN', 'OPTOUT'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'OPTIN'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'a', 'PREFIX', 'ab'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'a', 'PREFIX', 'a'),
    ('CLIENT', 'TRACKING', 'off', 'BCAST'),
    ('CLIENT', 'TRACKING', 'off'),
    ('CLIENT', 'CACHING', 'yes'), ('CLIENT', 'CACHING', 'maybe'),
    ('CLIENT', 'GETREDIR'), ('CLIENT', 'TRACKINGINFO'),
    ('CLIENT', 'TRACKING', 'on'),
    ('CLIENT', 'CACHING', 'yes'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST'),
    ('CLIENT', 'TRACKING', 'on', 'OPTIN'),
    ('CLIENT', 'TRACKINGINFO'), ('CLIENT', 'GETREDIR'),
    ('CLIENT', 'TRACKING', 'off'),
    ('CLIENT', 'TRACKING', 'on', 'OPTOUT', 'NOLOOP'),
    ('CLIENT', 'TRACKINGINFO'), ('CLIENT', 'CACHING', 'yes'),
    ('CLIENT', 'CACHING', 'no'), ('CLIENT', 'TRACKING', 'off'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'b', 'PREFIX', 'a'),
    ('CLIENT', 'TRACKINGINFO'),
    ('CLIENT', 'TRACKING', 'on', 'BCAST', 'PREFIX', 'ab'),
    ('CLIENT', 'TRACKING', 'on', 'PREFIX', 'c'),
    ('CLIENT', 'TRACKING', 'off'),
    ('CLIENT', 'PAUSE'), ('CLIENT', 'PAUSE', 'x'), ('CLIENT', 'PAUSE', '-1'),
    ('CLIENT', 'PAUSE', '9223372036854775808'), ('CLIENT', 'PAUSE', 'nan'),
    ('CLIENT', 'PAUSE', '1', 'maybe'), ('CLIENT', 'PAUSE', '1', 'all', 'x'),
    ('CLIENT', 'PAUSE', '0'), ('CLIENT', 'PAUSE', '0', 'WRITE'),
    ('CLIENT', 'UNPAUSE'), ('CLIENT', 'UNPAUSE', 'x'),
    ('CLIENT', 'REPLY'), ('CLIENT', 'REPLY', 'maybe'),
    ('CLIENT', 'REPLY', 'on'), ('CLIENT', 'REPLY', 'on', 'x'),
    ('CLIENT', 'NO-EVICT', 'on'), ('CLIENT', 'NO-EVICT', 'off'),
]


def test_tracking_and_pause_replies_match_redis(s):
    with peer() as ref:
        for proto in (2, 3):
            with s.client() as mine, ref.client() as theirs:
                mine.hello(proto)
                theirs.hello(proto)
                for call in TRACKING_CALLS:
                    want = theirs.call(*call)
                    got = mine.call(*call)
                    assert_eq(got, want, 'RESP%d %r' % (proto, call))


# ---- MONITOR ----

LINE = re.compile(rb'^\+(\d+)\.(\d{6}) \[(\d+) ([0-9.]+:\d+)\] (.*)$')


def monitor_lines(m, n):
    out = []
    m.settimeout(SLOW)
    while len(out) < n:
        out.append(m._line())
    return out


def test_monitor_across_workers(s):
    mon, other, same = pair(s, 'ABA')
    with mon, other, same:
        assert_eq(mon.call('MONITOR'), 'OK')
        assert_eq(info_line(other)['cmd'], 'client|info')
        other.call('SELECT', '3')
        other.call('SET', 'mk', 'a "q"\\\n\x01')
        same.call('GET', 'mk')
        got = monitor_lines(mon, 4)
        parsed = [LINE.match(l) for l in got]
        assert_true(all(parsed), 'Redis format: %r' % got)
        # One worker's lines come in order; lines of different workers
        # may interleave otherwise (srv_monitor.h): "other"'s three
        # in order, "same"'s one anywhere.
        seen = [(p.group(3), p.group(5)) for p in parsed]
        want_other = [(b'0', b'"CLIENT" "INFO"'), (b'3', b'"SELECT" "3"'),
                      (b'3', b'"SET" "mk" "a \\"q\\"\\\\\\n\\x01"')]
        assert_eq([x for x in seen if x in want_other], want_other)
        assert_eq(sorted(seen), sorted(want_other + [(b'0', b'"GET" "mk"')]))
        now = time.time()
        assert_true(abs(int(parsed[0].group(1)) - now) < 60, 'timestamp')
        # AUTH's arguments are redacted, admin commands are left out.
        other.call('CONFIG', 'GET', 'hz')  # admin: not shown
        other.call('AUTH', 'someone', 'secret')
        assert_eq(LINE.match(monitor_lines(mon, 1)[0]).group(5),
                  b'"AUTH" "(redacted)" "(redacted)"')
        flags = [l['flags'] for l in lines(same) if l['cmd'] == 'monitor']
        assert_eq(flags, ['O'])


def test_monitor_line_matches_redis(s):
    args = ['SET', 'k "x"', 'tab\there\r\n\x00\x7f\xff', '']
    got = []
    with peer() as ref:
        for srv in (s, ref):
            with srv.client() as mon, srv.client() as c:
                mon.call('MONITOR')
                c.call(*args)
                got.append(LINE.match(monitor_lines(mon, 1)[0]).group(5))
    assert_eq(got[0], got[1])


SEQ_LINE = re.compile(rb'"SET" "seq:(\d+)" "(\d+)"$')
SEQ_COMMANDS = 3000
SEQ_BATCH = 50


BUSY_LINE = re.compile(rb'"SET" "busy:(\d+)" "x"$')


def seq_lines(mon, n, busy=None):
    """The numbers of the next n 'SET seq:<i> <i>' lines on mon, in the
    order they arrive; with a list `busy`, the numbers of the 'SET
    busy:<i> x' lines met on the way are appended to it."""
    out = []
    mon.settimeout(SLOW)
    while len(out) < n:
        line = mon._line()
        m = SEQ_LINE.search(line)
        if m:
            assert_eq(m.group(1), m.group(2))
            out.append(int(m.group(1)))
        elif busy is not None and BUSY_LINE.search(line):
            busy.append(int(BUSY_LINE.search(line).group(1)))
    return out


def assert_in_order(got, what):
    wrong = [j for j, x in enumerate(got) if x != j]
    assert_true(not wrong, '%s: %d of %d lines out of place, the first at '
                '%d: %r' % (what, len(wrong), len(got),
                            wrong[0] if wrong else -1,
                            got[max(0, wrong[0] - 3):wrong[0] + 3]
                            if wrong else None))


def test_monitor_keeps_causal_order_across_workers():
    """Commands that follow each other (each sent after the reply of the
    one before) show on MONITOR in that order, though they alternate
    between two workers, on a monitor of a third worker and on one of
    the first's."""
    larder_only()
    with Server(workers=3) as srv:
        far, a, b, near = on_workers(srv, 'MABA')
        with far, a, b, near:
            for mon in (far, near):
                assert_eq(mon.call('MONITOR'), 'OK')
            for i in range(SEQ_COMMANDS):
                c = a if i % 2 == 0 else b
                assert_eq(c.call('SET', 'seq:%d' % i, str(i)), 'OK')
            assert_in_order(seq_lines(far, SEQ_COMMANDS),
                            'monitor on the other worker')
            assert_in_order(seq_lines(near, SEQ_COMMANDS),
                            'monitor on the same worker')


def test_monitor_causal_order_beside_a_busy_client():
    """The same while a third client pipelines writes on the monitor's
    worker: its lines interleave anywhere, in their own order, and the
    alternating clients' lines keep theirs."""
    larder_only()
    with Server(workers=3) as srv:
        mon, a, b, busy = on_workers(srv, 'MABM')
        stop = threading.Event()
        sent = [0]

        def pipeline():
            while not stop.is_set():
                n = sent[0]
                busy.pipeline([('SET', 'busy:%d' % (n + k), 'x')
                               for k in range(SEQ_BATCH)])
                sent[0] = n + SEQ_BATCH

        with mon, a, b, busy:
            assert_eq(mon.call('MONITOR'), 'OK')
            t = threading.Thread(target=pipeline)
            t.start()
            try:
                for i in range(SEQ_COMMANDS):
                    c = a if i % 2 == 0 else b
                    assert_eq(c.call('SET', 'seq:%d' % i, str(i)), 'OK')
            finally:
                stop.set()
                t.join()
            seen = []
            assert_in_order(seq_lines(mon, SEQ_COMMANDS, seen),
                            'beside a busy client')
            assert_true(len(seen) > SEQ_BATCH, 'the busy client ran: %d'
                        % len(seen))
            assert_in_order(seen, "the busy client's own")


def write_transactions(c):
    info = c.call('INFO', 'stats').decode()
    return int(re.search(r'write_transactions:(\d+)', info).group(1))


def test_monitor_once_and_grouping_again_after_a_failed_group():
    """A write refused by a full disk makes its group's transaction fail;
    the group's commands run again one transaction each (the replay).
    MONITOR shows each command once, as Redis, and once the replay is
    done the client's commands share transactions again."""
    larder_only()
    with Server(workers=1, args=['--maxdisk', '2mb']) as srv:
        mon, c = srv.client(), srv.client()
        with mon, c:
            assert_eq(mon.call('MONITOR'), 'OK')
            got = c.pipeline([('ECHO', 'm1'), ('SET', 'small', 'x'),
                              ('SET', 'big', b'b' * (3 << 20)),
                              ('ECHO', 'm2')])
            assert_eq(got[:2], [b'm1', 'OK'])
            assert_true(isinstance(got[2], RespError) and
                        got[2].message.startswith('ERR disk full'),
                        'the big write refused: %r' % (got[2],))
            assert_eq(got[3], b'm2')
            assert_eq(c.call('ECHO', 'end'), b'end')
            shown = []
            mon.settimeout(SLOW)
            while not shown or shown[-1] != b'"ECHO" "end"':
                line = LINE.match(mon._line()).group(5)
                shown.append(line if len(line) < 40 else line[:16])
            assert_eq(shown, [b'"ECHO" "m1"', b'"SET" "small" "x"',
                              b'"SET" "big" "bbb', b'"ECHO" "m2"',
                              b'"ECHO" "end"'])
            before = write_transactions(c)
            n = 1000
            assert_eq(c.pipeline([('SET', 'g:%d' % i, 'v') for i in range(n)]),
                      ['OK'] * n)
            took = write_transactions(c) - before
            assert_true(took < n // 10, '%d SETs in one pipeline took %d '
                        'write transactions' % (n, took))


def test_monitor_shows_a_stopped_script_once():
    """A script whose first run is stopped (its transaction carried
    another client's write, so it is run again alone) shows each of its
    commands once: those before the stop from the first run, the rest
    from the second."""
    larder_only()
    script = ("redis.call('SET','s1','x') local t0=redis.call('TIME') "
              "while true do local t=redis.call('TIME') "
              "if (t[1]-t0[1])*1000000+(t[2]-t0[2]) > 30000 then break end "
              "end redis.call('SET','s2','y') return 1")
    with Server(workers=1, args=['--enable-debug-command', 'yes']) as srv:
        mon, sl, w, s = (srv.client() for _ in range(4))
        with mon, sl, w, s:
            assert_eq(mon.call('MONITOR'), 'OK')
            for rnd in range(2):
                # One turn holds w's write and the (new) script's first run.
                sl.send('DEBUG', 'SLEEP', '0.3')
                time.sleep(0.1)
                w.send('SET', 'w%d' % rnd, '1')
                s.send('EVAL', script + ' -- %d' % rnd, '0')
                assert_eq(sl.read_reply(), 'OK')
                assert_eq(w.read_reply(), 'OK')
                assert_eq(s.read_reply(), 1)
            assert_eq(w.call('ECHO', 'end'), b'end')
            shown = []
            mon.settimeout(SLOW)
            while not shown or shown[-1] != b'"ECHO" "end"':
                line = LINE.match(mon._line()).group(5)
                if line != b'"TIME"':
                    shown.append(line)
            want = []
            for rnd in range(2):
                want += [b'"SET" "w%d" "1"' % rnd, b'"SET" "s1" "x"',
                         b'"SET" "s2" "y"']
            assert_eq(shown[:-1], want)


def test_writes_of_a_client_that_hung_up_survive_a_failed_group():
    """A client pipelines a write and a write the full disk refuses, then
    shuts its side down: the group fails and its members replay. The
    first write ran before the client went away, so, as in Redis, it
    stands (before, a client closing at once was left out of the replay
    and its write was lost in some rounds)."""
    larder_only()
    with Server(workers=1, args=['--maxdisk', '2mb']) as srv:
        with srv.client() as chk:
            for rnd in range(12):
                with srv.client() as a:
                    a.send_raw(encode_command('SET', 'hup%d' % rnd, '1') +
                               encode_command('SET', 'big',
                                              b'b' * (3 << 20)))
                    a.sock.shutdown(socket.SHUT_WR)
                    a.settimeout(SLOW)
                    try:    # its replies, if any, then the close
                        for _ in range(3):
                            a.read_reply()
                    except (ConnectionClosed, OSError):
                        pass
                wait_until(lambda: chk.call('GET', 'hup%d' % rnd) == b'1',
                           SLOW, 'round %d: the first write' % rnd)


# ---- CLIENT PAUSE ----

def test_pause_write_holds_writes_of_every_worker():
    with Server(workers=2) as srv:
        ctl, other = pair(srv)
        with ctl, other:
            other.call('SET', 'pk', 'a')
            assert_eq(ctl.call('CLIENT', 'PAUSE', '10000', 'WRITE'), 'OK')
            assert_eq(other.call('GET', 'pk'), b'a')   # reads go on
            t0 = time.time()
            other.send('SET', 'pk', 'b')
            assert_true(nothing_arrives(other, 0.5), 'the write held')
            # Redis counts a paused client among the blocked ones.
            assert_eq(re.search(rb'blocked_clients:(\d+)',
                                ctl.call('INFO', 'clients')).group(1), b'1')
            assert_eq(ctl.call('GET', 'pk'), b'a')
            assert_eq(ctl.call('CLIENT', 'UNPAUSE'), 'OK')
            other.settimeout(SLOW)
            assert_eq(other.read_reply(), 'OK')
            assert_true(time.time() - t0 < 5, 'released by UNPAUSE')
            assert_eq(ctl.call('GET', 'pk'), b'b')


NO_WRITES = '#!lua flags=no-writes\nreturn 1'
PAUSE_LIB = ('#!lua name=pauselib\n'
             'redis.register_function{function_name="pz_ro", '
             'callback=function() return 1 end, flags={"no-writes"}}\n'
             'redis.register_function("pz_rw", function() return 2 end)')
# Which commands CLIENT PAUSE WRITE holds: writes, and Redis's
# may-replicate ones (PUBLISH, PFCOUNT, scripts), but a script or function
# that declares no-writes runs (and one that declares other flags writes).
PAUSE_CALLS = [
    ('EVAL', NO_WRITES, '0'), ('EVAL', 'return 1', '0'),
    ('EVAL', '#!lua\nreturn 1', '0'), ('EVAL_RO', 'return 1', '0'),
    ('EVAL_RO', '#!lua\nreturn 1', '0'),
    ('EVALSHA', 'sha-of-no-writes', '0'), ('EVALSHA', 'f' * 40, '0'),
    ('EVALSHA_RO', 'f' * 40, '0'),
    ('FCALL', 'pz_ro', '0'), ('FCALL', 'pz_rw', '0'),
    ('FCALL_RO', 'pz_rw', '0'), ('FCALL', 'nosuch', '0'),
    ('FCALL_RO', 'nosuch', '0'),
    ('PFCOUNT', 'pzh'), ('PUBLISH', 'pzc', 'm'), ('SPUBLISH', 'pzc', 'm'),
    ('SCRIPT', 'LOAD', 'return 3'), ('FUNCTION', 'DELETE', 'nosuch'),
    ('GET', 'pzk'), ('SET', 'pzk', 'v'), ('WAIT', '0', '0'),
]


HELD = object()


def held_by_pause_write(srv):
    """The calls of PAUSE_CALLS a WRITE pause holds on srv, and every
    reply (read once the pause is lifted)."""
    with srv.client() as ctl:
        sha = ctl.call('SCRIPT', 'LOAD', NO_WRITES).decode()
        ctl.call('FUNCTION', 'LOAD', 'REPLACE', PAUSE_LIB)
        cs = [srv.client() for _ in PAUSE_CALLS]
        try:
            assert_eq(ctl.call('CLIENT', 'PAUSE', '60000', 'WRITE'), 'OK')
            for c, call in zip(cs, PAUSE_CALLS):
                c.send(*[sha if a == 'sha-of-no-writes' else a
                         for a in call])
            time.sleep(1.0)
            held, replies = [], []
            for c, call in zip(cs, PAUSE_CALLS):
                c.settimeout(0.2)
                try:
                    replies.append(c.read_reply())
                except socket.timeout:
                    held.append(call)
                    replies.append(HELD)
            ctl.call('CLIENT', 'UNPAUSE')
            for i, c in enumerate(cs):
                c.settimeout(SLOW)
                if replies[i] is HELD:
                    replies[i] = c.read_reply()
            return held, [str(r) if isinstance(r, RespError) else r
                          for r in replies]
        finally:
            ctl.call('CLIENT', 'UNPAUSE')
            ctl.call('FUNCTION', 'DELETE', 'pauselib')
            for c in cs:
                c.close()


def test_pause_write_holds_scripts_as_redis(s):
    with peer() as ref:
        want_held, want = held_by_pause_write(ref)
    held, got = held_by_pause_write(s)
    assert_eq(held, want_held, 'the calls held')
    assert_eq(got, want, 'replies')


def test_pause_all_with_timeout():
    with Server(workers=2) as srv:
        ctl, other = pair(srv)
        with ctl, other:
            t0 = time.time()
            assert_eq(ctl.call('CLIENT', 'PAUSE', '800'), 'OK')
            other.send('GET', 'x')
            assert_true(nothing_arrives(other, 0.4), 'the read held')
            other.settimeout(SLOW)
            assert_eq(other.read_reply(), None)
            took = time.time() - t0
            assert_true(0.7 <= took < 5, 'held until the timeout: %.2f' % took)


# ---- CLIENT REPLY ----

def test_client_reply_off_skip_on(s):
    with s.client() as c:
        c.send('CLIENT', 'REPLY', 'OFF')
        c.send('SET', 'rk', '1')
        c.send('GET', 'rk')
        c.send('CLIENT', 'REPLY', 'ON')
        assert_eq(c.read_reply(), 'OK')          # only ON's
        c.send('CLIENT', 'REPLY', 'SKIP')
        c.send('INCR', 'rk')                     # skipped
        c.send('INCR', 'rk')
        assert_eq(c.read_reply(), 3)
        assert_eq(c.call('GET', 'rk'), b'3')


# ---- client-output-buffer-limit ----

OBUF_CALLS = [
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1mb 512kb 10'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 1 2 3 replica 4 5 6'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1 2'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'foo 1 2 3'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub x 2 3'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1 2 -3'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'pubsub 1 2 nan'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'master 1 2 3'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', ''),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    # sizes: 2^64 - 1, past it (saturated), a wrapping unit; seconds past
    # 2^63, -2^63, a size with a sign
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 18446744073709551615 18446744073709551616 5'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 99999999999999999999999 17179869184gb 0'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 1 2 9223372036854775808'),
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 1 2 -9223372036854775808'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal -1 2 3'),
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 1 2 9223372036854775807'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    # seconds as Redis keeps them, in an int: 2^31, 2^32, -2^32, +5
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1 2 2147483648'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1 2 4294967296'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 1 2 -9223372036854775807'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1 2 +5'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1 2 inf'),
    # split at each space: two spaces make an empty word (0)
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal  1 2'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1 2 '),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'normal 1 2 3 '),
    ('CONFIG', 'SET', 'client-output-buffer-limit', 'foo 1 2 3 normal'),
    ('CONFIG', 'SET', 'client-output-buffer-limit',
     'normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60'),
    ('CONFIG', 'GET', 'client-output-buffer-limit'),
]


def test_obuf_config_matches_redis(s):
    with peer() as ref, s.client() as mine, ref.client() as theirs:
        for call in OBUF_CALLS:
            assert_eq(mine.call(*call), theirs.call(*call), repr(call))


def slow_client(port):
    """A connection that never reads, with small socket buffers."""
    sk = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sk.connect(('127.0.0.1', port))
    c = Client.__new__(Client)
    c.sock, c.buf, c.pos, c.proto = sk, bytearray(), 0, 2
    c.settimeout(SLOW)
    return c


def test_slow_subscriber_dropped_at_its_limit():
    with Server(workers=2) as srv:
        ctl, good = pair(srv)
        with ctl, good:
            assert_eq(ctl.call('CONFIG', 'SET', 'client-output-buffer-limit',
                               'pubsub 256kb 0 0'), 'OK')
            slow = slow_client(srv.port)
            slow.send('SUBSCRIBE', 'ch')
            good.call('SUBSCRIBE', 'ch')
            wait_until(lambda: ctl.call('PUBSUB', 'NUMSUB', 'ch')[1] == 2,
                       SLOW, 'both subscribed')
            msg = 'x' * 4096
            sent = 1000
            seen_omem = 0
            got = []

            def drain():
                for _ in range(sent):
                    got.append(good.read_reply())
            reader = threading.Thread(target=drain)
            reader.start()
            for i in range(sent):
                ctl.call('PUBLISH', 'ch', msg)
                if i % 20 == 0:
                    om = [int(l['omem']) for l in lines(ctl)
                          if l['flags'] == 'P' and l['cmd'] == 'subscribe']
                    seen_omem = max([seen_omem] + om)
            wait_until(lambda: ctl.call('PUBSUB', 'NUMSUB', 'ch')[1] == 1,
                       SLOW, 'the slow subscriber dropped')
            assert_true(seen_omem > 0, 'omem showed the unsent output')
            reader.join(SLOW)
            assert_eq(len(got), sent, 'the good subscriber got every one')
            assert_true(all(r == [b'message', b'ch', msg.encode()]
                            for r in got), 'every message intact')
            assert_eq(ctl.call('PING'), 'PONG')
            slow.close()
            ctl.call('CONFIG', 'SET', 'client-output-buffer-limit',
                     'pubsub 33554432 8388608 60')


def test_soft_limit_needs_its_seconds():
    with Server(workers=2) as srv:
        with srv.client() as ctl, srv.client() as good:
            assert_eq(ctl.call('CONFIG', 'SET', 'client-output-buffer-limit',
                               'normal 0 64kb 1'), 'OK')
            slow = slow_client(srv.port)
            slow.send('MONITOR')
            time.sleep(0.2)
            t0 = time.time()
            gone = False
            while time.time() - t0 < SLOW:
                good.call('SET', 'k', 'y' * 4096)
                if not any(l['cmd'] == 'monitor' for l in lines(ctl)):
                    gone = True
                    break
            took = time.time() - t0
            assert_true(gone, 'the MONITOR client over the soft limit dropped')
            assert_true(took >= 1.0, 'only after its seconds: %.2f' % took)
            slow.close()


if __name__ == '__main__':
    main(globals(), workers=2)
