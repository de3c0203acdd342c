"""Checks the admin control socket and larderctl against the real server: the socket's mode and redis-cli on it, STATUS listing every process while workers are busy, stopped or dead, WORKERS growing and shrinking the pool live under load (a removed worker answers its clients and closes them, its listener goes), LOGLEVEL live, a hot BACKUP under a write load holding every acknowledged key, RELOAD (and SIGHUP) applying what can change and listing what needs a restart, SHUTDOWN and shutdown-timeout killing a stuck worker, respawn back-off with the cause of each death, larderctl's output and exit codes, daemonize with its pidfile, the systemd notify protocol through a fake NOTIFY_SOCKET, and syslog through a private /dev/log."""

import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time

from larder_test import (Client, ConnectionClosed, RespError, Server,
                         assert_eq, assert_true, larder_only, main,
                         proc_alive, proc_children, server_binary,
                         wait_until)


def larderctl():
    return os.path.join(os.path.dirname(server_binary()), 'larderctl')


def admin_path(s):
    return os.path.join(s.dir, 'larder-admin.sock')


def ctl(s, *args, user=None, path=None):
    """Run larderctl on s's admin socket: (exit code, stdout, stderr)."""
    argv = [larderctl(), '-s', path or admin_path(s)] + [str(a) for a in args]
    if user:
        argv = ['setpriv', '--reuid=%s' % user[0], '--regid=%s' % user[1],
                '--clear-groups'] + argv
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def ctl_json(s, *args):
    rc, out, err = ctl(s, '--json', *args)
    assert_eq(rc, 0, 'larderctl %s: %s' % (args, err))
    return json.loads(out)


def admin(s):
    return Client(admin_path(s))


def status(s):
    return ctl_json(s, 'status')


def running_workers(s):
    return [p for p in status(s)['processes']
            if p['role'] == 'worker' and p['state'] == 'running']


def serving_pid(c):
    info = c.call('INFO', 'server').decode()
    return int(re.search(r'worker_process_id:(\d+)', info).group(1))


def test_socket_mode_and_redis_cli():
    larder_only()
    with Server(workers=2) as s:
        st = os.stat(admin_path(s))
        assert_true(stat.S_ISSOCK(st.st_mode), 'a socket')
        assert_eq(stat.S_IMODE(st.st_mode), 0o600, 'mode 0600')
        if shutil.which('redis-cli'):
            out = subprocess.run(['redis-cli', '-s', admin_path(s), 'PING'],
                                 stdout=subprocess.PIPE, timeout=30).stdout
            assert_eq(out.strip(), b'PONG', 'redis-cli -s ... PING')
            out = subprocess.run(['redis-cli', '-s', admin_path(s), 'WORKERS'],
                                 stdout=subprocess.PIPE, timeout=30).stdout
            assert_eq(out.strip(), b'2', 'redis-cli -s ... WORKERS')
        with admin(s) as a:
            assert_true(isinstance(a.call('NOSUCH'), RespError), 'unknown verb')
            help_ = a.call('HELP')
            assert_true(any('BACKUP' in h for h in help_), 'HELP lists verbs')


def test_status_lists_every_process():
    larder_only()
    with Server(workers=3) as s:
        st = status(s)
        assert_eq(st['pid'], s.pid, 'master pid')
        procs = st['processes']
        roles = sorted(p['name'] for p in procs)
        assert_eq(roles, ['broker', 'master', 'reaper', 'syncer', 'worker#0',
                          'worker#1', 'worker#2'], 'every process')
        kids = set(proc_children(s.pid))
        listed = set(p['pid'] for p in procs if p['role'] != 'master')
        assert_eq(listed, kids, 'the pids are the master\'s children')
        for p in procs:
            assert_eq(p['state'], 'running', p['name'])
            assert_true(p['rss_bytes'] > 0, 'memory of ' + p['name'])
        # Commands and connections show per worker.
        with s.client() as c:
            for i in range(20):
                c.call('SET', 'k%d' % i, 'v')
            pid = serving_pid(c)
            w = [p for p in status(s)['processes'] if p['pid'] == pid][0]
            assert_true(w['connections'] >= 1 and w['commands'] >= 20, w)
        rc, out, err = ctl(s, 'status')
        assert_eq(rc, 0, err)
        head = [l for l in out.splitlines() if l.startswith('NAME')][0]
        assert_true('PID' in head and 'STATE' in head and 'RESPAWNS' in head,
                    head)
        rows = [l for l in out.splitlines() if l.startswith('worker#')]
        assert_eq(len(rows), 3, out)
        # Aligned: every row's STATE column starts where the header's does.
        col = head.index('STATE')
        for l in rows:
            assert_eq(l[col:col + 7], 'running', 'aligned: %r' % l)


def test_answers_while_workers_busy_stopped_or_dead():
    larder_only()
    with Server(workers=2, args=['--enable-debug-command', 'yes']) as s:
        # Busy: every worker inside DEBUG SLEEP.
        conns, busy = [], set()
        deadline = time.time() + 20
        while len(busy) < 2 and time.time() < deadline:
            c = s.client()
            pid = serving_pid(c)
            if pid in busy:
                c.close()
                continue
            busy.add(pid)
            c.send('DEBUG', 'SLEEP', '3')
            conns.append(c)
        assert_eq(len(busy), 2, 'both workers busy')
        t0 = time.time()
        st = status(s)
        assert_true(time.time() - t0 < 1.5, 'STATUS at once while busy')
        assert_eq(len([p for p in st['processes'] if p['role'] == 'worker']),
                  2, 'workers listed')
        for c in conns:
            assert_eq(c.read_reply(), 'OK')
            c.close()
        # Stopped (SIGSTOP), then dead (SIGKILL).
        pids = [p['pid'] for p in running_workers(s)]
        for p in pids:
            os.kill(p, signal.SIGSTOP)
        try:
            t0 = time.time()
            assert_eq(ctl(s, 'ping')[1].strip(), 'PONG')
            assert_eq(ctl(s, 'workers')[1].strip(), '2')
            assert_true(time.time() - t0 < 2, 'answers with workers stopped')
        finally:
            for p in pids:
                os.kill(p, signal.SIGCONT)
        for p in pids:
            os.kill(p, signal.SIGKILL)
        # kill() only queues SIGKILL: the workers die, and the master reaps
        # them, a moment later.
        wait_until(lambda: all(p['pid'] not in pids
                               for p in status(s)['processes']),
                   10, 'the dead are gone from STATUS')
        wait_until(lambda: len(running_workers(s)) == 2, 10, 'respawned')
        ws = [p for p in status(s)['processes'] if p['role'] == 'worker']
        for w in ws:
            assert_true(w['last_exit'].startswith('killed by signal 9'), w)
            assert_true(w['respawns'] >= 1, w)


class Load(threading.Thread):
    """Clients doing SET/GET on fresh and kept connections until stopped;
    counts the failures that are not a connection the server closed."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.ops = 0
        self.errors = []
        self.closed = 0

    def run(self):
        n = 0
        while not self.stop.is_set():
            try:
                with Client(self.port) as c:
                    for _ in range(20):
                        n += 1
                        r = c.call('SET', 'load:%d' % (n % 100), n)
                        if r != 'OK':
                            self.errors.append(r)
                        self.ops += 1
            except (ConnectionClosed, ConnectionResetError, BrokenPipeError):
                self.closed += 1
            except OSError as e:
                self.errors.append(e)


def test_workers_grow_and_shrink_live():
    larder_only()
    with Server(workers=2) as s:
        load = Load(s.port)
        load.start()
        try:
            assert_eq(ctl(s, 'workers', 4)[0], 0, 'grow')
            wait_until(lambda: len(running_workers(s)) == 4, 10, '4 workers')
            pids = set()
            end = time.time() + 10
            while len(pids) < 4 and time.time() < end:
                with s.client() as c:
                    pids.add(serving_pid(c))
            assert_eq(len(pids), 4, 'new connections reach the new workers')
            # A client on a worker about to go: its pipelined commands are
            # answered, then its connection closes.
            keep = None
            for _ in range(200):
                c = s.client()
                if serving_pid(c) in [p['pid'] for p in running_workers(s)
                                      if p['name'] in ('worker#2',
                                                       'worker#3')]:
                    keep = c
                    break
                c.close()
            assert_true(keep is not None, 'a client on worker#2 or #3')
            assert_eq(ctl(s, 'workers', 1)[0], 0, 'shrink')
            def one_left():
                ws = [p for p in status(s)['processes']
                      if p['role'] == 'worker' and p['state'] != 'stopped']
                return len(ws) == 1 and ws[0]['state'] == 'running'
            wait_until(one_left, 15, 'the removed workers gone')
            assert_true(keep.is_closed(10), 'closed gracefully')
            keep.close()
            st = status(s)
            gone = [p for p in st['processes']
                    if p['role'] == 'worker' and p['name'] != 'worker#0']
            for p in gone:
                assert_eq(p['state'], 'stopped', str(p))
                assert_eq(p['last_exit'], 'exited with status 0', str(p))
            # Every new connection is served by the one worker left (the
            # removed workers' listeners are closed everywhere).
            only = running_workers(s)[0]['pid']
            for _ in range(30):
                with s.client() as c:
                    assert_eq(serving_pid(c), only, 'served by worker#0')
            assert_eq(ctl(s, 'workers', 3)[0], 0, 'grow again')
            wait_until(lambda: len(running_workers(s)) == 3, 10, '3 workers')
        finally:
            load.stop.set()
            load.join(30)
        assert_eq(load.errors, [], 'no failed command under load')
        assert_true(load.ops > 100, 'the load ran: %d ops' % load.ops)
        rc, out, err = ctl(s, 'workers', 0)
        assert_eq(rc, 2, 'workers 0 is a usage error')
        rc, out, err = ctl(s, 'workers', 1000)
        assert_eq(rc, 1, 'past workers-max: refused')
        assert_true('workers-max' in err, err)


def test_loglevel_live():
    larder_only()
    with Server(workers=2) as s:
        assert_eq(ctl(s, 'loglevel')[1].strip(), 'notice')
        assert_eq(ctl(s, 'loglevel', 'verbose')[0], 0)
        assert_eq(ctl(s, 'loglevel')[1].strip(), 'verbose')
        with s.client() as c:
            assert_eq(c.call('CONFIG', 'GET', 'loglevel'),
                      [b'loglevel', b'verbose'])
        # Every process applied it: each says so at verbose ('-'), in
        # Redis's line format (pid:letter).
        def said(letter):
            return re.search(r'^\d+:%s \d\d \w{3} \d{4} [0-9:.]+ - '
                             r'configuration #\d+ applied' % letter,
                             s.log_text(), re.M)
        for letter in 'WRYB':
            wait_until(lambda: said(letter), 10, 'verbose from ' + letter)
        assert_eq(ctl(s, 'loglevel', 'warning')[0], 0)
        rc, out, err = ctl(s, 'loglevel', 'loud')
        assert_eq(rc, 1, 'a bad level is refused')


class Writer(threading.Thread):
    """SETs new keys until stopped; acked[i] is the time key i was
    acknowledged."""

    def __init__(self, port, tag):
        super().__init__(daemon=True)
        self.port, self.tag = port, tag
        self.stop = threading.Event()
        self.acked = []

    def run(self):
        with Client(self.port) as c:
            i = 0
            while not self.stop.is_set():
                batch = [('SET', '%s:%d' % (self.tag, i + k), 'v%d' % (i + k))
                         for k in range(50)]
                for r in c.pipeline(batch):
                    assert r == 'OK', r
                now = time.time()
                self.acked.extend([now] * len(batch))
                i += len(batch)


def test_backup_under_load_holds_every_acked_key():
    larder_only()
    with Server(workers=2) as s:
        with s.client() as c:
            for i in range(0, 20000, 500):
                c.pipeline([('SET', 'pre:%d' % k, 'x' * 100)
                            for k in range(i, i + 500)])
        writers = [Writer(s.port, 'w%d' % n) for n in range(2)]
        for w in writers:
            w.start()
        time.sleep(0.5)
        acked_before = {w.tag: len(w.acked) for w in writers}
        target = os.path.join(s.dir, 'backup.copy')
        rc, out, err = ctl(s, 'backup', target)
        for w in writers:
            w.stop.set()
            w.join(30)
        assert_eq(rc, 0, 'backup: %s %s' % (out, err))
        assert_true('backup done' in out, out)
        assert_true('backing up' in err, 'progress on stderr: %r' % err)
        assert_true(os.path.getsize(target) > 0, 'a file')
        assert_true(min(acked_before.values()) > 0, 'writes before the copy')
        # The copy opens as a data file and holds every key acknowledged
        # before BACKUP was asked for.
        d = tempfile.mkdtemp(prefix='larder-backup-')
        try:
            shutil.copy(target, os.path.join(d, 'data.mdb'))
            with Server(workers=1, dir=d) as b, b.client() as c:
                assert_eq(c.call('GET', 'pre:19999'), b'x' * 100)
                for tag, n in acked_before.items():
                    keys = ['%s:%d' % (tag, i) for i in range(n)]
                    for i in range(0, n, 1000):
                        got = c.call('MGET', *keys[i:i + 1000])
                        want = [b'v%d' % k for k in range(i, min(n, i + 1000))]
                        assert_eq(got, want, '%s keys %d..' % (tag, i))
        finally:
            shutil.rmtree(d, ignore_errors=True)
        rc, out, err = ctl(s, 'backup', '/nonexistent-dir/x.mdb')
        assert_eq(rc, 1, 'a backup that cannot be written fails')
        assert_true('failed' in err, err)


CONF = """# test config
port {port}
dir {dir}
logfile {log}
workers 2
maxclients 1000
hz 10
"""


def conf_server(**kw):
    s = Server(start=False, **kw)
    conf = os.path.join(s.dir, 'larder.conf')
    s.conf_path = conf
    s.config_file = conf
    return s


def write_conf(s, extra=''):
    with open(s.conf_path, 'w') as f:
        f.write(CONF.format(port=s.port or 0, dir=s.dir, log=s.logfile) + extra)


def test_reload_applies_and_lists_restarts():
    larder_only()
    s = conf_server()
    try:
        write_conf(s)
        s.start()
        # (port is given on the command line too: the command line still
        # wins over the file, as at start.)
        write_conf(s, 'maxclients 500\nslowlog-max-len 7\nport 1\n'
                      'databases 8\ntcp-backlog 100\n')
        r = ctl_json(s, 'reload')
        assert_eq(sorted(r['applied']), ['maxclients', 'slowlog-max-len'])
        assert_eq(sorted(r['restart']), ['databases', 'tcp-backlog'])
        with s.client() as c:
            got = dict(zip(*[iter(c.call('CONFIG', 'GET', 'maxclients',
                                         'slowlog-max-len', 'port'))] * 2))
            assert_eq(got[b'maxclients'], b'500', 'applied live')
            assert_eq(got[b'port'], str(s.port).encode(), 'port kept')
        # SIGHUP does the same.
        write_conf(s, 'maxclients 600\n')
        os.kill(s.pid, signal.SIGHUP)
        def applied():
            with s.client() as c:
                return c.call('CONFIG', 'GET', 'maxclients')[1] == b'600'
        wait_until(applied, 10, 'SIGHUP reloads')
        assert_true('configuration reloaded' in s.log_text(), 'logged')
        with open(s.conf_path, 'a') as f:
            f.write('maxclients lots\n')
        rc, out, err = ctl(s, 'reload')
        assert_eq(rc, 1, 'a bad file is refused')
        assert_true("'maxclients'" in err, err)
    finally:
        s.cleanup()


def test_shutdown_timeout_kills_a_stuck_worker():
    larder_only()
    with Server(workers=2, args=['--enable-debug-command', 'yes',
                                 '--shutdown-timeout', '2']) as s:
        c = s.client()
        c.send('DEBUG', 'SLEEP', '60')
        time.sleep(0.3)
        t0 = time.time()
        rc, out, err = ctl(s, 'stop')
        took = time.time() - t0
        assert_eq(rc, 0, 'stopped: %s' % err)
        assert_true(took < 6, 'within shutdown-timeout: %.1fs' % took)
        assert_eq(s.wait_exit(10), 0, 'the master exits 0')
        assert_true('did not stop within shutdown-timeout: SIGKILL'
                    in s.log_text(), 'the stuck worker was killed')
        c.close()


def test_shutdown_now():
    larder_only()
    with Server(workers=2) as s:
        with s.client() as c:
            assert_eq(c.call('SET', 'k', 'v'), 'OK')
        rc, out, err = ctl(s, 'stop', '--now')
        assert_eq(rc, 0, err)
        assert_eq(s.wait_exit(10), 0, 'exit 0')
        s.start()
        with s.client() as c:
            assert_eq(c.call('GET', 'k'), b'v', 'acknowledged data kept')


def test_respawn_back_off_and_cause():
    larder_only()
    with Server(workers=1) as s:
        # A worker that keeps dying young is forked again later and later.
        gaps = []
        for _ in range(5):
            w = wait_until(lambda: [p for p in running_workers(s)], 20,
                           'a worker')[0]
            os.kill(w['pid'], signal.SIGKILL)
            t0 = time.time()
            wait_until(lambda: [p for p in running_workers(s)
                                if p['pid'] != w['pid']], 20, 'respawn')
            gaps.append(time.time() - t0)
        assert_true(gaps[-1] > gaps[0] and gaps[-1] >= 0.7,
                    'back-off grows: %r' % gaps)
        log = s.log_text()
        assert_true(re.search(r'worker#0\[\d+\] killed by signal 9 \(Killed\)',
                              log), 'the cause is logged')
        assert_true('respawning in' in log, 'the back-off is logged')
        w = running_workers(s)[0]
        assert_true(w['respawns'] >= 5, w)


def test_larderctl_exit_codes():
    larder_only()
    with Server(workers=1) as s:
        rc, out, err = ctl(s, 'nosuch')
        assert_eq(rc, 2, 'usage')
        rc, out, err = ctl(s, 'config', 'set', 'hz', 'abc')
        assert_eq(rc, 1, 'refused')
        assert_true("argument couldn't be parsed" in err, err)
        assert_eq(ctl(s, 'config', 'set', 'hz', '11', 'maxclients', '77')[0],
                  0)
        assert_eq(ctl_json(s, 'config', 'get', 'hz', 'maxclients'),
                  {'hz': '11', 'maxclients': '77'})
        if shutil.which('setpriv'):
            # The socket is 0600: another user may not use it.
            os.chmod(s.dir, 0o755)
            rc, out, err = ctl(s, 'status', user=('nobody', 'nogroup'))
            assert_eq(rc, 4, 'permission denied: %s' % err)
            assert_true('permission denied' in err, err)
        rc, out, err = ctl(s, 'status', path=os.path.join(s.dir, 'none.sock'))
        assert_eq(rc, 3, 'not running')
        assert_true('not running' in err, err)
        # -c finds the socket from a config file's dir and admin-socket.
        conf = os.path.join(s.dir, 'c.conf')
        with open(conf, 'w') as f:
            f.write('dir %s\n' % s.dir)
        p = subprocess.run([larderctl(), '-c', conf, 'ping'],
                           stdout=subprocess.PIPE, timeout=30)
        assert_eq((p.returncode, p.stdout.strip()), (0, b'PONG'), '-c')
    rc, out, err = ctl(s, 'status')
    assert_eq(rc, 3, 'stopped: not running')


def test_daemonize_and_pidfile():
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-daemon-')
    try:
        port = socket.socket()
        port.bind(('127.0.0.1', 0))
        p = port.getsockname()[1]
        port.close()
        pidfile = os.path.join(d, 'larder.pid')
        argv = [server_binary(), '--port', str(p), '--dir', d, '--logfile',
                os.path.join(d, 'log'), '--daemonize', 'yes', '--pidfile',
                pidfile, '--workers', '1']
        r = subprocess.run(argv, timeout=30, stdin=subprocess.DEVNULL)
        assert_eq(r.returncode, 0, 'the parent exits 0 once ready')
        pid = int(open(pidfile).read())
        assert_true(proc_alive(pid), 'the daemon runs')
        with Client(p) as c:
            assert_eq(c.call('PING'), 'PONG', 'and serves at once')
            info = c.call('INFO', 'server').decode()
            assert_true('process_id:%d' % pid in info, 'the pidfile\'s pid')
        # A second one on the same port fails, and says so by its status.
        r = subprocess.run(argv[:5] + [os.path.join(d, 'log2'), '--daemonize',
                                       'yes', '--admin-socket', 'x.sock'],
                           timeout=30, stdin=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        assert_eq(r.returncode, 1, 'a daemon that cannot start: exit 1')
        rc, out, err = subprocess.run(
            [larderctl(), '-s', os.path.join(d, 'larder-admin.sock'), 'stop'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            timeout=60).returncode, '', ''
        assert_eq(rc, 0, 'stopped')
        assert_true(not os.path.exists(pidfile), 'pidfile removed')
    finally:
        shutil.rmtree(d, ignore_errors=True)


class NotifyServer(Server):
    """The server with NOTIFY_SOCKET set to a socket the test reads."""

    def __init__(self, notify, **kw):
        self.notify = notify
        super().__init__(**kw)

    def start(self):
        os.environ['NOTIFY_SOCKET'] = self.notify
        try:
            return super().start()
        finally:
            del os.environ['NOTIFY_SOCKET']


def test_systemd_notify_protocol():
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-notify-')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = os.path.join(d, 'notify')
    sock.bind(path)
    sock.settimeout(10)
    try:
        s = conf_server(args=['--supervised', 'systemd'])
        try:
            write_conf(s)
            os.environ['NOTIFY_SOCKET'] = path
            try:
                s.start()
            finally:
                del os.environ['NOTIFY_SOCKET']
            msgs = []
            def got(prefix):
                while not any(m.startswith(prefix) for m in msgs):
                    msgs.append(sock.recv(4096).decode())
                return [m for m in msgs if m.startswith(prefix)][-1]
            ready = got('READY=1')
            assert_true('STATUS=Ready to accept connections' in ready, ready)
            assert_true('MAINPID=%d' % s.pid in ready, ready)
            msgs.clear()
            assert_eq(ctl(s, 'reload')[0], 0)
            got('RELOADING=1')
            got('READY=1')
            msgs.clear()
            assert_eq(ctl(s, 'stop')[0], 0)
            stopping = got('STOPPING=1')
            assert_true('STATUS=' in stopping, stopping)
        finally:
            s.cleanup()
        # supervised no: nothing is sent.
        os.environ['NOTIFY_SOCKET'] = path
        try:
            s = Server(workers=1, args=['--supervised', 'no'])
        finally:
            del os.environ['NOTIFY_SOCKET']
        sock.settimeout(0.5)
        try:
            sock.recv(4096)
            raise AssertionError('supervised no sent a notification')
        except socket.timeout:
            pass
        finally:
            s.cleanup()
    finally:
        sock.close()
        shutil.rmtree(d, ignore_errors=True)


class PrivateDevLog(Server):
    """The server in its own mount namespace whose /dev/log is a socket
    of the test (syslog(3) always writes to /dev/log)."""

    def __init__(self, log_sock, **kw):
        self.log_sock = log_sock
        super().__init__(**kw)

    def command_line(self):
        inner = ' '.join("'%s'" % a for a in super().command_line())
        script = ('mount -t tmpfs none /dev && mknod -m 666 /dev/null c 1 3 '
                  '&& ln -s %s /dev/log && exec %s' % (self.log_sock, inner))
        return ['unshare', '-m', 'sh', '-c', script]


def test_syslog():
    larder_only()
    if os.geteuid() != 0 or not shutil.which('unshare'):
        raise Skip('needs root and unshare for a private /dev/log')
    d = tempfile.mkdtemp(prefix='larder-syslog-')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = os.path.join(d, 'log')
    sock.bind(path)
    sock.settimeout(10)
    try:
        with PrivateDevLog(path, workers=1,
                           args=['--syslog-enabled', 'yes', '--syslog-ident',
                                 'larder-t', '--syslog-facility',
                                 'local3']) as s:
            lines = []
            while not any('Ready to accept connections' in l for l in lines):
                lines.append(sock.recv(4096).decode(errors='replace'))
            ready = [l for l in lines if 'Ready to accept' in l][0]
            # <PRI> is facility * 8 + severity: local3 (19), notice (5).
            assert_true(ready.startswith('<%d>' % (19 * 8 + 5)), ready)
            assert_true('larder-t[%d]' % s.pid in ready, ready)
            assert_true(any(re.search(r'larder-t\[\d+\]: worker#0\[\d+\] '
                                      r'started', l) for l in lines), lines)
    finally:
        sock.close()
        shutil.rmtree(d, ignore_errors=True)


from larder_test import Skip  # noqa: E402


if __name__ == '__main__':
    main(globals())
