"""larder_test - harness for larder's integration tests: starts the real
server (or redis-server, to validate expectations) on an ephemeral port in a
temp dir, a RESP2/RESP3 client, assertion helpers and a tiny test runner.

Environment:
  LARDER_SERVER        path of larder-server (default ../../build/larder-server
                       relative to this file)
  LARDER_TEST_AGAINST  "redis" runs the same tests against redis-server;
                       larder-only tests are skipped then
  LARDER_TEST_FILTER   run only tests whose name contains this text
  LARDER_TEST_VERBOSE  print the server log of a failed test
  LARDER_TEST_SERVER_ARGS  arguments added to every larder-server command
                       line of the harness (shell words), e.g.
                       "--lmdb-writemap yes" to run a suite with writemap

Replies decode as: simple string -> str, bulk -> bytes, integer -> int,
null -> None, array -> list, map -> dict, set -> set (list if members are
unhashable), double -> float, boolean -> bool, big number -> int, verbatim
-> Verbatim (bytes with .format), push -> Push (list), error -> RespError.
Errors are returned, not raised, so they can be asserted exactly.
"""

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))
AGAINST = os.environ.get('LARDER_TEST_AGAINST', 'larder')
IS_REDIS = AGAINST == 'redis'
SERVER_ARGS = shlex.split(os.environ.get('LARDER_TEST_SERVER_ARGS', ''))
# How long a start may take before the test fails: a sanitizer build on a
# loaded machine (CI) may need far more than the usual fraction of a second.
START_DEADLINE = 30.0
STOP_DEADLINE = 10.0
SOCKET_TIMEOUT = 10.0
TEST_TIMEOUT = 90


def server_binary():
    env = os.environ.get('LARDER_SERVER')
    if env:
        return env
    return os.path.normpath(os.path.join(HERE, '..', '..', 'build',
                                         'larder-server'))


# --------------------------------------------------------------------------
# RESP client

class RespError(Exception):
    """An error reply; .message is its exact text (without '-' and CRLF)."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message

    def __eq__(self, other):
        return isinstance(other, RespError) and other.message == self.message

    def __hash__(self):
        return hash(self.message)

    def __repr__(self):
        return 'RespError(%r)' % self.message


class Verbatim(bytes):
    """RESP3 verbatim string; .format is its 3-letter type ('txt')."""
    format = 'txt'


class Push(list):
    """RESP3 push message."""


class ConnectionClosed(Exception):
    pass


def encode_command(*args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, (int, float)):
            a = str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Client:
    """A blocking RESP client on TCP (port, host) or a Unix socket (path)."""

    def __init__(self, where, host='127.0.0.1', timeout=SOCKET_TIMEOUT):
        if isinstance(where, str):
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(where)
        else:
            self.sock = socket.create_connection((host, where),
                                                 timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self.proto = 2

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def settimeout(self, t):
        self.sock.settimeout(t)

    # ---- writing
    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, *args):
        self.sock.sendall(encode_command(*args))

    def call(self, *args):
        self.send(*args)
        return self.read_reply()

    def pipeline(self, commands):
        """Send all commands in one write; return their replies in order."""
        self.send_raw(b''.join(encode_command(*c) for c in commands))
        return [self.read_reply() for _ in commands]

    def hello(self, proto, *extra):
        r = self.call('HELLO', proto, *extra)
        if not isinstance(r, RespError):
            self.proto = proto
        return r

    # ---- reading
    def _fill(self):
        if self.pos > 65536 and self.pos * 2 > len(self.buf):
            del self.buf[:self.pos]
            self.pos = 0
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionClosed('server closed the connection')
        self.buf += data

    def _line(self):
        while True:
            i = self.buf.find(b'\r\n', self.pos)
            if i >= 0:
                line = bytes(self.buf[self.pos:i])
                self.pos = i + 2
                return line
            self._fill()

    def _exact(self, n):
        while len(self.buf) - self.pos < n + 2:
            self._fill()
        data = bytes(self.buf[self.pos:self.pos + n])
        if self.buf[self.pos + n:self.pos + n + 2] != b'\r\n':
            raise ValueError('bulk not terminated by CRLF')
        self.pos += n + 2
        return data

    def read_reply(self):
        line = self._line()
        if not line:
            raise ValueError('empty reply line')
        t, rest = line[:1], line[1:]
        if t == b'+':
            return rest.decode('latin-1')
        if t == b'-':
            return RespError(rest.decode('latin-1'))
        if t == b':':
            return int(rest)
        if t == b'$':
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b'*':
            n = int(rest)
            return None if n < 0 else [self.read_reply() for _ in range(n)]
        if t == b'_':
            return None
        if t == b',':
            return float(rest.decode())
        if t == b'#':
            if rest not in (b't', b'f'):
                raise ValueError('bad boolean %r' % rest)
            return rest == b't'
        if t == b'(':
            return int(rest)
        if t == b'!':
            return RespError(self._exact(int(rest)).decode('latin-1'))
        if t == b'=':
            data = self._exact(int(rest))
            v = Verbatim(data[4:])
            v.format = data[:3].decode()
            return v
        if t == b'%':
            d = {}
            for _ in range(int(rest)):
                k = self.read_reply()
                if isinstance(k, list):
                    k = tuple(k)
                d[k] = self.read_reply()
            return d
        if t == b'~':
            items = [self.read_reply() for _ in range(int(rest))]
            try:
                return set(items)
            except TypeError:
                return items
        if t == b'>':
            return Push(self.read_reply() for _ in range(int(rest)))
        if t == b'|':
            for _ in range(2 * int(rest)):
                self.read_reply()
            return self.read_reply()
        raise ValueError('unknown reply type %r' % line)

    def read_raw(self, n=None):
        """Read exactly n bytes; without n, whatever is buffered or arrives
        next (at least one byte)."""
        if n is None:
            if self.pos >= len(self.buf):
                self._fill()
            n = len(self.buf) - self.pos
        while len(self.buf) - self.pos < n:
            self._fill()
        data = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return data

    def expect_raw(self, want):
        """The next bytes from the server are exactly want (checked on
        len(want) bytes, so TCP segmentation does not matter)."""
        got = self.read_raw(len(want))
        assert_eq(got, want, 'raw reply')

    def is_closed(self, deadline=5.0):
        """True if the server closes the connection within deadline
        (pending replies are discarded)."""
        end = time.time() + deadline
        old = self.sock.gettimeout()
        try:
            while time.time() < end:
                self.sock.settimeout(max(0.01, end - time.time()))
                try:
                    data = self.sock.recv(65536)
                except socket.timeout:
                    return False
                except (ConnectionResetError, BrokenPipeError):
                    return True
                if not data:
                    return True
            return False
        finally:
            self.sock.settimeout(old)


# --------------------------------------------------------------------------
# Server

# Lines in a server's stderr or log that mean a process crashed or a
# sanitizer fired: the test fails even if every reply was right (a crashed
# worker is respawned silently). SIGKILL is what tests send on purpose.
CRASH_RE = re.compile(r'runtime error:|ERROR: AddressSanitizer|'
                      r'ERROR: LeakSanitizer|killed by signal (?!9\b)\d+|'
                      r'exited with status [1-9]|dumped core')
_CRASHES = []


def take_crash_reports():
    """Crash reports collected from servers since the last call."""
    out = list(_CRASHES)
    del _CRASHES[:]
    return out


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def proc_children(pid):
    """PIDs whose parent is pid (from /proc)."""
    out = []
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % name) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(')') + 2:].split()
        if int(fields[1]) == pid and fields[0] != 'Z':
            out.append(int(name))
    return out


def proc_tree(pid):
    """pid's live descendants, depth first (not including pid)."""
    out = []
    for c in proc_children(pid):
        out.append(c)
        out.extend(proc_tree(c))
    return out


def proc_alive(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(')') + 2:].split()[0] != 'Z'


def proc_comm(pid):
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return ''


def proc_kib(pid, field='VmRSS'):
    """A size field of /proc/PID/status (VmRSS, VmHWM) in KiB; 0 when the
    process is gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith(field + ':'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# An AddressSanitizer build (tools/dev san) holds memory of its own in each
# process: shadow (an eighth of what the heap touches), a redzone around
# every block, its runtime, and a quarantine of freed blocks that is
# 256 MiB by default. A test that bounds RSS calls asan_small_quarantine()
# before starting servers and states its bounds through rss_bound_mib():
# under ASan they become ASAN_RSS_FACTOR times as large plus
# ASAN_RSS_EXTRA_MIB per process (runtime and the small quarantine), still
# far below what allocating without bound reaches.
ASAN_QUARANTINE_MIB = 16
ASAN_RSS_FACTOR = 2
ASAN_RSS_EXTRA_MIB = 32
_sanitized = []


def sanitized():
    """True when the server under test is an AddressSanitizer build (its
    binary carries the ASan runtime's entry point)."""
    if not _sanitized:
        try:
            with open(server_binary(), 'rb') as f:
                _sanitized.append(not IS_REDIS and b'__asan_init' in f.read())
        except OSError:
            _sanitized.append(False)
    return _sanitized[0]


def asan_small_quarantine():
    """Servers started from now on keep ASAN_QUARANTINE_MIB of freed blocks
    in ASan's quarantine instead of its default 256 MiB (no effect on a
    plain build)."""
    if sanitized():
        os.environ['ASAN_OPTIONS'] = ':'.join(filter(None, [
            os.environ.get('ASAN_OPTIONS'),
            'quarantine_size_mb=%d' % ASAN_QUARANTINE_MIB]))


def rss_bound_mib(mib, processes=1):
    """A test's RSS bound of mib MiB over `processes` server processes, as
    it applies to the server under test (widened for an ASan build, see
    ASAN_RSS_FACTOR)."""
    if not sanitized():
        return mib
    return mib * ASAN_RSS_FACTOR + ASAN_RSS_EXTRA_MIB * processes


def wait_until(fn, deadline=10.0, what='condition', interval=0.01):
    """Poll fn until it returns a true value; return it. Fails after
    deadline seconds."""
    end = time.time() + deadline
    while True:
        try:
            v = fn()
        except (OSError, ConnectionClosed):
            v = None
        if v:
            return v
        if time.time() >= end:
            raise AssertionError('timed out after %.1fs waiting for %s'
                                 % (deadline, what))
        time.sleep(interval)
        interval = min(interval * 1.5, 0.1)


class Server:
    """The server under test, in its own temp dir, on a free port."""

    def __init__(self, workers=None, unixsocket=False, args=(), dir=None,
                 config_file=None, start=True):
        self.workers = workers
        self.want_unixsocket = unixsocket
        self.extra = list(args)
        self.owns_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix='larder-integ-')
        self.config_file = config_file
        self.proc = None
        self.port = None
        self.unixsocket = (os.path.join(self.dir, 'larder.sock')
                           if unixsocket else None)
        self.logfile = os.path.join(self.dir, 'log')
        self.errfile = os.path.join(self.dir, 'stderr')
        self.exitcode = None
        self._seen = set()
        self._scanned = {}
        if start:
            try:
                self.start()
            except BaseException:
                self.cleanup()
                raise

    def command_line(self):
        if IS_REDIS:
            argv = ['redis-server']
            if self.config_file:
                argv.append(self.config_file)
            argv += ['--port', str(self.port), '--save', '',
                     '--appendonly', 'no', '--dir', self.dir,
                     '--logfile', self.logfile]
        else:
            argv = [server_binary()]
            if self.config_file:
                argv.append(self.config_file)
            argv += ['--port', str(self.port), '--dir', self.dir,
                     '--logfile', self.logfile]
            if self.workers is not None:
                argv += ['--workers', str(self.workers)]
            argv += SERVER_ARGS
        if self.unixsocket:
            argv += ['--unixsocket', self.unixsocket]
        return argv + [str(a) for a in self.extra]

    def start(self):
        if self._seen and self.port:
            self._kill_strays()         # of the previous run, on its port
        last = None
        for attempt in range(3):
            self.port = free_port()
            self.exitcode = None
            err = open(self.errfile, 'ab')
            self.proc = subprocess.Popen(self.command_line(), cwd=self.dir,
                                         stdin=subprocess.DEVNULL,
                                         stdout=err, stderr=err)
            err.close()
            try:
                wait_until(self._ready, START_DEADLINE,
                           'server to answer PING')
                self._seen.update(proc_tree(self.proc.pid))
                return self
            except AssertionError as e:
                last = e
                if self.proc.poll() is None:
                    self.kill9_tree()
                    break
                self.exitcode = self.proc.returncode
                # Lost the port race? Try another port.
                if 'ddress already in use' not in self.log_text():
                    break
        raise AssertionError('server did not start: %s (exit %s)\n%s'
                             % (last, self.proc.poll(),
                                self.log_text()[-3000:]))

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError('server exited with %s'
                                 % self.proc.returncode)
        try:
            with Client(self.port, timeout=1.0) as c:
                r = c.call('PING')
                return r == 'PONG' or (isinstance(r, RespError) and
                                       r.message.startswith('NOAUTH'))
        except (OSError, ConnectionClosed, ValueError):
            return False

    def client(self, unix=False):
        return Client(self.unixsocket if unix else self.port)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def children(self):
        """PIDs of the master's live child processes."""
        kids = proc_children(self.proc.pid) if self.alive() else []
        self._seen.update(kids)
        return kids

    def _is_ours(self, pid):
        """pid is a process of this server (its command line names our
        port and dir), not an unrelated one that reused a PID."""
        cmd = proc_comm(pid)
        return ('--port %d ' % self.port) in cmd + ' ' and self.dir in cmd

    def _kill_strays(self):
        """SIGKILL children seen earlier that outlived the master (they
        should die with it; this keeps a broken build from leaking)."""
        for p in sorted(self._seen):
            if proc_alive(p) and self._is_ours(p):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._seen.clear()

    def wait_exit(self, deadline=STOP_DEADLINE):
        """Wait for the master to exit; return its exit code (None if it
        is still running at the deadline)."""
        try:
            self.exitcode = self.proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            return None
        self._wait_tree_gone()
        return self.exitcode

    def _wait_tree_gone(self):
        pids = set(getattr(self, '_tree', [])) | self._seen
        end = time.time() + STOP_DEADLINE
        while any(proc_alive(p) for p in pids) and time.time() < end:
            time.sleep(0.01)

    def stop(self):
        """SIGTERM, wait up to the deadline, then SIGKILL the tree.
        Returns the master's exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self._tree = proc_tree(self.proc.pid)
            self._seen.update(self._tree)
            self.proc.send_signal(signal.SIGTERM)
            if self.wait_exit() is None:
                self.kill9_tree()
        self.exitcode = self.proc.returncode
        return self.exitcode

    def kill9_tree(self):
        """SIGKILL the master and every descendant it started."""
        if self.proc is None:
            return
        pids = [self.proc.pid] + proc_tree(self.proc.pid)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        end = time.time() + STOP_DEADLINE
        while any(proc_alive(p) for p in pids[1:]) and time.time() < end:
            time.sleep(0.01)
        self.exitcode = self.proc.returncode

    def restart(self):
        """Stop (if running) and start again on the same dir."""
        self.stop()
        return self.start()

    def log_text(self):
        out = ''
        for f in (self.errfile, self.logfile):
            try:
                with open(f, errors='replace') as fh:
                    out += fh.read()
            except OSError:
                pass
        return out

    def scan_crashes(self):
        """Record crash/sanitizer lines written since the last scan."""
        for f in (self.errfile, self.logfile):
            try:
                with open(f, 'rb') as fh:
                    fh.seek(self._scanned.get(f, 0))
                    data = fh.read()
            except OSError:
                continue
            self._scanned[f] = self._scanned.get(f, 0) + len(data)
            text = data.decode(errors='replace')
            m = CRASH_RE.search(text)
            if m:
                start = text.rfind('\n', 0, m.start()) + 1
                _CRASHES.append('%s: %s' % (os.path.basename(f),
                                            text[start:start + 2000]))

    def cleanup(self):
        try:
            self.stop()
            self._kill_strays()
            self.scan_crashes()
        finally:
            if self.owns_dir:
                shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()


# --------------------------------------------------------------------------
# Assertions

def assert_eq(got, want, what=''):
    if got != want:
        raise AssertionError('%sexpected %s, got %s'
                             % (what + ': ' if what else '', short(want),
                                short(got)))


def assert_error(got, message):
    """got must be an error reply with exactly this text."""
    if not isinstance(got, RespError):
        raise AssertionError('expected error %r, got %s' % (message,
                                                             short(got)))
    if got.message != message:
        raise AssertionError('expected error %r, got error %r'
                             % (message, got.message))


def assert_error_prefix(got, prefix):
    if not isinstance(got, RespError) or not got.message.startswith(prefix):
        raise AssertionError('expected error starting %r, got %s'
                             % (prefix, short(got)))


def assert_ttl(c, key, secs):
    """TTL of key is secs, or secs - 1 if the machine was slow (TTL rounds
    to the nearest second)."""
    got = c.call('TTL', key)
    if got not in (secs, secs - 1):
        raise AssertionError('TTL %s: expected %d, got %s'
                             % (short(key, 60), secs, short(got)))


def assert_pttl(c, key, ms, slack=2000):
    """PTTL of key is in (ms - slack, ms]."""
    got = c.call('PTTL', key)
    if not isinstance(got, int) or not ms - slack < got <= ms:
        raise AssertionError('PTTL %s: expected about %d, got %s'
                             % (short(key, 60), ms, short(got)))


def assert_true(cond, what='condition'):
    if not cond:
        raise AssertionError(what)


# chi-square bound at p = 1e-6 (Wilson-Hilferty) for `df` degrees of
# freedom: a fair picker exceeds it once in a million runs.
CHI2_Z = 4.753


def assert_uniform(picks, cells, what='picks'):
    """picks (a list of values drawn from cells) hit every cell about
    equally often: a chi-square test at p = 1e-6."""
    counts = dict((c, 0) for c in cells)
    for p in picks:
        assert_true(p in counts, '%s: %r is not one of the cells' % (what, p))
        counts[p] += 1
    expect = len(picks) / len(counts)
    x = sum((n - expect) ** 2 / expect for n in counts.values())
    df = len(counts) - 1
    bound = df * (1 - 2 / (9 * df) + CHI2_Z * (2 / (9 * df)) ** 0.5) ** 3
    assert_true(x < bound, '%s not uniform: chi-square %.1f, bound %.1f '
                '(%d cells, %d draws)' % (what, x, bound, len(counts),
                                         len(picks)))


def short(v, n=300):
    r = repr(v)
    return r if len(r) <= n else r[:n] + '...(%d chars)' % len(r)


class Skip(Exception):
    pass


def larder_only():
    """Skip the current test when running against redis-server."""
    if IS_REDIS:
        raise Skip('larder only')


# --------------------------------------------------------------------------
# Runner

class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout('test exceeded its time limit (%ds unless it sets '
                   'its own)' % TEST_TIMEOUT)


class Shared:
    """The per-file server handed to tests that take an argument; restarted
    if a test stopped it; FLUSHALL before each test."""

    def __init__(self, **kw):
        self.kw = kw
        self.server = None

    def get(self):
        if self.server is None or not self.server.alive():
            if self.server is not None:
                self.server.cleanup()
            self.server = Server(**self.kw)
        with self.server.client() as c:
            r = c.call('FLUSHALL')
            if r != 'OK':
                raise AssertionError('FLUSHALL before test: %r' % (r,))
        return self.server

    def close(self):
        if self.server is not None:
            self.server.cleanup()
            self.server = None


def _run_one(fn, shared):
    """Run one test; return (outcome, detail) with outcome one of ok,
    skip, FAIL. A crash or sanitizer report in a server's output
    during the test makes it FAIL whatever the test itself said."""
    outcome, detail, exc = 'ok', '', None
    take_crash_reports()
    signal.alarm(getattr(fn, 'timeout', TEST_TIMEOUT))   # fn.timeout: its own
    try:
        if fn.__code__.co_argcount:
            fn(shared.get())
        else:
            fn()
    except Skip as e:
        outcome, detail = 'skip', str(e)
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        outcome, detail, exc = 'FAIL', str(e), e
    finally:
        signal.alarm(0)
    if shared.server is not None:
        shared.server.scan_crashes()
    crashes = take_crash_reports()
    if crashes:
        # Replace the shared server so that the rest of this crash (say
        # the master logging the worker's exit) is not blamed on the next
        # test.
        shared.close()
        crashes += take_crash_reports()
        if outcome != 'FAIL':
            outcome, detail = 'FAIL', ''
        detail += '\n     server crash or sanitizer report:\n' + \
            '\n'.join(crashes)
    return outcome, detail, exc


def main(namespace, **server_kw):
    """Run every test_* function of namespace in definition order. A test
    taking one argument gets the file's shared server."""
    tests = [(n, f) for n, f in namespace.items()
             if n.startswith('test_') and callable(f)]
    flt = os.environ.get('LARDER_TEST_FILTER')
    if flt:
        tests = [(n, f) for n, f in tests if flt in n]
    if not IS_REDIS and not os.access(server_binary(), os.X_OK):
        print('Bail out! no executable larder-server at %s (set '
              'LARDER_SERVER)' % server_binary())
        sys.exit(99)                    # automake: hard error
    shared = Shared(**server_kw)
    passed = failed = skipped = 0
    signal.signal(signal.SIGALRM, _alarm)
    print('# against %s' % ('redis-server' if IS_REDIS else server_binary()))
    try:
        for name, fn in tests:
            t0 = time.time()
            outcome, detail, exc = _run_one(fn, shared)
            took = time.time() - t0
            if outcome == 'ok':
                print('ok   %s (%.2fs)' % (name, took))
                passed += 1
            elif outcome == 'skip':
                print('skip %s: %s' % (name, detail))
                skipped += 1
            else:
                failed += 1
                print('FAIL %s (%.2fs): %s' % (name, took, detail))
                if exc is not None:
                    for fr in traceback.extract_tb(exc.__traceback__):
                        if fr.filename != __file__:
                            print('     at %s:%d: %s'
                                  % (os.path.basename(fr.filename),
                                     fr.lineno, fr.line))
                    if not isinstance(exc, AssertionError):
                        print('     %s: %s' % (type(exc).__name__, exc))
                if os.environ.get('LARDER_TEST_VERBOSE') and shared.server:
                    print(shared.server.log_text()[-3000:])
                # A broken shared server must not poison later tests.
                if shared.server is not None and not _healthy(shared.server):
                    shared.close()
            sys.stdout.flush()
    finally:
        signal.alarm(0)
        shared.close()
    summary = '%d passed, %d failed' % (passed, failed)
    if skipped:
        summary += ', %d skipped' % skipped
    print(summary)
    sys.exit(1 if failed else 0)


def _healthy(server):
    if not server.alive():
        return False
    try:
        with Client(server.port, timeout=2.0) as c:
            return c.call('PING') == 'PONG'
    except (OSError, ConnectionClosed, ValueError):
        return False
