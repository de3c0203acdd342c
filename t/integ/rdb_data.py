"""rdb_data - a seeded data set of every type across several databases,
with TTLs, for the RDB tests: written to a server through pipelines, and
two servers compared key by key (value and PEXPIRETIME) in batches."""

import random
import subprocess
import zlib

from larder_test import RespError, assert_eq, assert_true

BATCH = 500


def commands(n, dbs=4, seed=7):
    """(db, command) for n keys: 60% strings (integers, short, 100-byte
    compressible, a few 2 KB), 10% each hashes, lists, sets, sorted sets
    (small; every 500th large), 20% with a TTL an hour or more away."""
    rng = random.Random(seed)
    for i in range(n):
        db = i % dbs
        k = b'key:%d' % i
        big = i % 500 == 0
        kind = rng.random()
        if kind < 0.6:
            v = rng.choice([b'%d' % rng.randint(-10 ** 6, 10 ** 6),
                            b'v%d' % i, b'abcdefghij' * 10,
                            rng.randbytes(40)])
            if i % 997 == 0:
                v = b'long value %d ' % i * 150
            yield db, [b'SET', k, v]
        elif kind < 0.7:
            m = 1000 if big else rng.randint(1, 20)
            yield db, [b'HSET', k] + [x for j in range(m)
                                      for x in (b'f%d' % j, b'%d' % (i + j))]
        elif kind < 0.8:
            m = 5000 if big else rng.randint(1, 30)
            yield db, [b'RPUSH', k] + [b'e%d' % (j * i % 97)
                                       for j in range(m)]
        elif kind < 0.9:
            m = 2000 if big else rng.randint(1, 20)
            if rng.random() < 0.5:
                yield db, [b'SADD', k] + [b'%d' % (j * 3) for j in range(m)]
            else:
                yield db, [b'SADD', k] + [b'm%d' % j for j in range(m)]
        else:
            m = 1000 if big else rng.randint(1, 20)
            yield db, [b'ZADD', k] + [x for j in range(m)
                                      for x in (b'%d' % rng.randint(-50, 50),
                                                b'z%d' % j)]
        if rng.random() < 0.2:
            yield db, [b'PEXPIRE', k, b'%d' % (3600000 + i)]


def encode(cmd):
    return b'*%d\r\n' % len(cmd) + b''.join(
        b'$%d\r\n%s\r\n' % (len(a), a) for a in cmd)


def write(server, n, dbs=4, seed=7):
    """Write the data set through redis-cli --pipe (fast: no replies to
    parse here); return how many keys each db got."""
    per_db = [0] * dbs
    out = []
    cur = None
    for db, cmd in commands(n, dbs, seed):
        if db != cur:
            out.append(encode([b'SELECT', b'%d' % db]))
            cur = db
        if cmd[0] != b'PEXPIRE':
            per_db[db] += 1
        out.append(encode(cmd))
    p = subprocess.run(['redis-cli', '-p', str(server.port), '--pipe'],
                       input=b''.join(out), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=600)
    text = p.stdout.decode(errors='replace')
    assert_eq(p.returncode, 0, 'redis-cli --pipe: ' + text)
    assert_true('errors: 0,' in text, 'redis-cli --pipe: ' + text)
    return per_db


def flush(c, cmds):
    for r in c.pipeline(cmds):
        if isinstance(r, RespError):
            raise AssertionError('writing the data set: %r' % r)
    del cmds[:]


def value_cmd(t, k):
    return {'string': [b'GET', k], 'list': [b'LRANGE', k, 0, -1],
            'set': [b'SMEMBERS', k],
            'zset': [b'ZRANGE', k, 0, -1, b'WITHSCORES'],
            'hash': [b'HGETALL', k]}[t]


def normal(t, v):
    if t == 'set':
        return sorted(v)
    if t == 'hash':
        return sorted(zip(v[0::2], v[1::2]))
    return v


def keys_of_type(c, t):
    cursor, out = b'0', []
    while True:
        cursor, part = c.call('SCAN', cursor, 'TYPE', t, 'COUNT', 5000)
        out += part
        if cursor == b'0':
            return sorted(set(out))


def sampled(key, sample):
    return sample <= 1 or zlib.crc32(key) % sample == 0


def compare(a, b, dbs, sample=1):
    """Every key of every db of a has b's type and PEXPIRETIME, and the
    value of every key (or of one in `sample`, picked by a hash of its
    name) equals b's; the databases have the same sizes. Returns how
    many keys, and how many values, were compared."""
    total = values = 0
    for db in range(dbs):
        with a.client() as ca, b.client() as cb:
            ca.call('SELECT', db)
            cb.call('SELECT', db)
            assert_eq(ca.call('DBSIZE'), cb.call('DBSIZE'), 'DBSIZE %d' % db)
            for t in ('string', 'list', 'set', 'zset', 'hash'):
                keys = keys_of_type(cb, t)
                assert_eq(keys_of_type(ca, t), keys, '%s keys of db %d'
                          % (t, db))
                for i in range(0, len(keys), BATCH):
                    part = keys[i:i + BATCH]
                    ea = ca.pipeline([[b'PEXPIRETIME', k] for k in part])
                    eb = cb.pipeline([[b'PEXPIRETIME', k] for k in part])
                    assert_eq(ea, eb, 'expire times in db %d' % db)
                    part = [k for k in part if sampled(k, sample)]
                    if not part:
                        continue
                    if t == 'string':
                        va, vb = [ca.call('MGET', *part)], \
                            [cb.call('MGET', *part)]
                    else:
                        va = ca.pipeline([value_cmd(t, k) for k in part])
                        vb = cb.pipeline([value_cmd(t, k) for k in part])
                        va = [normal(t, v) for v in va]
                        vb = [normal(t, v) for v in vb]
                    assert_eq(va, vb, '%s values of db %d' % (t, db))
                    values += len(part)
                total += len(keys)
    return total, values
