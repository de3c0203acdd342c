"""Checks DUMP and RESTORE against redis-server 7.0: every type in every encoding (small, past each compact limit, integers, binary, long LZF strings) moves both ways and compares equal, Redis gets back the encodings it would have chosen, DUMP bytes equal Redis's where they are deterministic, older encodings (ziplist, zipmap, quicklist v1, text-score zsets) restore alike, and RESTORE's options, TTLs, numeric edge arguments, bad payloads and MULTI behaviour give Redis's exact replies."""

import os
import random
import struct

from dump_data import (dump_frame, every_encoding, intset, load,
                       older_encodings, peer, rdb_len, rdb_str, snapshot,
                       ttl_class, uncompressed)
from larder_test import (RespError, assert_eq, assert_true, larder_only,
                         main)

NUMERIC_EDGES = [b'0', b'-1', b'1', b'2147483647', b'2147483648',
                 b'-2147483648', b'-2147483649', b'9223372036854775807',
                 b'-9223372036854775808', b'9223372036854775808',
                 b'18446744073709551616', b'nan', b'inf', b'-inf', b'abc',
                 b'', b'1.5', b' 1', b'0x10', b'255', b'256']


def names(prefix=b''):
    return [prefix + n for n, _ in every_encoding()]


def test_larder_dump_restores_in_redis(larder):
    """larder's DUMP of every key RESTOREs into redis-server, equal, and
    redis-server gives it the encoding it gives the same data itself."""
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(lc, every_encoding())
        load(rc, every_encoding())
        rc.call('SELECT', 1)
        for k in names():
            payload = lc.call('DUMP', k)
            assert_true(isinstance(payload, bytes), 'DUMP %r' % k)
            assert_eq(rc.call('RESTORE', k, 0, payload), 'OK',
                      'RESTORE of larder\'s %r into redis' % k)
            got = snapshot(rc, k)
            rc.call('SELECT', 0)
            want = snapshot(rc, k)
            enc = rc.call('OBJECT', 'ENCODING', k)
            rc.call('SELECT', 1)
            assert_eq(got, want, 'value of %r' % k)
            assert_eq(rc.call('OBJECT', 'ENCODING', k), enc,
                      'encoding of %r' % k)
            assert_eq(snapshot(lc, k), want, 'larder\'s own %r' % k)


def test_redis_dump_restores_in_larder(larder):
    """redis-server's DUMP of every key RESTOREs into larder, equal; and
    larder's DUMP of that key goes back into redis-server, equal."""
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(rc, every_encoding())
        for k in names():
            payload = rc.call('DUMP', k)
            assert_eq(lc.call('RESTORE', k, 0, payload), 'OK',
                      'RESTORE of redis\'s %r into larder' % k)
            want = snapshot(rc, k)
            assert_eq(snapshot(lc, k), want, 'value of %r' % k)
            back = lc.call('DUMP', k)
            rc.call('SELECT', 2)
            assert_eq(rc.call('RESTORE', k, 0, back), 'OK', 'round trip')
            assert_eq(snapshot(rc, k), want, 'round trip of %r' % k)
            rc.call('SELECT', 0)


def test_dump_bytes_equal_redis(larder):
    """Where Redis's bytes do not depend on its hash tables, larder's DUMP
    is the same byte for byte; and where only LZF differs (two
    compressors find different matches), the same once decompressed:
    the same type byte, listpack, intset and quicklist node layout."""
    same = [b'str:int', b'str:negint', b'str:int32', b'str:notint',
            b'str:empty', b'str:short', b'str:bin', b'str:random',
            b'list:small', b'set:intset16', b'hash:64']
    same_uncompressed = [b'str:lzf', b'str:big', b'str:21', b'list:ints',
                         b'list:nodes', b'list:bigelem', b'set:intset',
                         b'set:intset512', b'zset:small', b'zset:128',
                         b'zset:longmember', b'zset:129', b'zset:big']
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(lc, every_encoding())
        load(rc, every_encoding())
        for k in same:
            assert_eq(lc.call('DUMP', k), rc.call('DUMP', k), 'DUMP %r' % k)
        for k in same_uncompressed:
            assert_eq(uncompressed(lc.call('DUMP', k)),
                      uncompressed(rc.call('DUMP', k)),
                      'DUMP %r decompressed' % k)
        assert_eq(lc.call('DUMP', 'nosuchkey'), None, 'missing key')
        assert_eq(rc.call('DUMP', 'nosuchkey'), None, 'missing key (redis)')


def both(lc, rc, *args):
    """The same command on both; the replies must be equal."""
    a, b = lc.call(*args), rc.call(*args)
    assert_eq(a, b, 'reply to %r' % (args[:3],))
    return a


def test_restore_options_and_ttls(larder):
    """RESTORE's options and numeric arguments, Redis's exact replies."""
    with peer() as r, larder.client() as lc, r.client() as rc:
        p = rc.call('DUMP', 'x') or None
        rc.call('SET', 'src', 'value')
        p = rc.call('DUMP', 'src')
        assert_eq(lc.call('SET', 'src', 'value'), 'OK')
        assert_eq(lc.call('DUMP', 'src'), p, 'same payload')
        for ttl in NUMERIC_EDGES:
            for extra in ([], [b'ABSTTL']):
                both(lc, rc, 'RESTORE', 'k', ttl, p, 'REPLACE', *extra)
                assert_eq(ttl_class(lc, 'k'), ttl_class(rc, 'k'),
                          'TTL after RESTORE ttl=%r %r' % (ttl, extra))
                lc.call('DEL', 'k')     # may have expired on one already
                rc.call('DEL', 'k')
        for opt in (b'IDLETIME', b'FREQ'):
            for v in NUMERIC_EDGES:
                both(lc, rc, 'RESTORE', 'k', 0, p, 'REPLACE', opt, v)
                both(lc, rc, 'EXISTS', 'k')
        cases = [
            ['RESTORE', 'src', 0, p],                       # BUSYKEY
            ['RESTORE', 'src', 'abc', p],                   # BUSYKEY first
            ['RESTORE', 'src', 0, p, 'FREQ', 999],          # options first
            ['RESTORE', 'k', 0, p, 'IDLETIME', 5, 'FREQ', 3],
            ['RESTORE', 'k', 0, p, 'FREQ', 3, 'IDLETIME', 5],
            ['RESTORE', 'k', 0, p, 'IDLETIME'],
            ['RESTORE', 'k', 0, p, 'FREQ'],
            ['RESTORE', 'k', 0, p, 'BOGUS'],
            ['RESTORE', 'k', 0, p, 'replace', 'absttl', 'idletime', 10],
            ['RESTORE', 'k', 1, p, 'ABSTTL'],               # long past
            ['EXISTS', 'k'],
            ['RESTORE', 'src', 1, p, 'ABSTTL', 'REPLACE'],  # deletes src
            ['EXISTS', 'src'],
            ['RESTORE', 'k2', 100000, p],
            ['RESTORE', 'k2', 0, p, 'REPLACE'],             # TTL gone
            ['PTTL', 'k2'],
            ['RESTORE', 'k3', 0, p, 'FREQ', 0],
            ['RESTORE', 'k4', 0, p, 'IDLETIME', 0],
            ['RESTORE', 'k'],
            ['RESTORE', 'k', 0],
            ['DUMP'],
            ['DUMP', 'a', 'b'],
        ]
        for cmd in cases:
            both(lc, rc, *cmd)
        # Absolute TTL in the future, relative TTL: PTTLs agree.
        at = (int(rc.call('TIME')[0]) + 3600) * 1000
        both(lc, rc, 'RESTORE', 'k5', at, p, 'ABSTTL')
        close_pttl(lc, rc, 'k5')
        both(lc, rc, 'RESTORE', 'k6', 7200000, p)
        close_pttl(lc, rc, 'k6')
        for proto in (3,):
            lc.hello(proto)
            rc.hello(proto)
            both(lc, rc, 'DUMP', 'k6')
            both(lc, rc, 'DUMP', 'nosuch')
            both(lc, rc, 'RESTORE', 'k6', 0, p)
            lc.hello(2)
            rc.hello(2)


def close_pttl(lc, rc, key, slack=5000):
    a, b = lc.call('PTTL', key), rc.call('PTTL', key)
    assert_true(a > 0 and abs(a - b) < slack,
                'PTTL of %r: larder %r, redis %r' % (key, a, b))


def corrupt(body):
    return dump_frame(body)


def test_restore_bad_payloads(larder):
    """Payloads that are not what they claim: Redis's exact errors, and
    nothing written."""
    with peer() as r, larder.client() as lc, r.client() as rc:
        good = dump_frame(b'\x00' + rdb_str(b'v'))
        bad_crc = good[:-1] + bytes([good[-1] ^ 1])
        v11 = dump_frame(b'\x00' + rdb_str(b'v'), version=11)
        v9 = dump_frame(b'\x00' + rdb_str(b'v'), version=9)
        zero_crc = good[:-8] + b'\x00' * 8
        lp_bad = b'\x10' + rdb_str(b'\x0a\x00\x00\x00\x01\x00\x81a\x02\xfe')
        cases = [
            b'', b'x' * 9, good[:-1], bad_crc, v11, zero_crc,
            corrupt(b'\x00' + rdb_len(10) + b'abc'),         # short string
            corrupt(b'\x1e' + rdb_str(b'v')),                # type 30
            corrupt(b'\x02' + rdb_len(2) + rdb_str(b'a')),   # set: 1 of 2
            corrupt(b'\x02' + rdb_len(2) + rdb_str(b'a') + rdb_str(b'a')),
            corrupt(b'\x04' + rdb_len(2) + rdb_str(b'f') + rdb_str(b'1') +
                    rdb_str(b'f') + rdb_str(b'2')),          # taken
            corrupt(b'\x04' + rdb_len(512) + b''.join(
                rdb_str(b'f%d' % min(i, 510)) + rdb_str(b'v')
                for i in range(512))),                       # taken
            corrupt(b'\x04' + rdb_len(513) + b''.join(
                rdb_str(b'f%d' % min(i, 511)) + rdb_str(b'v')
                for i in range(513))),                       # refused
            corrupt(b'\x05' + rdb_len(2) + rdb_str(b'm') +
                    struct.pack('<d', 1.0) + rdb_str(b'm') +
                    struct.pack('<d', 2.0)),                 # dup member
            corrupt(b'\x05' + rdb_len(1) + rdb_str(b'm') +
                    struct.pack('<Q', 0x7ff8000000000000)),  # NaN score
            corrupt(b'\x01' + rdb_len(0)),                   # empty list
            corrupt(b'\x02' + rdb_len(0)),
            corrupt(b'\x04' + rdb_len(0)),
            corrupt(b'\x05' + rdb_len(0)),
            corrupt(lp_bad),                                 # bad listpack
            corrupt(b'\x0b' + rdb_str(intset([1, 2])[:-1])), # short intset
            corrupt(b'\x12' + rdb_len(1) + rdb_len(3) + rdb_str(b'a')),
            corrupt(b'\x00' + b'\xc3' + rdb_len(3) + rdb_len(50) +
                    b'\x00a\x00'),                           # bad LZF
            corrupt(b'\x00' + b'\xc5'),                      # bad encoding
        ]
        for i, payload in enumerate(cases):
            a = lc.call('RESTORE', 'bad%d' % i, 0, payload)
            b = rc.call('RESTORE', 'bad%d' % i, 0, payload)
            assert_eq(a, b, 'case %d (%r)' % (i, payload[:20]))
            both(lc, rc, 'EXISTS', 'bad%d' % i)
        both(lc, rc, 'RESTORE', 'ok9', 0, v9)
        both(lc, rc, 'GET', 'ok9')


def test_restore_in_multi(larder):
    """A bad RESTORE inside EXEC fails alone; the other commands hold."""
    with peer() as r, larder.client() as lc, r.client() as rc:
        bad = dump_frame(b'\x02' + rdb_len(2) + rdb_str(b'a') +
                         rdb_str(b'a'))
        good = dump_frame(b'\x01' + rdb_len(2) + rdb_str(b'x') +
                          rdb_str(b'y'))
        for c in (lc, rc):
            assert_eq(c.call('MULTI'), 'OK')
        for cmd in (['SET', 'a', 1], ['RESTORE', 'b', 0, bad],
                    ['RESTORE', 'l', 0, good], ['SET', 'c', 3], ['EXEC']):
            both(lc, rc, *cmd)
        for k in ('a', 'b', 'c', 'l'):
            assert_eq(snapshot(lc, k), snapshot(rc, k), k)


def test_older_encodings(larder):
    """Encodings of Redis before 7 (ziplist, zipmap, quicklist of
    ziplists, linked list, text-score zset, zset2, plain hash, listpack
    set of 7.2 excluded) built from their formats: both servers restore
    them to the same values."""
    bodies = older_encodings()
    with peer() as r, larder.client() as lc, r.client() as rc:
        for name, body in bodies.items():
            payload = dump_frame(body, version=9)
            both(lc, rc, 'RESTORE', name, 0, payload)
            assert_eq(snapshot(lc, name), snapshot(rc, name), name)


def test_restore_mutations_never_break_larder(larder):
    """Random byte flips (CRC recomputed) of valid payloads: larder says
    OK or Bad data format, never crashes, and what it restored reads."""
    larder_only()
    rng = random.Random(14)
    with larder.client() as lc:
        load(lc, every_encoding())
        payloads = [lc.call('DUMP', k) for k in
                    (b'str:int', b'str:lzf', b'list:small', b'list:ints',
                     b'set:intset', b'zset:small', b'hash:small',
                     b'hash:65', b'zset:129', b'set:str', b'hash:513')]
        for i in range(1500):
            p = bytearray(rng.choice(payloads)[:-10])
            for _ in range(rng.choice([1, 1, 2, 3])):
                p[rng.randrange(len(p))] = rng.randrange(256)
            if rng.random() < 0.2:
                del p[rng.randrange(1, len(p)):]
            payload = dump_frame(bytes(p))
            rep = lc.call('RESTORE', 'm', 0, payload, 'REPLACE')
            ok = rep == 'OK' or (isinstance(rep, RespError) and
                                 rep.message in ('ERR Bad data format',
                                                 'ERR DUMP payload holds a '
                                                 'stream: streams are not '
                                                 'supported yet'))
            assert_true(ok, 'mutation %d: %r' % (i, rep))
            if rep == 'OK':
                snapshot(lc, 'm')
        assert_eq(lc.call('PING'), 'PONG')


def test_big_values_both_ways(larder):
    """A hash of 30000 fields, a list of 60000 elements, a 1 MB
    compressible string, a 200 KB one built by APPEND and a 500 KB sparse
    one built by SETRANGE: DUMP/RESTORE both ways, equal."""
    with peer() as r, larder.client() as lc, r.client() as rc:
        for c in (lc, rc):
            for i in range(0, 30000, 5000):
                c.call('HSET', 'bh', *sum(([b'f%d' % j, b'%d' % (j * j)]
                                           for j in range(i, i + 5000)), []))
            for i in range(0, 60000, 10000):
                c.call('RPUSH', 'bl', *[b'%d' % j for j in range(i,
                                                                 i + 10000)])
            c.call('SET', 'bs', b'0123456789abcdef' * 65536)
            # Strings grown piece by piece, and a sparse bitmap-like one
            # (storages may keep these outside the key's record).
            for i in range(40):
                c.call('APPEND', 'ba', b'%05d' % i * 1000)
            c.call('SETRANGE', 'br', 500000, b'end')
            c.call('SETRANGE', 'br', 20000, b'mid')
        for k in ('bh', 'bl', 'bs', 'ba', 'br'):
            p = lc.call('DUMP', k)
            rc.call('SELECT', 1)
            assert_eq(rc.call('RESTORE', k, 0, p), 'OK', 'to redis')
            mine = snapshot(rc, k)
            rc.call('SELECT', 0)
            assert_eq(mine, snapshot(rc, k), k)
            q = rc.call('DUMP', k)
            lc.call('SELECT', 1)
            assert_eq(lc.call('RESTORE', k, 0, q), 'OK', 'to larder')
            assert_eq(snapshot(lc, k), mine, k)
            lc.call('SELECT', 0)


if __name__ == '__main__':
    main(globals())
