"""Checks a bulk move from Redis into larder key by key: redis-server 7.0 is filled with LARDER_BULK_KEYS keys (30000 by default; the few-million run is LARDER_BULK_KEYS=2500000) of every type in every encoding Redis gives them (strings: integers, short, LZF-compressible, 2 KB and 300 KB; HyperLogLogs sparse and dense; hashes, sets and sorted sets both small (listpack, intset) and large or with long elements (hashtable, skiplist); lists of one quicklist node and of many), spread over several databases, a fifth with a TTL; its RDB is imported with larder-server --import-rdb, and every key of every database compares equal through reading commands: the type, the whole value (GET, LRANGE, SMEMBERS, ZRANGE WITHSCORES, HGETALL), the expire time to the millisecond (PEXPIRETIME, and PTTL within the time the comparison takes), each HyperLogLog's PFCOUNT, and OBJECT ENCODING (against redis-server's after it reloads the same RDB: encodings of loaded keys). The times of each step are printed."""

import os
import random
import shutil
import subprocess
import tempfile
import time

from dump_data import peer
from larder_test import Server, assert_eq, assert_true, main, server_binary
from rdb_data import BATCH, compare, encode

KEYS = int(os.environ.get('LARDER_BULK_KEYS', '30000'))
DBS = 3
TOOL_TIMEOUT = 3600
TTL_MS = 3600000            # TTLs an hour or more away
# Every RARE-th key of a kind is large (another encoding in Redis).
RARE = 200
# Every HUGE-th string is a 300 KB value (spans in larder, LZF in the RDB).
HUGE = 50000
HUGE_BYTES = 300 * 1024
# A HyperLogLog of this many elements is dense in Redis (past
# hll-sparse-max-bytes); the small ones stay sparse.
HLL_DENSE = 3000
# Longer than the listpack value limits (64 bytes): hashtable, skiplist.
LONG_ELEMENT = 100

# The encodings each type must show on the Redis side (the data set is
# meant to cover them).
ENCODINGS = {
    'string': {'int', 'embstr', 'raw'}, 'list': {'quicklist'},
    'set': {'intset', 'hashtable'}, 'zset': {'listpack', 'skiplist'},
    'hash': {'listpack', 'hashtable'}, 'hll': {'sparse', 'dense'},
}


def commands(n, dbs, seed=14):
    """(db, command) for n keys: half strings, 5% HyperLogLogs, the rest
    lists, hashes, sets and sorted sets; a fifth get a TTL."""
    rng = random.Random(seed)
    for i in range(n):
        db = i % dbs
        k = b'k:%d' % i
        big = i % RARE == 0
        longel = i % RARE == 1
        kind = 0 if i % HUGE == 0 else rng.random()
        if kind < 0.5:
            v = rng.choice([b'%d' % rng.randint(-2 ** 63, 2 ** 63 - 1),
                            b'%d' % rng.randint(0, 9999), b'v%d' % i,
                            b'abcdefghij' * 10, rng.randbytes(60)])
            if i % 997 == 0:
                v = b'long value %d ' % i * 150
            if i % HUGE == 0:
                v = rng.randbytes(HUGE_BYTES // 2) * 2
            yield db, [b'SET', k, v]
        elif kind < 0.55:
            m = HLL_DENSE if big else rng.randint(1, 40)
            yield db, [b'PFADD', k] + [b'e%d' % rng.randint(0, 10 ** 9)
                                       for _ in range(m)]
        elif kind < 0.67:
            m = 1000 if big else rng.randint(1, 20)
            f = [b'f%d' % j for j in range(m)]
            if longel:
                f[0] = b'F' * LONG_ELEMENT
            yield db, [b'HSET', k] + [x for j in range(m)
                                      for x in (f[j], b'%d' % (i + j))]
        elif kind < 0.78:
            m = 5000 if big else rng.randint(1, 30)
            els = [b'e%d' % (j * i % 97) for j in range(m)]
            if longel:
                els = [b'L' * LONG_ELEMENT + e for e in els]
            yield db, [b'RPUSH', k] + els
        elif kind < 0.89:
            m = 2000 if big else rng.randint(1, 20)
            if rng.random() < 0.5:
                yield db, [b'SADD', k] + [b'%d' % (j * 3 - 30)
                                          for j in range(m)]
            else:
                yield db, [b'SADD', k] + [b'm%d' % j for j in range(m)]
        else:
            m = 1000 if big else rng.randint(1, 20)
            args = []
            for j in range(m):
                s = rng.choice([b'%d' % rng.randint(-50, 50),
                                b'%.17g' % rng.uniform(-1e6, 1e6),
                                b'inf', b'-inf', b'0.1'])
                args += [s, (b'Z' * LONG_ELEMENT if longel and j == 0
                             else b'z') + b'%d' % j]
            yield db, [b'ZADD', k] + args
        if rng.random() < 0.2:
            yield db, [b'PEXPIRE', k, b'%d' % (TTL_MS + i)]


def write(server, n, dbs):
    """Fill server through redis-cli --pipe."""
    out, cur = [], None
    for db, cmd in commands(n, dbs):
        if db != cur:
            out.append(encode([b'SELECT', b'%d' % db]))
            cur = db
        out.append(encode(cmd))
    p = subprocess.run(['redis-cli', '-p', str(server.port), '--pipe'],
                       input=b''.join(out), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=TOOL_TIMEOUT)
    text = p.stdout.decode(errors='replace')
    assert_eq(p.returncode, 0, 'redis-cli --pipe: ' + text)
    assert_true('errors: 0,' in text, 'redis-cli --pipe: ' + text)


def every_key(c):
    cursor, out = b'0', []
    while True:
        cursor, part = c.call('SCAN', cursor, 'COUNT', 5000)
        out += part
        if cursor == b'0':
            return sorted(set(out))


def compare_more(s, r, dbs, began):
    """What rdb_data.compare leaves out, for every key: OBJECT ENCODING,
    PTTL within the time since the comparison began, PFCOUNT of each
    HyperLogLog. Returns the encodings seen by type and the HLL count."""
    seen, hlls = {}, 0
    for db in range(dbs):
        with s.client() as a, r.client() as b:
            a.call('SELECT', db)
            b.call('SELECT', db)
            keys = every_key(b)
            for i in range(0, len(keys), BATCH):
                part = keys[i:i + BATCH]
                types = b.pipeline([[b'TYPE', k] for k in part])
                cmds = [[b'OBJECT', b'ENCODING', k] for k in part]
                for k, t, x, y in zip(part, types, a.pipeline(cmds),
                                      b.pipeline(cmds)):
                    assert_eq(x, y, 'OBJECT ENCODING of %s %r in db %d'
                              % (t, k, db))
                    seen.setdefault(t, set()).add(y.decode())
                ta = a.pipeline([[b'PTTL', k] for k in part])
                tb = b.pipeline([[b'PTTL', k] for k in part])
                slack = (time.time() - began) * 1000 + 1000
                for k, x, y in zip(part, ta, tb):
                    assert_true((x < 0 and x == y) or
                                (x > 0 and y > 0 and abs(x - y) <= slack),
                                'PTTL of %r in db %d: larder %d, redis %d'
                                % (k, db, x, y))
                heads = b.pipeline([[b'GETRANGE', k, 0, 4] for k, t
                                    in zip(part, types) if t == 'string'])
                strs = [k for k, t in zip(part, types) if t == 'string']
                hll = [k for k, h in zip(strs, heads) if h[:4] == b'HYLL']
                for h in heads:
                    if h[:4] == b'HYLL':
                        seen.setdefault('hll', set()).add(
                            ('dense', 'sparse')[h[4]])
                if hll:
                    cmds = [[b'PFCOUNT', k] for k in hll]
                    assert_eq(a.pipeline(cmds), b.pipeline(cmds),
                              'PFCOUNT in db %d' % db)
                    hlls += len(hll)
    return seen, hlls


def test_bulk_import_compares_key_by_key():
    d = tempfile.mkdtemp(prefix='larder-bulk-')
    try:
        with peer() as r:
            t0 = time.time()
            write(r, KEYS, DBS)
            t1 = time.time()
            with r.client() as c:
                c.settimeout(TOOL_TIMEOUT)
                assert_eq(c.call('SAVE'), 'OK')
            t2 = time.time()
            path = os.path.join(r.dir, 'dump.rdb')
            p = subprocess.run([server_binary(), '--dir', d, '--import-rdb',
                                path], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=TOOL_TIMEOUT)
            t3 = time.time()
            err = p.stderr.decode(errors='replace')
            assert_eq(p.returncode, 0, 'import exit code: ' + err)
            print('# %d keys in %d dbs, %.1f MB RDB: written in %.1fs, SAVE '
                  '%.1fs, import %.1fs (%s)'
                  % (KEYS, DBS, os.path.getsize(path) / 1e6, t1 - t0, t2 - t1,
                     t3 - t2, err.strip().splitlines()[-1]))
            with Server(dir=d, workers=2) as s:
                began = time.time()
                n, vals = compare(s, r, DBS, 1)
                assert_eq(n, KEYS, 'keys compared')
                assert_eq(vals, KEYS, 'values compared')
                # Encodings are those of the keys as loaded from the RDB
                # (a PFADD-made HLL is "raw" in Redis, the same bytes
                # loaded "embstr"): redis-server reloads its file first.
                with r.client() as c:
                    c.settimeout(TOOL_TIMEOUT)
                    assert_eq(c.call('DEBUG', 'RELOAD'), 'OK')
                seen, hlls = compare_more(s, r, DBS, began)
                print('# compared %d keys (type, value, PEXPIRETIME, PTTL, '
                      'OBJECT ENCODING) and %d PFCOUNTs in %.1fs'
                      % (n, hlls, time.time() - began))
                assert_true(hlls > 0, 'HyperLogLogs compared')
                for t, want in ENCODINGS.items():
                    assert_true(want <= seen.get(t, set()),
                                'encodings of %s: %s among %s'
                                % (t, want, seen.get(t)))
    finally:
        shutil.rmtree(d, ignore_errors=True)


# The harness's limit for this test: a few minutes for the default size
# (a sanitizer build, a loaded machine), more for the few-million run.
test_bulk_import_compares_key_by_key.timeout = 300 + KEYS // 500


if __name__ == '__main__':
    main(globals())
