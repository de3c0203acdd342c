"""Checks larder-server --import-rdb and --export-rdb against redis-server 7.0: an RDB saved by redis-server (every type, small and large, several databases, TTLs; LARDER_RDB_KEYS keys, 200000 by default) imports and every key compares equal (type and expire time of every key and the value of one in LARDER_RDB_SAMPLE, 8 by default, directly; every value through the export), larder's export loads into redis-server with the same DEBUG DIGEST as the original, an import replaces what the data directory held, and a bad file (truncated, bad CRC, bad type byte, a stream, a function, a database past `databases`) or a running server fails cleanly with the offset and reason and nothing imported, an import killed midway leaves the keys as they were; an RDB of Redis 6.x (version 9, the older encodings) imports as redis-server 7.0 loads it."""

import os
import shutil
import struct
import subprocess
import tempfile
import time

from dump_data import crc64, older_encodings, peer, rdb_len, rdb_str
from larder_test import (Server, assert_eq, assert_true, larder_only, main,
                         server_binary)
from rdb_data import compare, write

KEYS = int(os.environ.get('LARDER_RDB_KEYS', '200000'))
# Values compared directly: one key in SAMPLE (1: all). Every key's type
# and expire time is compared directly, and every value through the
# export's DEBUG DIGEST.
SAMPLE = int(os.environ.get('LARDER_RDB_SAMPLE', '8'))
DBS = 4
TOOL_TIMEOUT = 900
# The killed imports: an RDB of KILL_KEYS strings in two databases (about
# 3 s of an import's CPU), killed this long after each start.
KILL_KEYS = 600000
KILL_AFTER_S = (0.05, 0.3, 0.8)


def tool(dirname, *args):
    """Run larder-server in one of its RDB modes: (exit code, stderr)."""
    p = subprocess.run([server_binary(), '--dir', dirname] + list(args),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TOOL_TIMEOUT)
    return p.returncode, p.stderr.decode(errors='replace')


def saved_rdb(r):
    """SAVE on redis-server r; the path of its RDB."""
    with r.client() as c:
        c.settimeout(TOOL_TIMEOUT)      # millions of keys take a while
        assert_eq(c.call('SAVE'), 'OK')
    return os.path.join(r.dir, 'dump.rdb')


def digests(server, dbs):
    with server.client() as c:
        c.settimeout(600)               # a digest of everything takes time
        out = [c.call('DEBUG', 'DIGEST')]
        for db in range(dbs):
            c.call('SELECT', db)
            out.append(c.call('DBSIZE'))
        return out


def test_import_compare_export():
    """The big round trip: redis-server's RDB into larder, compared key by
    key; larder's export back into redis-server, same digest."""
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-rdb-')
    try:
        with peer() as r:
            t0 = time.time()
            write(r, KEYS, DBS)
            made = time.time() - t0
            path = saved_rdb(r)
            size = os.path.getsize(path)
            rc, err = tool(d, '--import-rdb', path)
            assert_eq(rc, 0, 'import exit code: ' + err)
            assert_true('imported ' in err and 'keys/s' in err, err)
            print('# %d keys, %.1f MB RDB (written in %.1fs); %s'
                  % (KEYS, size / 1e6, made, err.strip().splitlines()[-1]))
            with Server(dir=d, workers=2) as s:
                t0 = time.time()
                n, vals = compare(s, r, DBS, SAMPLE)
                print('# compared %d keys (types, expire times), %d values, '
                      'in %.1fs' % (n, vals, time.time() - t0))
                assert_eq(n, KEYS, 'keys compared')
                out = os.path.join(d, 'export.rdb')
                rc, err = tool(d, '--export-rdb', out)     # beside a server
                assert_eq(rc, 0, 'export exit code: ' + err)
                assert_true('exported %d keys' % n in err, err)
            back = tempfile.mkdtemp(prefix='larder-rdb-back-')
            shutil.copy(out, os.path.join(back, 'dump.rdb'))
            with peer(dir=back) as r2:
                assert_eq(digests(r2, DBS), digests(r, DBS),
                          'DEBUG DIGEST of the export loaded into redis')
            shutil.rmtree(back, ignore_errors=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fresh_rdb(r, cmds):
    with r.client() as c:
        c.call('FLUSHALL')
        c.call('FUNCTION', 'FLUSH')
        for cmd in cmds:
            c.call(*cmd)
    return saved_rdb(r)


def test_import_replaces_and_keeps_on_failure():
    """An import replaces the keys a data directory held; a failing one
    (each kind of bad file) leaves them all, with a reason naming the
    offset or the key."""
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-rdb-')
    work = tempfile.mkdtemp(prefix='larder-rdb-files-')
    try:
        with peer() as r:
            first = fresh_rdb(r, [['SET', 'old', 'x'], ['SELECT', 2],
                                  ['RPUSH', 'oldlist', 'a']])
            shutil.copy(first, os.path.join(work, 'first.rdb'))
            rc, err = tool(d, '--import-rdb', os.path.join(work, 'first.rdb'))
            assert_eq(rc, 0, err)
            good = fresh_rdb(r, [['SET', 'a', '1'], ['HSET', 'h', 'f', 'v'],
                                 ['SELECT', 1], ['SADD', 's', 'm'],
                                 ['SET', 'big', 'y' * 100000],
                                 ['ZADD', 'z', 1, 'q'],
                                 ['SET', 't', 'v', 'PX', 3600000]])
            data = open(good, 'rb').read()
            stream = fresh_rdb(r, [['SET', 'a', '1'],
                                   ['XADD', 'events', '*', 'f', 'v']])
            sdata = open(stream, 'rb').read()
            func = fresh_rdb(r, [['FUNCTION', 'LOAD',
                                  "#!lua name=lib\nredis.register_function("
                                  "'f', function() return 1 end)"],
                                 ['SET', 'a', '1']])
            fdata = open(func, 'rb').read()
            db9 = fresh_rdb(r, [['SELECT', 9], ['SET', 'a', '1']])
            d9 = open(db9, 'rb').read()
        body = b'REDIS0010\xfe\x00\x1e' + rdb_str(b'k') + rdb_str(b'v') + b'\xff'
        badtype = body + struct.pack('<Q', crc64(body))
        flipped = bytearray(data)
        flipped[len(data) // 2] ^= 0x55
        bad = {
            'truncated-half': (data[:len(data) // 2], 'offset'),
            'truncated-end': (data[:-1], 'offset'),
            'header-only': (data[:9], 'offset'),
            'empty': (b'', 'not an RDB file'),
            'not-rdb': (b'hello world, no RDB here', 'not an RDB file'),
            'bad-crc': (data[:-1] + bytes([data[-1] ^ 1]), 'checksum'),
            'flipped': (bytes(flipped), 'offset'),
            'bad-type': (badtype, 'offset 11: key "k" (db 0): unknown object '
                                  'type 30'),
            'stream': (sdata, 'key "events" (db 0): a stream'),
            'function': (fdata, 'function'),
            'version-11': (b'REDIS0011' + data[9:], 'RDB version 11'),
        }
        for name, (content, reason) in bad.items():
            path = os.path.join(work, name + '.rdb')
            with open(path, 'wb') as f:
                f.write(content)
            rc, err = tool(d, '--import-rdb', path)
            assert_eq(rc, 1, '%s: exit code (%s)' % (name, err))
            assert_true(reason in err and 'nothing was imported' in err,
                        '%s: %r' % (name, err))
        path = os.path.join(work, 'db9.rdb')
        with open(path, 'wb') as f:
            f.write(d9)
        rc, err = tool(d, '--databases', '4', '--import-rdb', path)
        assert_eq(rc, 1, err)
        assert_true('database 9' in err, err)
        # All of that left the first import's keys, and only them.
        with Server(dir=d) as s, s.client() as c:
            assert_eq(c.call('DBSIZE'), 1)
            assert_eq(c.call('GET', 'old'), b'x')
            c.call('SELECT', 2)
            assert_eq(c.call('LRANGE', 'oldlist', 0, -1), [b'a'])
            # A running server: the import refuses.
            path = os.path.join(work, 'good.rdb')
            with open(path, 'wb') as f:
                f.write(data)
            rc, err = tool(d, '--import-rdb', path)
            assert_eq(rc, 1, err)
            assert_true('in use by process' in err, err)
        # A good import now replaces them.
        rc, err = tool(d, '--import-rdb', path)
        assert_eq(rc, 0, err)
        assert_true('imported 6 keys' in err and 'replaced 2 keys' in err,
                    err)
        with Server(dir=d) as s, s.client() as c:
            assert_eq(c.call('EXISTS', 'old'), 0)
            assert_eq(c.call('GET', 'a'), b'1')
            c.call('SELECT', 1)
            assert_eq(c.call('DBSIZE'), 4)
            assert_eq(len(c.call('GET', 'big')), 100000)
            assert_true(c.call('PTTL', 't') > 3000000, 'TTL kept')
            c.call('SELECT', 2)
            assert_eq(c.call('DBSIZE'), 0, 'db 2 replaced too')
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def test_expired_and_empty_left_out():
    """Keys already expired when the import runs are left out, counted."""
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-rdb-')
    try:
        with peer() as r:
            path = fresh_rdb(r, [['SET', 'soon', 'x', 'PX', 300],
                                 ['SET', 'later', 'y', 'PX', 3600000]])
            time.sleep(0.4)
            rc, err = tool(d, '--import-rdb', path)
            assert_eq(rc, 0, err)
            assert_true('imported 1 keys' in err and '1 already expired' in
                        err, err)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def rdb_v9(expire_ms):
    """An RDB file as Redis 6.x writes it (version 9: AUX fields,
    RESIZEDB, millisecond expiries), holding every object of
    older_encodings() in db 0, every other one with a TTL, and a few in
    db 1."""
    aux = b''.join(b'\xfa' + rdb_str(k) + v for k, v in
                   [(b'redis-ver', rdb_str(b'6.2.14')),
                    (b'redis-bits', b'\xc0\x40'),
                    (b'ctime', b'\xc2' + struct.pack('<i', 1700000000)),
                    (b'used-mem', b'\xc2' + struct.pack('<i', 1000000)),
                    (b'aof-preamble', b'\xc0\x00')])
    bodies = older_encodings()
    out = b'REDIS0009' + aux + b'\xfe\x00\xfb' + rdb_len(len(bodies)) + \
        rdb_len(len(bodies) // 2)
    for i, (name, body) in enumerate(sorted(bodies.items())):
        if i % 2:
            out += b'\xfc' + struct.pack('<Q', expire_ms + i)
        out += body[:1] + rdb_str(name.encode()) + body[1:]
    out += b'\xfe\x01\xfb\x02\x00' + b'\x00' + rdb_str(b'a') + \
        rdb_str(b'in db 1') + b'\x0b' + rdb_str(b'ints') + \
        older_encodings()['intset16'][1:]
    out += b'\xff'
    return out + struct.pack('<Q', crc64(out))


def test_import_version9():
    """An RDB of Redis 6.x (version 9, every older encoding, TTLs, two
    databases) imports into larder as redis-server 7.0 loads it: every
    key, type, expire time and value equal."""
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-rdb-')
    rd = tempfile.mkdtemp(prefix='larder-rdb-v9-')
    try:
        data = rdb_v9(int(time.time() * 1000) + 3600 * 1000)
        with open(os.path.join(rd, 'dump.rdb'), 'wb') as f:
            f.write(data)
        rc, err = tool(d, '--import-rdb', os.path.join(rd, 'dump.rdb'))
        assert_eq(rc, 0, err)
        n = len(older_encodings()) + 2
        assert_true('imported %d keys' % n in err, err)
        with peer(dir=rd) as r, Server(dir=d) as s:
            with r.client() as c:
                assert_eq(c.call('DBSIZE'), n - 2, 'redis loaded the file')
            got, vals = compare(s, r, 2)
            assert_eq((got, vals), (n, n))
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(rd, ignore_errors=True)


def test_killed_import_leaves_the_keys():
    """An import killed at any point before its switch leaves the data
    directory's keys as they were (a server started after it serves
    them, and only them); the next import replaces exactly those keys,
    whatever the killed ones staged."""
    larder_only()
    d = tempfile.mkdtemp(prefix='larder-rdb-')
    work = tempfile.mkdtemp(prefix='larder-rdb-files-')
    try:
        with peer() as r:
            old = fresh_rdb(r, [['SET', 'old', 'x'], ['SELECT', 1],
                                ['RPUSH', 'oldlist', 'a', 'b']])
            shutil.copy(old, os.path.join(work, 'old.rdb'))
            new = fresh_rdb(r, [['SET', 'n1', 'y'], ['SELECT', 2],
                                ['SADD', 'n2', 'm'], ['SET', 'n3', 'z']])
            shutil.copy(new, os.path.join(work, 'new.rdb'))
            big = os.path.join(work, 'big.rdb')
            shutil.copy(fresh_rdb(r, [['DEBUG', 'POPULATE', KILL_KEYS // 2],
                                      ['SELECT', 3],
                                      ['DEBUG', 'POPULATE', KILL_KEYS // 2]]),
                        big)
        rc, err = tool(d, '--import-rdb', os.path.join(work, 'old.rdb'))
        assert_eq(rc, 0, err)
        for delay in KILL_AFTER_S:
            p = subprocess.Popen([server_binary(), '--dir', d,
                                  '--import-rdb', big],
                                 stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            try:
                time.sleep(delay)
                assert_true(p.poll() is None,
                            'the import was still running at %.1fs' % delay)
            finally:
                p.kill()
                p.wait()
            with Server(dir=d) as s, s.client() as c:
                sizes = []
                for db in range(DBS):
                    c.call('SELECT', db)
                    sizes.append(c.call('DBSIZE'))
                assert_eq(sizes, [1, 1, 0, 0], 'after a kill at %.1fs'
                          % delay)
                assert_eq(c.call('SELECT', 1), 'OK')
                assert_eq(c.call('LRANGE', 'oldlist', 0, -1), [b'a', b'b'])
        rc, err = tool(d, '--import-rdb', os.path.join(work, 'new.rdb'))
        assert_eq(rc, 0, err)
        assert_true('imported 3 keys' in err and 'replaced 2 keys' in err,
                    err)
        with Server(dir=d) as s, s.client() as c:
            sizes = []
            for db in range(DBS):
                c.call('SELECT', db)
                sizes.append(c.call('DBSIZE'))
            assert_eq(sizes, [1, 0, 2, 0], 'exactly the new file')
            c.call('SELECT', 2)
            assert_eq(c.call('SMEMBERS', 'n2'), [b'm'])
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


test_import_compare_export.timeout = 1800


if __name__ == '__main__':
    main(globals())
