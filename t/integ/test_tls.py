"""Checks TLS (tls-port beside the plain port, client certificates required, optional or not, a bad certificate and a plain client refused cleanly, tls-protocols, session resumption, redis-cli --tls, redis-py with ssl=True, non-blocking handshakes) with a throw-away CA made at test time, and the same replies and configuration as redis-server over TLS."""

import atexit
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time

from larder_test import (Client, ConnectionClosed, RespError, Server, Skip,
                         assert_eq, assert_error, assert_true, free_port,
                         larder_only, main, short, wait_until, IS_REDIS,
                         encode_command)

WORKERS = 2
DAYS = '2'


def openssl(*args, cwd):
    subprocess.run(['openssl'] + list(args), cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class CA:
    """A CA made now, a server certificate for 127.0.0.1 and localhost,
    a client certificate it signs, and one another CA signs."""

    def __init__(self):
        if not shutil.which('openssl'):
            raise Skip('openssl is not installed')
        self.dir = tempfile.mkdtemp(prefix='larder-tls-')
        d = self.dir
        with open(os.path.join(d, 'ext.cnf'), 'w') as f:
            f.write('subjectAltName=DNS:localhost,IP:127.0.0.1\n')
        for ca in ('ca', 'other'):
            openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt',
                    'ec_paramgen_curve:prime256v1', '-nodes',
                    '-keyout', ca + '.key', '-out', ca + '.crt', '-days', DAYS,
                    '-subj', '/CN=larder test %s' % ca, cwd=d)
        for name, ca, ext in (('server', 'ca', True), ('client', 'ca', False),
                              ('rogue', 'other', False)):
            openssl('req', '-newkey', 'ec', '-pkeyopt',
                    'ec_paramgen_curve:prime256v1', '-nodes', '-keyout',
                    name + '.key', '-out', name + '.csr', '-subj',
                    '/CN=' + ('localhost' if name == 'server' else name),
                    cwd=d)
            openssl('x509', '-req', '-in', name + '.csr', '-CA', ca + '.crt',
                    '-CAkey', ca + '.key', '-CAcreateserial', '-out',
                    name + '.crt', '-days', DAYS,
                    *(['-extfile', 'ext.cnf'] if ext else []), cwd=d)

    def path(self, name):
        return os.path.join(self.dir, name)

    def server_args(self, port, auth='yes', extra=()):
        return ['--tls-port', str(port),
                '--tls-cert-file', self.path('server.crt'),
                '--tls-key-file', self.path('server.key'),
                '--tls-ca-cert-file', self.path('ca.crt'),
                '--tls-auth-clients', auth] + list(extra)

    def context(self, cert='client', maximum=None):
        ctx = ssl.create_default_context(cafile=self.path('ca.crt'))
        if cert:
            ctx.load_cert_chain(self.path(cert + '.crt'),
                                self.path(cert + '.key'))
        if maximum:
            ctx.maximum_version = maximum
        return ctx

    def cleanup(self):
        pass    # one CA for the whole file (see the_ca)

    def remove(self):
        shutil.rmtree(self.dir, ignore_errors=True)


_CA = []


def the_ca():
    """The file's CA, made at its first use, removed at exit."""
    if not _CA:
        _CA.append(CA())
        atexit.register(_CA[0].remove)
    return _CA[0]


class TlsClient(Client):
    """The harness's RESP client over TLS."""

    def __init__(self, port, ctx, timeout=10.0):
        raw = socket.create_connection(('127.0.0.1', port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = ctx.wrap_socket(raw, server_hostname='localhost')
        self.buf = bytearray()
        self.pos = 0
        self.proto = 2


class RedisPeer(Server):
    def command_line(self):
        return (['redis-server', '--port', str(self.port), '--save', '',
                 '--appendonly', 'no', '--dir', self.dir, '--logfile',
                 self.logfile] + [str(a) for a in self.extra])


def refused(port, ctx, payload=b'PING\r\n'):
    """True if a TLS client with ctx cannot get a reply: the handshake
    fails, or the server closes before answering."""
    try:
        c = TlsClient(port, ctx, timeout=5)
    except (ssl.SSLError, OSError):
        return True
    try:
        c.send_raw(payload)
        r = c.read_reply()
        return False if r is not None else True
    except (ssl.SSLError, OSError, ConnectionClosed, ValueError):
        return True
    finally:
        c.close()


class Setup:
    """A CA and a server (larder unless cls) with TLS beside plain."""

    def __init__(self, auth='yes', extra=(), cls=Server, **kw):
        self.ca = the_ca()
        self.tls_port = free_port()
        try:
            args = self.ca.server_args(self.tls_port, auth, extra)
            self.srv = (cls(args=args, **kw) if cls is not Server
                        else Server(workers=WORKERS, args=args, **kw))
        except BaseException:
            self.ca.cleanup()
            raise

    def tls(self, cert='client', **kw):
        return TlsClient(self.tls_port, self.ca.context(cert, **kw))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.srv.cleanup()
        finally:
            self.ca.cleanup()


def test_tls_beside_plain():
    with Setup() as s:
        with s.tls() as t, s.srv.client() as p:
            assert_eq(t.call('PING'), 'PONG')
            assert_eq(t.call('SET', 'k', 'over tls'), 'OK')
            assert_eq(p.call('GET', 'k'), b'over tls')
            assert_eq(p.call('SET', 'k2', 'plain'), 'OK')
            assert_eq(t.call('GET', 'k2'), b'plain')
            r = t.hello(3)
            assert_eq(r[b'proto'], 3)
            assert_eq(t.call('HSET', 'h', 'f', 'v'), 1)
            assert_eq(t.call('HGETALL', 'h'), {b'f': b'v'})
            # Big values both ways (many TLS records, partial writes).
            big = os.urandom(4 << 20)
            assert_eq(t.call('SET', 'big', big), 'OK')
            assert_eq(t.call('GET', 'big'), big)
            assert_eq(p.call('STRLEN', 'big'), len(big))
            # A pipeline in one write, replies in order.
            cmds = [('INCR', 'n')] * 3000 + [('GET', 'n')]
            got = t.pipeline(cmds)
            assert_eq(got[-1], b'3000')
            assert_eq(got[:3], [1, 2, 3])


def test_client_certificates():
    with Setup(auth='yes') as s:
        assert_true(refused(s.tls_port, s.ca.context(None)),
                    'a client without a certificate is refused')
        assert_true(refused(s.tls_port, s.ca.context('rogue')),
                    'a certificate of another CA is refused')
        with s.tls() as t:
            assert_eq(t.call('PING'), 'PONG')
        # The server goes on serving.
        with s.tls() as t, s.srv.client() as p:
            assert_eq(t.call('PING'), 'PONG')
            assert_eq(p.call('PING'), 'PONG')
    with Setup(auth='optional') as s:
        with s.tls(cert=None) as t:
            assert_eq(t.call('PING'), 'PONG')
        with s.tls() as t:
            assert_eq(t.call('PING'), 'PONG')
        assert_true(refused(s.tls_port, s.ca.context('rogue')),
                    'optional: a bad certificate is still refused')
    # CAs from a directory (tls-ca-cert-dir, hashed names as OpenSSL
    # looks them up) instead of a file.
    ca = the_ca()
    cadir = os.path.join(ca.dir, 'cadir')
    if not os.path.isdir(cadir):
        os.mkdir(cadir)
        shutil.copy(ca.path('ca.crt'), cadir)
        openssl('rehash', cadir, cwd=ca.dir)
    port = free_port()
    args = [a for a in ca.server_args(port)]
    i = args.index('--tls-ca-cert-file')
    args[i:i + 2] = ['--tls-ca-cert-dir', cadir]
    srv = Server(workers=WORKERS, args=args)
    try:
        with TlsClient(port, ca.context()) as t:
            assert_eq(t.call('PING'), 'PONG')
        assert_true(refused(port, ca.context('rogue')),
                    'tls-ca-cert-dir: a certificate of another CA is refused')
    finally:
        srv.cleanup()
    with Setup(auth='no') as s:
        with s.tls(cert=None) as t:
            assert_eq(t.call('PING'), 'PONG')
            assert_eq(t.call('CONFIG', 'GET', 'tls-auth-clients'),
                      [b'tls-auth-clients', b'no'])


def test_plain_client_on_the_tls_port_is_refused_cleanly():
    with Setup() as s:
        for payload in (encode_command('PING'), b'PING\r\n', b'\x00' * 64,
                        b'GET / HTTP/1.1\r\nHost: x\r\n\r\n'):
            sock = socket.create_connection(('127.0.0.1', s.tls_port),
                                            timeout=5)
            sock.sendall(payload)
            data = b''
            try:
                while True:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except ConnectionResetError:
                pass
            sock.close()
            assert_true(b'PONG' not in data, 'a plain client gets no reply')
        with s.tls() as t, s.srv.client() as p:
            assert_eq(t.call('PING'), 'PONG')
            assert_eq(p.call('PING'), 'PONG')
        assert_true('killed by signal' not in s.srv.log_text(), 'no crash')


def test_handshakes_do_not_block_the_worker():
    # One worker: a client that opens the TLS port and stalls mid-way
    # must not hold up the others.
    ca = the_ca()
    port = free_port()
    srv = Server(workers=1, args=ca.server_args(port))
    try:
        stalled = []
        for _ in range(20):
            x = socket.create_connection(('127.0.0.1', port), timeout=5)
            x.sendall(b'\x16\x03\x01')   # the start of a ClientHello
            stalled.append(x)
        t0 = time.time()
        with TlsClient(port, ca.context()) as t:
            for i in range(100):
                assert_eq(t.call('PING'), 'PONG')
        assert_true(time.time() - t0 < 5, 'served beside stalled handshakes')
        for x in stalled:
            x.close()
    finally:
        srv.cleanup()
        ca.cleanup()


def test_tls_protocols():
    with Setup(extra=['--tls-protocols', 'TLSv1.3']) as s:
        assert_true(refused(s.tls_port,
                            s.ca.context(maximum=ssl.TLSVersion.TLSv1_2)),
                    'TLSv1.2 is refused when only TLSv1.3 is allowed')
        with s.tls() as t:
            assert_eq(t.call('PING'), 'PONG')
            assert_eq(t.sock.version(), 'TLSv1.3')
    with Setup(extra=['--tls-protocols', 'TLSv1.2',
                      '--tls-ciphers', 'ECDHE-ECDSA-AES128-GCM-SHA256',
                      '--tls-prefer-server-ciphers', 'yes']) as s:
        with s.tls() as t:
            assert_eq(t.call('PING'), 'PONG')
            assert_eq(t.sock.version(), 'TLSv1.2')
            assert_eq(t.sock.cipher()[0], 'ECDHE-ECDSA-AES128-GCM-SHA256')
    with Setup(extra=['--tls-ciphersuites', 'TLS_CHACHA20_POLY1305_SHA256'
                      ]) as s:
        with s.tls() as t:
            assert_eq(t.call('PING'), 'PONG')
            assert_eq(t.sock.cipher()[0], 'TLS_CHACHA20_POLY1305_SHA256')


def test_session_resumption_across_workers():
    larder_only()
    with Setup() as s:
        ctx = s.ca.context(maximum=ssl.TLSVersion.TLSv1_2)
        first = TlsClient(s.tls_port, ctx)
        assert_eq(first.call('PING'), 'PONG')
        session = first.sock.session
        first.close()
        reused = 0
        for _ in range(8):                # over both workers
            raw = socket.create_connection(('127.0.0.1', s.tls_port),
                                           timeout=5)
            t = ctx.wrap_socket(raw, server_hostname='localhost',
                                session=session)
            reused += t.session_reused
            t.close()
        assert_eq(reused, 8, 'sessions resumed')
    with Setup(extra=['--tls-session-caching', 'no']) as s:
        ctx = s.ca.context(maximum=ssl.TLSVersion.TLSv1_2)
        first = TlsClient(s.tls_port, ctx)
        assert_eq(first.call('PING'), 'PONG')
        session = first.sock.session
        first.close()
        raw = socket.create_connection(('127.0.0.1', s.tls_port), timeout=5)
        t = ctx.wrap_socket(raw, server_hostname='localhost', session=session)
        assert_true(not t.session_reused, 'no resumption without caching')
        t.close()


def test_redis_cli_tls():
    if not shutil.which('redis-cli'):
        raise Skip('redis-cli is not installed')
    with Setup() as s:
        base = ['redis-cli', '-p', str(s.tls_port), '--tls', '--cacert',
                s.ca.path('ca.crt'), '--cert', s.ca.path('client.crt'),
                '--key', s.ca.path('client.key')]
        def cli(*args):
            return subprocess.run(base + list(args), capture_output=True,
                                  timeout=20).stdout.strip()
        assert_eq(cli('PING'), b'PONG')
        assert_eq(cli('SET', 'cli', 'v'), b'OK')
        assert_eq(cli('GET', 'cli'), b'v')
        out = subprocess.run(['redis-cli', '-p', str(s.tls_port), '--tls',
                              '--cacert', s.ca.path('ca.crt'), 'PING'],
                             capture_output=True, timeout=20)
        assert_true(b'PONG' not in out.stdout,
                    'redis-cli without a client certificate is refused')


def test_redis_py_ssl():
    """redis-py (Debian's python3-redis, for the system's python3)."""
    py = '/usr/bin/python3'
    probe = subprocess.run([py, '-c', 'import redis'], capture_output=True)
    if probe.returncode:
        raise Skip('redis-py is not installed (apt-get install python3-redis)')
    with Setup() as s:
        script = (
            'import redis, sys\n'
            'r = redis.Redis(host="127.0.0.1", port=%d, ssl=True, '
            'ssl_ca_certs=%r, ssl_certfile=%r, ssl_keyfile=%r)\n'
            'assert r.ping() is True\n'
            'assert r.set("py", "v") is True\n'
            'assert r.get("py") == b"v"\n'
            'p = r.pipeline(); [p.incr("pn") for _ in range(500)]\n'
            'assert p.execute()[-1] == 500\n'
            'print("ok")\n' % (s.tls_port, s.ca.path('ca.crt'),
                               s.ca.path('client.crt'),
                               s.ca.path('client.key')))
        out = subprocess.run([py, '-c', script], capture_output=True,
                             timeout=60)
        assert_eq(out.stdout.strip(), b'ok', out.stderr.decode()[-2000:])


def start_fails(args, want):
    """A larder that must refuse to start, saying `want`."""
    srv = Server(workers=1, args=args, start=False)
    try:
        srv.port = free_port()
        out = subprocess.run(srv.command_line(), cwd=srv.dir,
                             capture_output=True, timeout=20)
        text = out.stderr.decode(errors='replace')
        try:
            text += open(srv.logfile, errors='replace').read()
        except OSError:
            pass
        assert_true(out.returncode != 0, 'started with %r' % (args,))
        assert_true(want in text, 'says %r: %r' % (want, text[-500:]))
    finally:
        srv.cleanup()


def test_bad_tls_configuration_stops_the_start():
    ca = the_ca()
    try:
        port = free_port()
        start_fails(['--tls-port', str(port), '--tls-cert-file',
                     ca.path('server.crt'), '--tls-key-file',
                     ca.path('server.key')],
                    'Either tls-ca-cert-file or tls-ca-cert-dir must be '
                    'specified when tls-cluster, tls-replication or '
                    'tls-auth-clients are enabled!')
        start_fails(ca.server_args(port, extra=['--tls-cert-file',
                                                '/nonexistent']),
                    'Failed to load certificate: /nonexistent')
        start_fails(ca.server_args(port, extra=['--tls-key-file',
                                                ca.path('client.key')]),
                    'Failed to load private key')
        start_fails(ca.server_args(port, extra=['--tls-protocols', 'SSLv3']),
                    "Invalid tls-protocols specified. Use a combination of "
                    "'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
        start_fails(ca.server_args(port, extra=['--tls-auth-clients',
                                                'maybe']),
                    'tls-auth-clients')
    finally:
        ca.cleanup()


def test_same_replies_and_settings_as_redis_over_tls():
    if not shutil.which('redis-server'):
        raise Skip('redis-server is not installed')
    with Setup() as a, Setup(cls=RedisPeer) as b:
        names = ['tls-port', 'tls-auth-clients', 'tls-protocols',
                 'tls-ciphers', 'tls-ciphersuites', 'tls-prefer-server-ciphers',
                 'tls-session-caching', 'tls-session-cache-size',
                 'tls-session-cache-timeout', 'tls-replication', 'tls-cluster',
                 'tls-dh-params-file', 'tls-ca-cert-dir', 'tls-key-file-pass']
        with a.tls() as x, b.tls() as y:
            for proto in (2, 3):
                if proto == 3:
                    x.hello(3)
                    y.hello(3)
                for cmd in [('PING',), ('SET', 'k', 'v'), ('GET', 'k'),
                            ('ECHO', 'x' * 100000), ('GET', 'nosuch'),
                            ('NOSUCH',), ('DEL', 'k')]:
                    assert_eq(x.call(*cmd), y.call(*cmd), short(cmd))
                for n in names:
                    got = x.call('CONFIG', 'GET', n)
                    want = y.call('CONFIG', 'GET', n)
                    if n == 'tls-port':
                        assert_eq(len(got), len(want), n)
                    else:
                        assert_eq(got, want, n)


def tls_pid(s):
    """The pid of the worker a new TLS connection lands on."""
    with s.tls() as t:
        info = t.call('INFO', 'server').decode()
    for line in info.split('\r\n'):
        if line.startswith('worker_process_id:'):
            return int(line.split(':')[1])
    raise AssertionError('no worker_process_id in INFO')


def test_tls_listeners_follow_the_worker_pool():
    """WORKERS n on the admin socket (issue 15): a worker the pool grows
    by gets its own TLS listeners too, and a removed worker takes its TLS
    listeners with it (new TLS connections never queue on a socket nobody
    serves)."""
    larder_only()
    with Setup(auth='no') as s:
        admin = Client(os.path.join(s.srv.dir, 'larder-admin.sock'))
        try:
            assert_eq(admin.call('WORKERS', '4'), 'OK', 'grow to 4')
            pids = set()
            end = time.time() + 30
            while len(pids) < 4 and time.time() < end:
                pids.add(tls_pid(s))
            assert_eq(len(pids), 4, 'TLS connections reach the new workers')
            assert_eq(admin.call('WORKERS', '1'), 'OK', 'shrink to 1')
            def gone():
                return sum(1 for p in pids if os.path.exists('/proc/%d' % p)
                           and open('/proc/%d/stat' % p).read().split()[2]
                           != 'Z') == 1
            wait_until(gone, 30, 'three workers gone')
            left = [p for p in pids if os.path.exists('/proc/%d' % p)]
            for _ in range(30):
                assert_true(tls_pid(s) in left, 'served by the worker left')
            with s.srv.client() as c:
                assert_eq(c.call('PING'), 'PONG', 'plain port too')
            assert_eq(admin.call('WORKERS', '3'), 'OK', 'grow again')
            pids = set()
            end = time.time() + 30
            while len(pids) < 3 and time.time() < end:
                pids.add(tls_pid(s))
            assert_eq(len(pids), 3, 'TLS on the regrown pool')
        finally:
            admin.close()


if __name__ == '__main__':
    main(globals())
