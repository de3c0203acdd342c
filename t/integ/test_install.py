"""Checks what make install gives and the whole operator's story on it: make install into a temporary prefix puts the server, larderctl, larder-bench, a documented config, the SysV script, the systemd unit and three man pages there; the SysV script against a temporary config starts the server (a second start says it runs), status, reload, restart and stop it; larderctl status sees every process; the worker count and log level change live; a backup taken while a load runs opens and holds every acknowledged key; the unit passes systemd-analyze verify (and a broken copy does not)."""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

from larder_test import (Client, Server, Skip, assert_eq, assert_true,
                         larder_only, main, proc_alive, server_binary,
                         wait_until)

BUILD = os.path.dirname(os.path.abspath(server_binary()))


def install(prefix):
    """make install prefix=PREFIX from the build the tests run."""
    p = subprocess.run(['make', '-C', BUILD, '-s', 'install',
                        'prefix=' + prefix], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=300)
    assert_eq(p.returncode, 0, 'make install: %s' % p.stdout.decode()[-2000:])


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def run(argv, env=None, timeout=120):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


class Installed:
    """A temporary prefix with larder installed, and a config for it."""

    def __init__(self):
        self.top = tempfile.mkdtemp(prefix='larder-install-')
        self.prefix = os.path.join(self.top, 'usr')
        install(self.prefix)
        self.port = free_port()
        self.data = os.path.join(self.top, 'data')
        self.pidfile = os.path.join(self.top, 'run', 'larder.pid')
        self.log = os.path.join(self.top, 'log', 'larder.log')
        self.conf = os.path.join(self.top, 'larder.conf')
        shipped = os.path.join(self.prefix, 'etc', 'larder', 'larder.conf')
        with open(shipped) as f:
            text = f.read()
        # The shipped config, with this test's port and paths after it
        # (later lines win).
        with open(self.conf, 'w') as f:
            f.write(text + '\n# the test\'s\nport %d\ndir %s\npidfile %s\n'
                    'logfile %s\nworkers 2\n'
                    % (self.port, self.data, self.pidfile, self.log))
        self.env = dict(os.environ, CONFIG=self.conf,
                        DEFAULTS=os.path.join(self.top, 'none'))

    def init(self, verb):
        return run([os.path.join(self.prefix, 'etc', 'init.d', 'larder'),
                    verb], env=self.env)

    def ctl(self, *args):
        return run([os.path.join(self.prefix, 'bin', 'larderctl'), '-c',
                    self.conf] + [str(a) for a in args])

    def ctl_json(self, *args):
        rc, out, err = self.ctl('--json', *args)
        assert_eq(rc, 0, 'larderctl %s: %s' % (args, err))
        return json.loads(out)

    def pid(self):
        try:
            return int(open(self.pidfile).read())
        except (OSError, ValueError):
            return None

    def cleanup(self):
        pid = self.pid()
        if pid and proc_alive(pid):
            self.init('stop')
            if proc_alive(pid):
                os.kill(pid, 9)
        shutil.rmtree(self.top, ignore_errors=True)


def test_make_install_puts_everything():
    larder_only()
    inst = Installed()
    try:
        p = inst.prefix
        for f in ('bin/larder-server', 'bin/larderctl', 'bin/larder-bench',
                  'etc/init.d/larder'):
            assert_true(os.access(os.path.join(p, f), os.X_OK), f)
        for f in ('etc/larder/larder.conf', 'lib/systemd/system/larder.service',
                  'share/man/man1/larder-server.1',
                  'share/man/man1/larderctl.1',
                  'share/man/man1/larder-bench.1'):
            assert_true(os.path.isfile(os.path.join(p, f)), f)
        conf = open(os.path.join(p, 'etc/larder/larder.conf')).read()
        assert_true('dir %s/var/lib/larder' % p in conf, 'paths filled in')
        assert_true('@' not in re.sub(r'#.*', '', conf), 'no @var@ left')
        unit = open(os.path.join(p, 'lib/systemd/system/larder.service')).read()
        assert_true('ExecStart=%s/bin/larder-server %s/etc/larder/larder.conf'
                    % (p, p) in unit, unit)
        # The shipped config starts a server as it is (its paths aside).
        rc, out, err = run([os.path.join(p, 'bin/larder-server'), '--help'])
        assert_eq(rc, 0, err)
        if shutil.which('man'):
            for page in ('larder-server', 'larderctl', 'larder-bench'):
                rc, out, err = run(['man', '-l', '--warnings=w',
                                    os.path.join(p, 'share/man/man1',
                                                 page + '.1')],
                                   env=dict(os.environ, MANWIDTH='80',
                                            MAN_KEEP_FORMATTING='0'))
                assert_eq(rc, 0, 'man %s: %s' % (page, err))
                out = re.sub('.\x08', '', out)  # bold and underline
                assert_true('NAME' in out and page in out.lower(),
                            '%s: %r' % (page, out[:300]))
        # An edited config is kept by a second install.
        with open(os.path.join(p, 'etc/larder/larder.conf'), 'a') as f:
            f.write('\nhz 20\n')
        install(p)
        assert_true('hz 20' in open(os.path.join(p, 'etc/larder/larder.conf'))
                    .read(), 'kept')
        assert_true(os.path.isfile(os.path.join(p, 'etc/larder/'
                                                'larder.conf.default')),
                    'the new one beside it')
    finally:
        inst.cleanup()


class Load(threading.Thread):
    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.acked = 0

    def run(self):
        with Client(self.port) as c:
            while not self.stop.is_set():
                batch = [('SET', 'load:%d' % (self.acked + k), 'v')
                         for k in range(100)]
                for r in c.pipeline(batch):
                    assert r == 'OK', r
                self.acked += len(batch)


def test_sysv_script_and_the_operators_story():
    """Done when: install, start with the SysV script, see every process
    with larderctl status, change the worker count and log level live,
    back up under load (the copy holds every acknowledged key), stop."""
    larder_only()
    inst = Installed()
    try:
        rc, out, err = inst.init('status')
        assert_eq(rc, 3, 'not running yet: %s' % out)
        rc, out, err = inst.init('start')
        assert_eq(rc, 0, 'start: %s %s' % (out, err))
        assert_true('started' in out, out)
        pid = inst.pid()
        assert_true(pid and proc_alive(pid), 'running, pidfile written')
        rc, out, err = inst.init('start')
        assert_eq(rc, 0, 'a second start')
        assert_true('already running (pid %d)' % pid in out, out)
        rc, out, err = inst.init('status')
        assert_eq((rc, 'is running (pid %d)' % pid in out), (0, True), out)
        with Client(inst.port) as c:
            assert_eq(c.call('SET', 'k', 'v'), 'OK')
        # larderctl status: every process.
        st = inst.ctl_json('status')
        names = sorted(p['name'] for p in st['processes'])
        assert_eq(names, ['broker', 'master', 'reaper', 'syncer', 'worker#0',
                          'worker#1'], 'every process')
        assert_eq(st['pid'], pid, 'the master')
        rc, out, err = inst.ctl('status')
        assert_eq(rc, 0, err)
        assert_true('worker#1' in out and 'running' in out, out)
        # Worker count and log level, live.
        assert_eq(inst.ctl('workers', 3)[0], 0)
        wait_until(lambda: inst.ctl_json('status')['workers_running'] == 3,
                   10, '3 workers')
        assert_eq(inst.ctl('loglevel', 'verbose')[0], 0)
        with Client(inst.port) as c:
            assert_eq(c.call('CONFIG', 'GET', 'loglevel'),
                      [b'loglevel', b'verbose'])
        assert_eq(inst.ctl('workers', 2)[0], 0)
        wait_until(lambda: inst.ctl_json('status')['workers_running'] == 2,
                   15, '2 workers')
        # A backup while a load runs.
        load = Load(inst.port)
        load.start()
        time.sleep(0.3)
        acked = load.acked
        copy = os.path.join(inst.top, 'copy.mdb')
        rc, out, err = inst.ctl('backup', copy)
        load.stop.set()
        load.join(30)
        assert_eq(rc, 0, 'backup: %s' % err)
        assert_true(acked > 0, 'acknowledged writes before the backup')
        d = os.path.join(inst.top, 'restored')
        os.mkdir(d)
        shutil.copy(copy, os.path.join(d, 'data.mdb'))
        with Server(workers=1, dir=d) as b, b.client() as c:
            assert_eq(c.call('GET', 'k'), b'v')
            keys = ['load:%d' % i for i in range(acked)]
            for i in range(0, acked, 1000):
                assert_eq(c.call('MGET', *keys[i:i + 1000]),
                          [b'v'] * len(keys[i:i + 1000]), 'keys %d..' % i)
        # reload: a runtime directive changed in the file applies.
        with open(inst.conf, 'a') as f:
            f.write('maxclients 777\n')
        rc, out, err = inst.init('reload')
        assert_eq(rc, 0, out + err)
        def reloaded():
            with Client(inst.port) as c:
                return c.call('CONFIG', 'GET', 'maxclients')[1] == b'777'
        wait_until(reloaded, 10, 'reload applied')
        # restart: a new master, the data kept.
        rc, out, err = inst.init('restart')
        assert_eq(rc, 0, out + err)
        new = inst.pid()
        assert_true(new and new != pid and proc_alive(new), 'a new master')
        assert_true(not proc_alive(pid), 'the old one gone')
        with Client(inst.port) as c:
            assert_eq(c.call('GET', 'k'), b'v', 'data kept')
        # stop: cleanly, everything gone.
        rc, out, err = inst.init('stop')
        assert_eq(rc, 0, out + err)
        assert_true(not proc_alive(new), 'stopped')
        assert_true(not os.path.exists(inst.pidfile), 'pidfile removed')
        assert_true('bye bye' in open(inst.log).read(), 'a clean exit')
        rc, out, err = inst.init('status')
        assert_eq(rc, 3, 'not running: %s' % out)
        rc, out, err = inst.init('stop')
        assert_eq(rc, 0, 'stopping a stopped server')
        rc, out, err = inst.ctl('status')
        assert_eq(rc, 3, 'larderctl: not running')
        # A start that cannot work says so by its status.
        with open(inst.conf, 'a') as f:
            f.write('databases 0\n')
        rc, out, err = inst.init('start')
        assert_eq(rc, 1, 'a bad config fails the start: %s' % out)
    finally:
        inst.cleanup()


test_sysv_script_and_the_operators_story.timeout = 240


def test_systemd_unit_verifies():
    larder_only()
    if not shutil.which('systemd-analyze'):
        raise Skip('systemd-analyze not installed (apt-get install systemd)')
    inst = Installed()
    try:
        unit = os.path.join(inst.prefix, 'lib/systemd/system/larder.service')
        env = dict(os.environ, MANPATH=os.path.join(inst.prefix, 'share/man')
                   + ':', SYSTEMD_LOG_LEVEL='notice')
        rc, out, err = run(['systemd-analyze', 'verify', unit], env=env)
        assert_eq(rc, 0, 'systemd-analyze verify: %s %s' % (out, err))
        # The same check fails a unit whose program is not there.
        broken = os.path.join(inst.top, 'larder.service')
        with open(unit) as f, open(broken, 'w') as g:
            g.write(f.read().replace('/bin/larder-server', '/bin/nosuch'))
        rc, out, err = run(['systemd-analyze', 'verify', broken], env=env)
        assert_true(rc != 0 and 'nosuch' in err, 'a broken unit fails: %s'
                    % err)
    finally:
        inst.cleanup()


if __name__ == '__main__':
    main(globals())
