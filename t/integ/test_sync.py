"""Checks the SYNC snapshot path: redis-cli --rdb against larder writes a file that redis-server 7.0 loads with every key equal (every type and encoding, several databases, TTLs); a client without "capa eof" gets the RDB as one bulk; the connection closes after the snapshot; REPLCONF's replies and SYNC inside MULTI match redis-server's."""

import os
import shutil
import socket
import subprocess
import tempfile

from dump_data import every_encoding, load, peer, snapshot
from larder_test import Client, assert_eq, assert_true, larder_only, main


def names():
    return [n for n, _ in every_encoding()]


def fill(c):
    load(c, every_encoding())
    for i, k in enumerate(names()):
        if i % 4 == 0:
            c.call('PEXPIRE', k, 3600000 + i)
    c.call('SELECT', 5)
    c.call('SET', 'five', 'x')
    c.call('HSET', 'h5', 'f', 'v')
    c.call('SELECT', 0)


def same(larder, redis_dir):
    """redis-server started on redis_dir (holding dump.rdb) has exactly
    larder's keys."""
    with peer(dir=redis_dir) as r, larder.client() as lc, r.client() as rc:
        for db in (0, 5):
            lc.call('SELECT', db)
            rc.call('SELECT', db)
            assert_eq(rc.call('DBSIZE'), lc.call('DBSIZE'), 'DBSIZE %d' % db)
            for k in lc.call('KEYS', '*'):
                assert_eq(snapshot(rc, k), snapshot(lc, k), '%r' % k)
                assert_eq(rc.call('PEXPIRETIME', k), lc.call('PEXPIRETIME', k),
                          'expire time of %r' % k)
        rc.call('SELECT', 1)
        assert_eq(rc.call('DBSIZE'), 0)


def test_redis_cli_rdb(larder):
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-sync-')
    try:
        with larder.client() as c:
            fill(c)
        path = os.path.join(d, 'dump.rdb')
        p = subprocess.run(['redis-cli', '-p', str(larder.port), '--rdb',
                            path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        out = p.stdout.decode(errors='replace')
        assert_eq(p.returncode, 0, out)
        assert_true('Transfer finished with success' in out, out)
        same(larder, d)
        # The server goes on serving, and can do it again.
        with larder.client() as c:
            assert_eq(c.call('PING'), 'PONG')
        p = subprocess.run(['redis-cli', '-p', str(larder.port),
                            '--functions-rdb', path + '.f'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=120)
        assert_eq(p.returncode, 0, p.stdout)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_sync_as_one_bulk(larder):
    """Without capa eof: "$<length>\\r\\n" and the RDB; then the server
    closes the connection."""
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-sync-')
    try:
        with larder.client() as c:
            fill(c)
        with Client(larder.port) as c:
            c.send_raw(b'SYNC\r\n')
            line = b''
            while not line.endswith(b'\r\n'):
                line += c.read_raw(1)
            assert_true(line.startswith(b'$'), repr(line))
            n = int(line[1:-2])
            data = c.read_raw(n)
            assert_eq(data[:9], b'REDIS0010')
            assert_true(c.is_closed(), 'closed after the snapshot')
        with open(os.path.join(d, 'dump.rdb'), 'wb') as f:
            f.write(data)
        same(larder, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_replconf_and_multi(larder):
    with peer() as r, larder.client() as lc, r.client() as rc:
        for args in (['REPLCONF'], ['REPLCONF', 'capa'],
                     ['REPLCONF', 'capa', 'eof'],
                     ['REPLCONF', 'capa', 'psync2', 'capa', 'eof'],
                     ['REPLCONF', 'rdb-only', 2], ['REPLCONF', 'rdb-only', 'x'],
                     ['REPLCONF', 'rdb-only', -1], ['REPLCONF', 'rdb-only', 1],
                     ['REPLCONF', 'listening-port', 'abc'],
                     ['REPLCONF', 'listening-port', '9223372036854775808'],
                     ['REPLCONF', 'listening-port', 6380],
                     ['REPLCONF', 'ip-address', 'a' * 300],
                     ['REPLCONF', 'ip-address', '10.0.0.1'],
                     ['REPLCONF', 'bogus', 1],
                     ['REPLCONF', 'rdb-only', 1, 'bogus', 2],
                     ['REPLCONF', 'rdb-filter-only', 'bogus'],
                     ['REPLCONF', 'rdb-filter-only', 'functions'],
                     ['REPLCONF', 'rdb-filter-only', ''],
                     ['MULTI'], ['SYNC'], ['EXEC'],
                     ['SYNC', 'extra']):
            assert_eq(lc.call(*args), rc.call(*args), 'reply to %r' % args)
        # ACK and GETACK from a client that is no replica: no reply at all.
        for c in (lc, rc):
            c.send('REPLCONF', 'ACK', 10)
            c.send('REPLCONF', 'GETACK', '*')
            assert_eq(c.call('PING'), 'PONG')


if __name__ == '__main__':
    main(globals())
