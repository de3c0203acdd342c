"""Checks larder behind twemproxy (Debian's nutcracker) with consistent hashing: three larder instances and a nutcracker with ketama on loopback; larder-bench through the proxy (SET, GET, MGET, pipelines) with no error; every key lands on the shard ketama puts it on (computed here as twemproxy computes it); MGET across shards; and with one instance killed, its keys get the proxy's documented error while the others' keys are served."""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from larder_test import (Client, RespError, Server, Skip, assert_eq,
                         assert_true, free_port, larder_only, main,
                         server_binary, wait_until)

NSHARDS = 3
POINTS = 160        # ketama points per server of equal weight
HASHES = 4          # points per md5
NKEYS = 600

# What nutcracker answers for a key whose server is down (auto_eject_hosts
# off): the connection error as an error reply (README's "Scale-out").
DOWN_ERRORS = ('ERR Connection refused',)


def md5_32(key):
    """twemproxy's md5 key hash: the digest's first four bytes, little
    endian (its fnv1a_64, in 32-bit arithmetic, puts keys that differ in
    their last bytes on a narrow arc: two of three shards here)."""
    d = hashlib.md5(key).digest()
    return (d[3] << 24) | (d[2] << 16) | (d[1] << 8) | d[0]


def continuum(names):
    """The ketama circle: (point, server index), sorted."""
    pts = []
    per = POINTS  # equal weights: 160 each
    for i, name in enumerate(names):
        for p in range(per // HASHES):
            d = hashlib.md5(('%s-%d' % (name, p)).encode()).digest()
            for x in range(HASHES):
                v = (d[3 + 4 * x] << 24) | (d[2 + 4 * x] << 16) | \
                    (d[1 + 4 * x] << 8) | d[4 * x]
                pts.append((v, i))
    pts.sort()
    return pts


def shard_of(circle, key):
    h = md5_32(key.encode())
    lo, hi = 0, len(circle)
    while lo < hi:
        mid = (lo + hi) // 2
        if circle[mid][0] < h:
            lo = mid + 1
        else:
            hi = mid
    return circle[lo % len(circle)][1]


class Proxy:
    def __init__(self, servers, dir_):
        if not shutil.which('nutcracker'):
            raise Skip('nutcracker not installed (apt-get install nutcracker)')
        self.port = free_port()
        self.names = ['s%d' % i for i in range(len(servers))]
        conf = os.path.join(dir_, 'nutcracker.yml')
        with open(conf, 'w') as f:
            f.write('larder:\n'
                    '  listen: 127.0.0.1:%d\n'
                    '  hash: md5\n'
                    '  distribution: ketama\n'
                    '  redis: true\n'
                    '  auto_eject_hosts: false\n'
                    '  timeout: 2000\n'
                    '  servers:\n' % self.port)
            for name, s in zip(self.names, servers):
                f.write('   - 127.0.0.1:%d:1 %s\n' % (s.port, name))
        self.log = os.path.join(dir_, 'nutcracker.log')
        self.proc = subprocess.Popen(
            ['nutcracker', '-c', conf, '-o', self.log, '-s',
             str(free_port()), '-a', '127.0.0.1', '-p',
             os.path.join(dir_, 'nutcracker.pid')],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        def up():
            with Client(self.port, timeout=2) as c:
                return c.call('SET', 'probe', '1') == 'OK'
        wait_until(up, 10, 'nutcracker to serve')

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def bench(port, *args):
    binary = os.path.join(os.path.dirname(server_binary()), 'larder-bench')
    p = subprocess.run([binary, '-p', str(port), '--json', '--quiet',
                        '--warmup', '0'] + [str(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    assert_eq(p.returncode, 0, 'larder-bench %s: %s' % (args, p.stderr[-500:]))
    return json.loads(p.stdout)


def check_report(report, what):
    """A larder-bench report with no error and some throughput."""
    assert_true('errors_total' in report and 'ops_per_sec' in report,
                'a larder-bench report: %r' % sorted(report))
    assert_eq(report['errors_total'], 0, 'errors %s' % what)
    assert_true(report['ops_per_sec'] > 0, 'throughput %s' % what)


def test_three_shards_behind_nutcracker():
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-proxy-')
    servers, proxy = [], None
    try:
        servers = [Server(workers=1) for _ in range(NSHARDS)]
        proxy = Proxy(servers, d)
        circle = continuum(proxy.names)
        # larder-bench through the proxy: SET, GET, MGET, pipelined.
        for args in (('--workload', 'set', '--keyspace', 2000),
                     ('--workload', 'get', '--keyspace', 2000),
                     ('--workload', 'mget', '--batch', 10, '--keyspace', 2000),
                     ('--workload', 'set', '--pipeline', 16),
                     ('--workload', 'get', '--pipeline', 16)):
            r = bench(proxy.port, '--requests', 3000, '--connections', 8,
                      *args)
            check_report(r, 'through the proxy %s' % (args,))
        # Every key on the shard ketama says.
        with Client(proxy.port) as c:
            keys = ['user:%d' % i for i in range(NKEYS)]
            for k in keys:
                assert_eq(c.call('SET', k, 'v-' + k), 'OK')
            got = c.call('MGET', *keys)
            assert_eq(got, [('v-' + k).encode() for k in keys], 'MGET')
        direct = [s.client() for s in servers]
        try:
            per = [0] * NSHARDS
            for k in keys:
                want = shard_of(circle, k)
                per[want] += 1
                for i, c in enumerate(direct):
                    v = c.call('GET', k)
                    assert_eq(v, ('v-' + k).encode() if i == want else None,
                              '%s on shard %d (ketama says %d)' % (k, i, want))
            assert_true(min(per) > NKEYS // NSHARDS // 3,
                        'keys spread over the shards: %r' % per)
        finally:
            for c in direct:
                c.close()
        # One instance down: its keys fail with the proxy's error, the
        # others' are served.
        dead = 1
        servers[dead].stop()
        with Client(proxy.port) as c:
            failed = served = 0
            for k in keys[:120]:
                r = c.call('GET', k)
                if shard_of(circle, k) == dead:
                    assert_true(isinstance(r, RespError) and
                                r.message in DOWN_ERRORS,
                                '%s on the dead shard: %r' % (k, r))
                    failed += 1
                else:
                    assert_eq(r, ('v-' + k).encode(), k + ' still served')
                    served += 1
            assert_true(failed > 0 and served > 0, (failed, served))
            live = [k for k in keys if shard_of(circle, k) != dead][:50]
            assert_eq(c.call('MGET', *live),
                      [('v-' + k).encode() for k in live],
                      'MGET over the live shards')
            r = c.call('MGET', *keys[:50])
            assert_true(isinstance(r, RespError), 'MGET touching the dead '
                        'shard fails whole: %r' % (r,))
    finally:
        if proxy:
            proxy.stop()
        for s in servers:
            s.cleanup()
        shutil.rmtree(d, ignore_errors=True)


test_three_shards_behind_nutcracker.timeout = 240


if __name__ == '__main__':
    main(globals())
