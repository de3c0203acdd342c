"""Checks that CONFIG SET reaches every process at once: each runtime directive set on one connection is seen (CONFIG GET, INFO) and acted on (limits, idle timeout, password, cache budget) by connections on every other worker, and loglevel changes what every process (workers, reaper, syncer, broker, master) writes to the log file, each line in Redis's format with its pid and role letter."""

import os
import re
import signal
import socket
import time

from larder_test import (IS_REDIS, RespError, Server, assert_eq,
                         assert_error, assert_true, larder_only, main,
                         proc_alive, wait_until)

WORKERS = 3
MB = 1024 * 1024
# "4711:W 01 Dec 2026 15:20:55.618 - text": pid, role letter, level mark.
LINE_RE = re.compile(r'^(\d+):([MWRYBC]) '
                     r'\d\d \w{3} \d{4} \d\d:\d\d:\d\d\.\d{3} ([.*#-]) (.*)$')
ROLES = {'M': 'master', 'R': 'reaper', 'Y': 'syncer', 'B': 'broker',
         'C': 'backup'}
# Worker pids -> "worker#i", learnt from the admin socket (the log line
# has the role letter only, as Redis's).
WORKER_NAMES = {}


def learn_workers(srv):
    from larder_test import Client
    try:
        with Client(os.path.join(srv.dir, 'larder-admin.sock')) as a:
            st = a.call('STATUS')
    except OSError:
        return
    procs = dict(zip(st[0::2], st[1::2]))[b'processes']
    for p in procs:
        p = dict(zip(p[0::2], p[1::2]))
        if p[b'role'] == b'worker' and p[b'pid']:
            WORKER_NAMES[p[b'pid']] = p[b'name'].decode()


def info(c, section):
    fields = {}
    r = c.call('INFO', section)
    for line in r.decode().split('\r\n'):
        k, _, v = line.partition(':')
        fields[k] = v
    return fields


def serving_pid(c):
    f = info(c, 'server')
    return int(f.get('worker_process_id') or f['process_id'])


def one_per_worker(srv, n=WORKERS):
    """Open connections until there is one on each of n workers; returns
    {pid: client}. Connections on a worker already seen are closed."""
    got = {}
    end = time.time() + 20
    while len(got) < n and time.time() < end:
        c = srv.client()
        pid = serving_pid(c)
        if pid in got:
            c.close()
        else:
            got[pid] = c
    assert_true(len(got) == n, 'connections on %d workers: %r'
                % (n, sorted(got)))
    return got


def close_all(clients):
    for c in clients.values():
        c.close()


def config_get(c, name):
    r = c.call('CONFIG', 'GET', name)
    if isinstance(r, dict):
        return r.get(name.encode())
    return dict(zip(r[0::2], r[1::2])).get(name.encode())


def log_lines(srv):
    """(role, pid, mark, text) of every well-formed line of the log."""
    out = []
    learn_workers(srv)
    try:
        with open(srv.logfile, errors='replace') as f:
            for line in f:
                m = LINE_RE.match(line.rstrip('\n'))
                if m:
                    pid = int(m.group(1))
                    role = (ROLES[m.group(2)] if m.group(2) != 'W' else
                            WORKER_NAMES.get(pid, 'worker#?'))
                    out.append((role, pid, m.group(3), m.group(4)))
    except OSError:
        pass
    return out


def protocol_error(srv_or_client):
    """Send a malformed request on a fresh connection or the given one;
    the worker replies with a protocol error and closes it."""
    c = srv_or_client
    c.send_raw(b'*1\r\nx3\r\n')
    r = c.read_reply()
    assert_true(isinstance(r, RespError) and 'Protocol error' in r.message,
                'protocol error reply: %r' % (r,))


# --------------------------------------------------------------------------
# every runtime directive, seen everywhere at once

RUNTIME = [
    # (directive, value set, value CONFIG GET returns, the original)
    ('maxclients', '123', b'123', '10000'),
    ('timeout', '77', b'77', '0'),
    ('loglevel', 'verbose', b'verbose', 'notice'),
    ('proto-max-bulk-len', '2mb', b'2097152', '512mb'),
    ('client-query-buffer-limit', '4mb', b'4194304', '1gb'),
    ('requirepass', 'sekrit', b'sekrit', ''),
    ('cache-mb', '32', b'32', '64'),
]


def test_each_directive_seen_by_every_worker():
    larder_only()
    with Server(workers=WORKERS) as srv:
        conns = one_per_worker(srv)
        try:
            pids = sorted(conns)
            for name, value, shown, orig in RUNTIME:
                for setter in pids:
                    assert_eq(conns[setter].call('CONFIG', 'SET', name, value),
                              'OK', 'CONFIG SET %s on %d' % (name, setter))
                    # No waiting: the reply comes once every worker has it.
                    for pid in pids:
                        assert_eq(config_get(conns[pid], name), shown,
                                  '%s set on worker %d, read on %d'
                                  % (name, setter, pid))
                    assert_eq(conns[setter].call('CONFIG', 'SET', name, orig),
                              'OK')
                    for pid in pids:
                        got = config_get(conns[pid], name)
                        assert_true(got != shown, '%s back on %d: %r'
                                    % (name, pid, got))
            # Several at once: all or nothing, everywhere.
            a, b = conns[pids[0]], conns[pids[1]]
            assert_eq(a.call('CONFIG', 'SET', 'maxclients', '200',
                             'timeout', '9'), 'OK')
            for c in conns.values():
                assert_eq(config_get(c, 'maxclients'), b'200')
                assert_eq(config_get(c, 'timeout'), b'9')
                assert_eq(info(c, 'clients')['maxclients'], '200')
            r = b.call('CONFIG', 'SET', 'maxclients', '300', 'timeout', 'x')
            assert_true(isinstance(r, RespError), 'bad pair refused: %r'
                        % (r,))
            for c in conns.values():
                assert_eq(config_get(c, 'maxclients'), b'200')
                assert_eq(config_get(c, 'timeout'), b'9')
            assert_eq(b.call('CONFIG', 'SET', 'timeout', '0'), 'OK')
        finally:
            close_all(conns)


def test_concurrent_config_sets_lose_nothing():
    """Two workers setting different directives at the same moment: both
    changes survive (each is applied to the published copy under its
    lock, not to a stale private one)."""
    larder_only()
    with Server(workers=WORKERS) as srv:
        conns = one_per_worker(srv)
        try:
            a, b = [conns[p] for p in sorted(conns)[:2]]
            for i in range(20):
                a.send('CONFIG', 'SET', 'maxclients', str(1000 + i))
                b.send('CONFIG', 'SET', 'timeout', str(100 + i))
                assert_eq(a.read_reply(), 'OK')
                assert_eq(b.read_reply(), 'OK')
                for c in conns.values():
                    assert_eq(config_get(c, 'maxclients'),
                              str(1000 + i).encode())
                    assert_eq(config_get(c, 'timeout'), str(100 + i).encode())
            a.call('CONFIG', 'SET', 'timeout', '0')
        finally:
            close_all(conns)


# --------------------------------------------------------------------------
# each one acted on by the other workers

def test_requirepass_applies_to_new_connections_everywhere():
    with Server(workers=WORKERS) as srv:
        with srv.client() as setter:
            assert_eq(setter.call('CONFIG', 'SET', 'requirepass', 'sekrit'),
                      'OK')
            pids = set()
            for i in range(4 * WORKERS):
                with srv.client() as c:
                    assert_error(c.call('PING'),
                                 'NOAUTH Authentication required.')
                    assert_eq(c.call('AUTH', 'sekrit'), 'OK')
                    pids.add(serving_pid(c))
            if not IS_REDIS:
                assert_true(len(pids) > 1, 'new connections on %d workers'
                            % len(pids))
            assert_eq(setter.call('CONFIG', 'SET', 'requirepass', ''), 'OK')
            for i in range(4 * WORKERS):
                with srv.client() as c:
                    assert_eq(c.call('PING'), 'PONG')


def test_maxclients_applies_on_every_worker():
    larder_only()
    with Server(workers=WORKERS) as srv:
        conns = one_per_worker(srv)
        try:
            setter = next(iter(conns.values()))
            # The probes one_per_worker closed are off the count first.
            wait_until(lambda: int(info(setter, 'clients')
                                   ['connected_clients']) == len(conns),
                       10, 'only our connections counted')
            assert_eq(setter.call('CONFIG', 'SET', 'maxclients',
                                  str(len(conns))), 'OK')
            for i in range(4 * WORKERS):
                with srv.client() as c:
                    assert_error(c.read_reply(),
                                 'ERR max number of clients reached')
            assert_eq(setter.call('CONFIG', 'SET', 'maxclients', '10000'),
                      'OK')
            pids = set()
            for i in range(4 * WORKERS):
                with srv.client() as c:
                    pids.add(serving_pid(c))
            assert_true(len(pids) > 1, 'accepted on %d workers' % len(pids))
        finally:
            close_all(conns)


def test_timeout_closes_idle_clients_on_every_worker():
    larder_only()
    with Server(workers=WORKERS) as srv:
        idle = one_per_worker(srv)
        try:
            with srv.client() as setter:
                assert_eq(setter.call('CONFIG', 'SET', 'timeout', '1'), 'OK')
            for pid, c in idle.items():
                assert_true(c.is_closed(deadline=10),
                            'idle client on worker %d closed' % pid)
            with srv.client() as c:
                assert_eq(c.call('CONFIG', 'SET', 'timeout', '0'), 'OK')
        finally:
            close_all(idle)


def test_proto_max_bulk_len_applies_on_every_worker():
    larder_only()
    with Server(workers=WORKERS) as srv:
        with srv.client() as setter:
            assert_eq(setter.call('CONFIG', 'SET', 'proto-max-bulk-len',
                                  '1mb'), 'OK')
        conns = one_per_worker(srv)     # opened after the change
        try:
            for pid, c in conns.items():
                c.send_raw(b'*2\r\n$3\r\nGET\r\n$%d\r\n' % (MB + 1))
                assert_error(c.read_reply(),
                             'ERR Protocol error: invalid bulk length')
        finally:
            close_all(conns)


def test_client_query_buffer_limit_applies_on_every_worker():
    larder_only()
    with Server(workers=WORKERS) as srv:
        conns = one_per_worker(srv)     # opened before the change
        try:
            with srv.client() as setter:
                assert_eq(setter.call('CONFIG', 'SET',
                                      'client-query-buffer-limit', '1mb'),
                          'OK')
            for pid, c in conns.items():
                # Half a 2 MB argument: more unread input than the limit.
                c.send_raw(b'*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n'
                           % (2 * MB))
                try:
                    c.send_raw(b'v' * (MB + MB // 4))
                except OSError:
                    pass                # closed while we were sending
                assert_true(c.is_closed(deadline=10),
                            'worker %d closed the client over the limit'
                            % pid)
        finally:
            close_all(conns)


def test_cache_mb_applies_everywhere():
    larder_only()
    with Server(workers=WORKERS) as srv:
        conns = one_per_worker(srv)
        try:
            setter = next(iter(conns.values()))
            assert_eq(setter.call('CONFIG', 'SET', 'cache-mb', '8'), 'OK')
            for c in conns.values():
                assert_eq(config_get(c, 'cache-mb'), b'8')
                assert_eq(info(c, 'cache')['cache_budget_bytes'],
                          str(8 * MB))
            r = setter.call('CONFIG', 'SET', 'cache-mb', '100000')
            assert_true(isinstance(r, RespError) and
                        'restart to grow it' in r.message,
                        'growing past the start size refused: %r' % (r,))
            for c in conns.values():
                assert_eq(config_get(c, 'cache-mb'), b'8')
        finally:
            close_all(conns)


# --------------------------------------------------------------------------
# loglevel: every process's log lines

def wait_for_line(srv, what, fn, deadline=10):
    def found():
        return [l for l in log_lines(srv) if fn(l)]
    return wait_until(found, deadline, what)


def test_loglevel_reaches_every_process():
    larder_only()
    with Server(workers=WORKERS, args=['--loglevel', 'warning']) as srv:
        conns = one_per_worker(srv)
        try:
            pids = sorted(conns)
            # At warning, a protocol error is not logged by any worker.
            for pid in pids:
                with srv.client() as c:
                    protocol_error(c)
            assert_true(not any(l[3].startswith('protocol error')
                                for l in log_lines(srv)),
                        'no verbose lines at warning')
            setter = conns[pids[0]]
            assert_eq(setter.call('CONFIG', 'SET', 'loglevel', 'verbose'),
                      'OK')
            # Every worker now logs the protocol errors it sees, with its
            # own role and pid. CONFIG SET returned after every worker
            # applied it, so a fresh connection on any worker must log.
            seen = set()
            end = time.time() + 20
            while seen != set(pids) and time.time() < end:
                c = srv.client()
                pid = serving_pid(c)
                protocol_error(c)
                c.close()
                def logged(l, pid=pid):
                    return (l[0].startswith('worker#') and l[1] == pid and
                            l[2] == '-' and
                            l[3].startswith('protocol error from'))
                wait_for_line(srv, 'worker %d logging at verbose' % pid,
                              logged)
                seen.add(pid)
            assert_eq(seen, set(pids))
            # Every process applied it (the syncer within its 1 s beat).
            roles = ['master', 'reaper', 'syncer', 'broker'] + \
                ['worker#%d' % i for i in range(WORKERS)]
            for role in roles:
                wait_for_line(srv, '%s applying the change' % role,
                              lambda l, role=role: l[0] == role and
                              l[2] == '-' and
                              l[3].startswith('configuration #'))
            by_role = {}
            for l in log_lines(srv):
                by_role.setdefault(l[0], set()).add(l[1])
            worker_pids = set()
            for i in range(WORKERS):
                worker_pids |= by_role['worker#%d' % i]
            assert_eq(worker_pids, set(pids), 'worker pids in the log')
            assert_eq(by_role['master'], {srv.pid})
            kids = set(srv.children())
            for role in ('reaper', 'syncer', 'broker'):
                assert_true(by_role[role] <= kids, '%s pid is a child' % role)
            # debug: the reaper's expiry lines appear.
            assert_eq(setter.call('CONFIG', 'SET', 'loglevel', 'debug'),
                      'OK')
            for i in range(50):
                setter.call('SET', 'exp:%d' % i, 'v', 'PX', '1')
            wait_for_line(srv, 'the reaper logging at debug',
                          lambda l: l[0] == 'reaper' and l[2] == '.' and
                          re.match(r'expired \d+ keys', l[3]))
            # Back to warning: CONFIG SET returns once every worker has it,
            # so no protocol error after it is logged by any of them.
            assert_eq(setter.call('CONFIG', 'SET', 'loglevel', 'warning'),
                      'OK')
            mark = len(log_lines(srv))
            for i in range(4 * WORKERS):
                with srv.client() as c:
                    protocol_error(c)
            assert_eq(setter.call('PING'), 'PONG')
            new = log_lines(srv)[mark:]
            assert_true(not any(l[3].startswith('protocol error')
                                for l in new),
                        'no protocol error logged at warning: %r' % (new,))
        finally:
            close_all(conns)


def test_respawned_worker_starts_from_current_config():
    larder_only()
    with Server(workers=WORKERS, args=['--loglevel', 'warning']) as srv:
        conns = one_per_worker(srv)
        try:
            pids = sorted(conns)
            setter = conns[pids[0]]
            assert_eq(setter.call('CONFIG', 'SET', 'maxclients', '321',
                                  'loglevel', 'verbose'), 'OK')
            victim = pids[-1]
            conns.pop(victim).close()
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: not proc_alive(victim), 10, 'worker to die')

            def respawned():
                for l in log_lines(srv):
                    if (l[0].startswith('worker#') and l[1] not in pids and
                            l[3] == 'serving'):
                        return l
            line = wait_until(respawned, 20, 'the respawned worker to log '
                              '"serving" at verbose')
            newpid = line[1]
            c = None
            end = time.time() + 20
            while time.time() < end:
                c = srv.client()
                if serving_pid(c) == newpid:
                    break
                c.close()
                c = None
            assert_true(c is not None, 'a connection on the new worker')
            try:
                assert_eq(config_get(c, 'maxclients'), b'321')
                assert_eq(config_get(c, 'loglevel'), b'verbose')
            finally:
                c.close()
        finally:
            close_all(conns)


if __name__ == '__main__':
    main(globals())
