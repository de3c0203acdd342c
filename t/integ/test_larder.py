"""Checks larder's process model and durability: unix socket, several workers, restart persistence, kill -9 recovery, worker respawn, SIGTERM, config errors."""

import os
import signal
import stat
import subprocess
import tempfile
import threading
import shutil
import time

from larder_test import (Client, ConnectionClosed, Server, assert_eq,
                         assert_true, encode_command, larder_only, main,
                         proc_alive, server_binary, wait_until)


def test_unix_socket():
    with Server(unixsocket=True, args=['--unixsocketperm', '700']) as srv:
        st = os.stat(srv.unixsocket)
        assert_true(stat.S_ISSOCK(st.st_mode), 'unixsocket is a socket')
        assert_eq(oct(st.st_mode & 0o777), oct(0o700), 'socket mode')
        with srv.client(unix=True) as u, srv.client() as t:
            assert_eq(u.call('PING'), 'PONG')
            assert_eq(u.call('SET', 'k', 'from-unix'), 'OK')
            assert_eq(t.call('GET', 'k'), b'from-unix')
            assert_eq(t.call('SET', 'k2', 'from-tcp'), 'OK')
            assert_eq(u.call('GET', 'k2'), b'from-tcp')
            r = u.pipeline([('INCR', 'n')] * 200)
            assert_eq(r, list(range(1, 201)))


def _incr_worker(port, n, errors, barrier):
    try:
        with Client(port) as c:
            barrier.wait()
            for i in range(0, n, 10):
                r = c.pipeline([('INCR', 'counter')] * 10)
                if not all(isinstance(x, int) for x in r):
                    errors.append(repr(r))
                    return
    except Exception as e:              # reported by the main thread
        errors.append(repr(e))


def test_workers_serve_concurrently():
    larder_only()
    with Server(workers=3) as srv:
        # master + 3 workers at least (plus reaper and broker).
        wait_until(lambda: len(srv.children()) >= 3, 10,
                   'at least 3 children of the master')
        nconn, per = 30, 200
        errors = []
        barrier = threading.Barrier(nconn)
        threads = [threading.Thread(target=_incr_worker,
                                    args=(srv.port, per, errors, barrier))
                   for _ in range(nconn)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert_eq(errors, [], 'client errors')
        with srv.client() as c:
            assert_eq(c.call('GET', 'counter'), str(nconn * per).encode())
        pids = _serving_pids(srv, 30)
        assert_true(len(pids) >= 2, 'connections spread over several '
                    'processes (INFO worker_process_id): %r' % sorted(pids))


def _serving_pids(srv, n):
    """Serving process of n simultaneous connections (see _info_pid)."""
    clients = [srv.client() for _ in range(n)]
    try:
        return set(_info_pid(c) for c in clients)
    finally:
        for c in clients:
            c.close()


def _write_dataset(c):
    c.pipeline([('SET', 'k%d' % i, 'v%d' % i) for i in range(500)])
    c.call('SET', 'ttl', 'x', 'EX', '1000')
    c.call('SET', 'short', 'x', 'PX', '1')
    c.call('SET', b'bin\x00key', bytes(range(256)))
    c.call('SET', 'L' * 2000, 'long name')
    c.call('SET', b'M' * (1024 * 1024), b'V' * (3 * 1024 * 1024))
    c.call('SET', b'N' * 511, 'five eleven')
    c.call('SET', b'N' * 512, 'five twelve')
    c.call('SELECT', '5')
    c.call('SET', 'db5key', 'five')
    c.call('SELECT', '0')
    c.call('INCRBY', 'counter', '41')
    c.call('INCR', 'counter')
    c.call('DEL', 'k0')


def _check_dataset(c):
    got = c.pipeline([('GET', 'k%d' % i) for i in range(500)])
    assert_eq(got, [None] + [b'v%d' % i for i in range(1, 500)],
              'k* after restart')
    ttl = c.call('TTL', 'ttl')
    assert_true(900 <= ttl <= 1000, 'TTL kept across restart: %r' % ttl)
    assert_eq(c.call('EXISTS', 'short'), 0)
    assert_eq(c.call('GET', b'bin\x00key'), bytes(range(256)))
    assert_eq(c.call('GET', 'L' * 2000), b'long name')
    assert_eq(c.call('GET', b'M' * (1024 * 1024)), b'V' * (3 * 1024 * 1024))
    assert_eq(c.call('MGET', b'N' * 511, b'N' * 512),
              [b'five eleven', b'five twelve'])
    assert_eq(sorted(c.call('KEYS', 'N*')), [b'N' * 511, b'N' * 512])
    assert_eq(c.call('GET', 'counter'), b'42')
    c.call('SELECT', '5')
    assert_eq(c.call('GET', 'db5key'), b'five')
    c.call('SELECT', '0')


def test_restart_persistence():
    larder_only()
    with Server(workers=2) as srv:
        with srv.client() as c:
            _write_dataset(c)
        assert_eq(srv.stop(), 0, 'exit code after SIGTERM')
        srv.start()
        with srv.client() as c:
            _check_dataset(c)
            assert_eq(c.call('DBSIZE'), 499 + 7)
        # A second restart after more writes.
        with srv.client() as c:
            c.call('SET', 'k0', 'back')
        srv.restart()
        with srv.client() as c:
            assert_eq(c.call('GET', 'k0'), b'back')


def test_kill9_tree_then_restart():
    larder_only()
    with Server(workers=2) as srv:
        with srv.client() as c:
            _write_dataset(c)
        srv.kill9_tree()
        srv.start()
        with srv.client() as c:
            _check_dataset(c)


def _acked_writer(port, prefix, acked, stop):
    """SET prefix:i one at a time, recording each acknowledged i, until
    the connection dies or stop is set."""
    try:
        with Client(port, timeout=5) as c:
            i = 0
            while not stop.is_set():
                if c.call('SET', '%s:%d' % (prefix, i), 'v%d' % i) != 'OK':
                    return
                acked.append(i)
                i += 1
    except (OSError, ConnectionClosed, ValueError):
        pass


def _crash_test(sync):
    with Server(workers=2, args=['--sync', sync]) as srv:
        stop = threading.Event()
        acked = {p: [] for p in ('a', 'b', 'c', 'd')}
        threads = [threading.Thread(target=_acked_writer,
                                    args=(srv.port, p, acked[p], stop))
                   for p in acked]
        for t in threads:
            t.start()
        wait_until(lambda: all(len(v) > 300 for v in acked.values()), 30,
                   'every writer to get 300 acknowledgements')
        srv.kill9_tree()
        stop.set()
        for t in threads:
            t.join(10)
        srv.start()
        with srv.client() as c:
            for p, ids in acked.items():
                keys = ['%s:%d' % (p, i) for i in ids]
                got = []
                for j in range(0, len(keys), 1000):
                    got += c.pipeline([('GET', k) for k in keys[j:j + 1000]])
                lost = [k for k, v in zip(keys, got) if v is None]
                assert_eq(lost[:5], [], 'acknowledged SETs lost after '
                          'kill -9 with sync %s (%d of %d)'
                          % (sync, len(lost), len(keys)))
                bad = [(k, v) for k, v, i in zip(keys, got, ids)
                       if v is not None and v != b'v%d' % i]
                assert_eq(bad[:5], [], 'values after kill -9')


def test_kill9_sync_always_keeps_every_ack():
    larder_only()
    _crash_test('always')


def test_kill9_sync_everysec_keeps_every_ack():
    # A process crash (not an OS crash) loses nothing committed, even
    # before the next fsync.
    larder_only()
    _crash_test('everysec')


def test_sync_always_pipeline_order():
    # Held write replies (waiting for fsync) must not let later read
    # replies overtake them, and other clients are served meanwhile.
    larder_only()
    with Server(workers=2, args=['--sync', 'always']) as srv:
        with srv.client() as c, srv.client() as other:
            cmds, want = [], []
            for i in range(300):
                cmds += [('SET', 'p%d' % i, i), ('GET', 'p%d' % i),
                         ('INCR', 'cnt'), ('GET', 'cnt'), ('PING',)]
                want += ['OK', str(i).encode(), i + 1, str(i + 1).encode(),
                         'PONG']
            c.send_raw(b''.join(encode_command(*x) for x in cmds))
            assert_eq(other.call('PING'), 'PONG')
            assert_eq(other.call('SET', 'o', '1'), 'OK')
            got = [c.read_reply() for _ in cmds]
            assert_eq(got, want)
            assert_eq(other.call('GET', 'cnt'), b'300')


def _worker_pids(srv):
    """PIDs of worker processes: children whose command line or name says
    worker, else the processes INFO reports serving connections."""
    kids = srv.children()
    named = []
    for p in kids:
        try:
            with open('/proc/%d/comm' % p) as f:
                comm = f.read()
        except OSError:
            comm = ''
        try:
            with open('/proc/%d/cmdline' % p, 'rb') as f:
                cmd = f.read().decode(errors='replace')
        except OSError:
            cmd = ''
        if 'worker' in comm or 'worker' in cmd:
            named.append(p)
    if named:
        return named
    return sorted(p for p in _serving_pids(srv, 20) if p in kids)


def _info_pid(c):
    """The PID serving connection c: INFO's worker_process_id (larder),
    else process_id."""
    fields = {}
    for line in c.call('INFO', 'server').decode().split('\r\n'):
        k, _, v = line.partition(':')
        fields[k] = v
    return int(fields.get('worker_process_id') or fields['process_id'])


def test_worker_respawn_after_kill9():
    larder_only()
    with Server(workers=2) as srv:
        workers = wait_until(lambda: len(_worker_pids(srv)) >= 2 and
                             _worker_pids(srv), 10, 'two worker processes')
        clients = [srv.client() for _ in range(16)]
        try:
            by_pid = {}
            for c in clients:
                assert_eq(c.call('PING'), 'PONG')
                by_pid.setdefault(_info_pid(c), []).append(c)
            assert_true(len(by_pid) >= 2, 'clients on several workers: %r'
                        % sorted(by_pid))
            victim = sorted(by_pid, key=lambda p: len(by_pid[p]))[-1]
            assert_true(victim in workers, 'victim %d is a worker' % victim)
            survivors = [c for p, cs in by_pid.items() if p != victim
                         for c in cs]
            kids_before = srv.children()
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: not proc_alive(victim), 10, 'worker to die')
            # Clients of other workers keep working, with no error.
            for i, c in enumerate(survivors):
                assert_eq(c.call('SET', 'surv%d' % i, 'x'), 'OK')
                assert_eq(c.call('GET', 'surv%d' % i), b'x')
            # The master is alive and a new connection works soon.

            def new_conn_works():
                with srv.client() as c:
                    return c.call('SET', 'after', 'ok') == 'OK'
            wait_until(new_conn_works, 10, 'a new connection to work')
            assert_true(srv.alive(), 'master survived a worker crash')
            # A replacement worker appears.
            nkids = len(kids_before)
            wait_until(lambda: len(srv.children()) >= nkids and
                       victim not in srv.children(), 15,
                       'a replacement child process')
            # Connections of the dead worker were closed, not left hanging.
            for c in by_pid[victim]:
                assert_true(c.is_closed(5), 'connection of the killed '
                            'worker closed')
            with srv.client() as c:
                assert_eq(c.call('GET', 'after'), b'ok')
        finally:
            for c in clients:
                c.close()


def test_sigterm_graceful():
    larder_only()
    srv = Server(workers=2)
    try:
        with srv.client() as c:
            n = 2000
            c.send_raw(b''.join(encode_command('SET', 'g%d' % i, i)
                                for i in range(n)))
            first = c.read_reply()
            srv.proc.send_signal(signal.SIGTERM)
            replies = [first]
            try:
                for _ in range(n - 1):
                    replies.append(c.read_reply())
            except (ConnectionClosed, OSError):
                pass
            assert_eq(len(replies), n, 'replies to the pipelined batch')
            assert_true(all(r == 'OK' for r in replies), 'all OK')
            assert_true(c.is_closed(), 'connection closed at shutdown')
        code = srv.wait_exit()
        assert_eq(code, 0, 'master exit code after SIGTERM')
        srv.start()
        with srv.client() as c:
            assert_eq(c.call('GET', 'g%d' % (n - 1)), str(n - 1).encode())
            assert_eq(c.call('DBSIZE'), n)
    finally:
        srv.cleanup()


def test_sigterm_not_blocked_by_stuck_clients():
    # Idle clients, a half-sent command and a client that never reads its
    # (large) replies must not keep the server from exiting.
    larder_only()
    srv = Server(workers=2)
    clients = []
    try:
        with srv.client() as c:
            c.call('SET', 'big', b'x' * (1024 * 1024))
        idle = srv.client()
        half = srv.client()
        half.send_raw(b'*2\r\n$3\r\nGET\r\n$3\r\nbi')
        noread = srv.client()
        noread.send_raw(encode_command('GET', 'big') * 64)
        clients = [idle, half, noread]
        assert_eq(idle.call('PING'), 'PONG')
        t0 = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        code = srv.wait_exit(deadline=15)
        assert_true(code is not None, 'master exited within 15 s of SIGTERM')
        assert_eq(code, 0, 'exit code')
        assert_true(idle.is_closed(), 'idle client closed')
        assert_true(time.time() - t0 < 15, 'shutdown time')
    finally:
        for c in clients:
            c.close()
        srv.cleanup()


def test_sigterm_leaves_no_processes():
    larder_only()
    srv = Server(workers=3)
    try:
        tree = [srv.pid] + srv.children()
        assert_eq(srv.stop(), 0, 'exit code')
        wait_until(lambda: not any(proc_alive(p) for p in tree), 10,
                   'every process of the tree to exit')
    finally:
        srv.cleanup()


def test_maxdisk_full_refuses_writes_keeps_reads():
    larder_only()
    with Server(workers=2, args=['--maxdisk', '2mb']) as srv:
        with srv.client() as c:
            # Random values: compression must not help. Pipelined, so a
            # failed write may share a group commit with successful ones:
            # every OK must still be stored, every error must not be.
            acked, refused = {}, []
            for batch in range(40):
                cmds = [('SET', 'k%d:%d' % (batch, i), os.urandom(4000))
                        for i in range(50)]
                for cmd, r in zip(cmds, c.pipeline(cmds)):
                    if r == 'OK':
                        acked[cmd[1]] = cmd[2]
                    else:
                        assert_true(getattr(r, 'message', '').startswith(
                            'ERR disk full'), 'write error: %r' % (r,))
                        refused.append(cmd[1])
                if refused:
                    break
            assert_true(refused, 'writes refused once maxdisk is reached')
            assert_true(len(acked) > 100, 'some writes fit (%d)'
                        % len(acked))
            keys = sorted(acked)
            for j in range(0, len(keys), 200):
                got = c.call('MGET', *keys[j:j + 200])
                assert_eq([k for k, v in zip(keys[j:j + 200], got)
                           if v != acked[k]], [], 'acknowledged values')
            assert_eq(c.call('EXISTS', *refused), 0, 'refused keys absent')
            assert_eq(c.call('DBSIZE'), len(acked))
            # Reads work; freeing space makes writes work again.
            assert_eq(c.call('GET', keys[0]), acked[keys[0]])
            assert_eq(c.call('FLUSHALL'), 'OK')
            assert_eq(c.call('SET', 'after', os.urandom(4000)), 'OK')


def _run_binary(args, cwd):
    p = subprocess.run([server_binary()] + args, cwd=cwd,
                       stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=20)
    return p.returncode, (p.stderr + p.stdout).decode(errors='replace')


def test_config_unknown_directive():
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-integ-')
    try:
        conf = os.path.join(d, 'larder.conf')
        with open(conf, 'w') as f:
            f.write('# test config\nport 0\nbogus-directive 1\n')
        code, err = _run_binary([conf, '--dir', d], d)
        assert_true(code != 0, 'non-zero exit (got %r)' % code)
        assert_true('larder.conf' in err, 'stderr names the file: %r' % err)
        assert_true('line 3' in err,
                    'stderr names the line: %r' % err)
        assert_true('bogus-directive' in err,
                    'stderr names the directive: %r' % err)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_config_bad_value_on_command_line():
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-integ-')
    try:
        code, err = _run_binary(['--port', 'abc', '--dir', d], d)
        assert_true(code != 0, 'non-zero exit (got %r)' % code)
        assert_true('port' in err, 'stderr names port: %r' % err)
        code, err = _run_binary(['--workers', '-1', '--dir', d], d)
        assert_true(code != 0, 'non-zero exit for workers -1')
        assert_true('workers' in err, 'stderr names workers: %r' % err)
        code, err = _run_binary(['--nosuchoption', '1', '--dir', d], d)
        assert_true(code != 0, 'non-zero exit for unknown option')
        assert_true('nosuchoption' in err, 'stderr names it: %r' % err)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_config_file_values_used():
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-integ-')
    try:
        conf = os.path.join(d, 'larder.conf')
        with open(conf, 'w') as f:
            f.write('databases 4\nworkers 1\n')
        srv = Server(config_file=conf, dir=d)
        try:
            with srv.client() as c:
                assert_eq(c.call('CONFIG', 'GET', 'databases'),
                          [b'databases', b'4'])
                assert_eq(c.call('SELECT', '3'), 'OK')
                r = c.call('SELECT', '4')
                assert_eq(getattr(r, 'message', r),
                          'ERR DB index is out of range')
        finally:
            srv.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == '__main__':
    main(globals())
