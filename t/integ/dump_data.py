"""dump_data - what the DUMP/RESTORE, MIGRATE, COPY/MOVE/SWAPDB and RDB
tests share: a redis-server peer, a data set with every type in every
encoding Redis 7.0 uses (and past each compact limit), a snapshot of a
key's value and TTL for comparing two servers, bulk loading, and payload
builders for the encodings of older Redis versions (ziplist, zipmap,
quicklist v1), written from their format descriptions."""

import random
import shutil
import struct

from larder_test import RespError, Server, Skip, larder_only


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says
    (DEBUG is enabled for DEBUG DIGEST)."""

    def __init__(self, *a, extra=(), **kw):
        self.peer_extra = list(extra)
        super().__init__(*a, **kw)

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile,
                '--enable-debug-command', 'yes'] + self.peer_extra


def peer(**kw):
    """A fresh redis-server (the caller stops it: use `with`)."""
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    return RedisPeer(**kw)


# ----------------------------------------------------------------------
# CRC64/Jones, for hand-built payloads

_POLY = int('{:064b}'.format(0xad93d23594c935a9)[::-1], 2)
_TABLE = []
for _b in range(256):
    _c = _b
    for _ in range(8):
        _c = (_c >> 1) ^ _POLY if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc64(data, crc=0):
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc


def dump_frame(body, version=10):
    """A DUMP payload: object bytes, RDB version, CRC64."""
    p = body + struct.pack('<H', version)
    return p + struct.pack('<Q', crc64(p))


def rdb_len(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xff])
    return b'\x80' + struct.pack('>I', n)


def rdb_str(s):
    return rdb_len(len(s)) + s


def ziplist(entries):
    """A ziplist of bytes and ints (every integer encoding by range)."""
    body = b''
    prev = 0
    last = 10
    for e in entries:
        last = 10 + len(body)
        head = bytes([prev]) if prev < 254 else b'\xfe' + struct.pack('<I',
                                                                       prev)
        if isinstance(e, int):
            if 0 <= e <= 12:
                enc = bytes([0xf1 + e])
            elif -128 <= e <= 127:
                enc = b'\xfe' + struct.pack('<b', e)
            elif -32768 <= e <= 32767:
                enc = b'\xc0' + struct.pack('<h', e)
            elif -(1 << 23) <= e < (1 << 23):
                enc = b'\xf0' + struct.pack('<i', e)[:3]
            elif -(1 << 31) <= e < (1 << 31):
                enc = b'\xd0' + struct.pack('<i', e)
            else:
                enc = b'\xe0' + struct.pack('<q', e)
        else:
            n = len(e)
            if n < 64:
                enc = bytes([n]) + e
            elif n < 16384:
                enc = bytes([0x40 | (n >> 8), n & 0xff]) + e
            else:
                enc = b'\x80' + struct.pack('>I', n) + e
        entry = head + enc
        body += entry
        prev = len(entry)
    total = 10 + len(body) + 1
    return (struct.pack('<IIH', total, last if entries else 10,
                        min(len(entries), 65535)) + body + b'\xff')


def zipmap(pairs):
    """A zipmap (Redis before 2.6) of (field, value, free) triples."""
    out = bytes([min(len(pairs), 254)])

    def zlen(n):
        return bytes([n]) if n < 254 else b'\xfe' + struct.pack('<I', n)
    for f, v, free in pairs:
        out += zlen(len(f)) + f + zlen(len(v)) + bytes([free]) + v + \
            b'\x00' * free
    return out + b'\xff'


def intset(values, width=None):
    values = sorted(values)
    if width is None:
        width = 2
        for v in values:
            if not -32768 <= v <= 32767:
                width = 4
            if not -(1 << 31) <= v < (1 << 31):
                width = 8
    fmt = {2: '<h', 4: '<i', 8: '<q'}[width]
    return (struct.pack('<II', width, len(values)) +
            b''.join(struct.pack(fmt, v) for v in values))


# ----------------------------------------------------------------------
# data sets

# redis-server 7.0's built-in limits of the compact encodings
LIMIT_VALUE = 64        # hash-max-listpack-value, zset-max-listpack-value
LIMIT_HASH = 512        # hash-max-listpack-entries
LIMIT_ZSET = 128        # zset-max-listpack-entries
LIMIT_INTSET = 512      # set-max-intset-entries


def older_encodings():
    """Objects (type byte and value) in the encodings of Redis before 7:
    ziplist, zipmap, quicklist of ziplists, linked list, text-score zset,
    zset2, plain hash, intsets, plain set, integer strings."""
    lots = [b'e%d' % i for i in range(300)]
    longs = b'L' * 300
    return {
        'zl_list': b'\x0a' + rdb_str(ziplist(
            [b'a', 0, 12, 13, -1, 200, -30000, 8000000, -2000000000,
             5000000000, -2 ** 63, longs, b'end'])),
        'zl_hash': b'\x0d' + rdb_str(ziplist([b'f', b'v', b'n', 7,
                                              b'big', longs])),
        'zl_zset': b'\x0c' + rdb_str(ziplist([b'a', -3, b'b', b'2.5',
                                              b'c', 10])),
        'zipmap': b'\x09' + rdb_str(zipmap([(b'a', b'vw', 0),
                                            (b'bcd', b'', 2),
                                            (b'x' * 300, b'y' * 260, 5)])),
        'ql1': b'\x0e' + rdb_len(3) + rdb_str(ziplist(lots[:150])) +
               rdb_str(ziplist([b'mid'])) + rdb_str(ziplist(lots[150:])),
        'linked': b'\x01' + rdb_len(3) + rdb_str(b'a') + rdb_str(b'b') +
                  rdb_str(b'c'),
        'zset_text': b'\x03' + rdb_len(3) + rdb_str(b'm') + b'\x030.5' +
                     rdb_str(b'n') + b'\xff' + rdb_str(b'o') + b'\xfe',
        'zset2': b'\x05' + rdb_len(2) + rdb_str(b'p') +
                 struct.pack('<d', -1.5) + rdb_str(b'q') +
                 struct.pack('<d', 1e-300),
        'hash_plain': b'\x04' + rdb_len(2) + rdb_str(b'f') + rdb_str(b'1') +
                      rdb_str(b'g') + rdb_str(b'2'),
        'intset16': b'\x0b' + rdb_str(intset([-5, 3, 700])),
        'intset64': b'\x0b' + rdb_str(intset([-2 ** 63, 0, 2 ** 63 - 1])),
        'set_plain': b'\x02' + rdb_len(2) + rdb_str(b'x') + b'\xc0\x05',
        'str_int16': b'\x00\xc1\x39\x30',
        'str_int32': b'\x00\xc2' + struct.pack('<i', -123456789),
    }


def every_encoding(prefix=b''):
    """(name, commands) pairs building one key each: every type, small and
    past each compact limit, integers, binary, long LZF-able strings."""
    p = prefix
    big = b'x' * 100000
    rnd = random.Random(5000).randbytes(5000)
    keys = [
        (b'str:int', [[b'SET', p + b'str:int', b'12345']]),
        (b'str:negint', [[b'SET', p + b'str:negint', b'-9223372036854775808']]),
        (b'str:int32', [[b'SET', p + b'str:int32', b'2147483647']]),
        (b'str:notint', [[b'SET', p + b'str:notint', b'007']]),
        (b'str:empty', [[b'SET', p + b'str:empty', b'']]),
        (b'str:short', [[b'SET', p + b'str:short', b'hello']]),
        (b'str:bin', [[b'SET', p + b'str:bin', bytes(range(256))]]),
        (b'str:lzf', [[b'SET', p + b'str:lzf', b'abcdefgh' * 1000]]),
        (b'str:big', [[b'SET', p + b'str:big', big]]),
        (b'str:random', [[b'SET', p + b'str:random', rnd]]),
        (b'str:21', [[b'SET', p + b'str:21', b'a' * 21]]),
        (b'list:small', [[b'RPUSH', p + b'list:small', b'a', b'1', b'hello',
                          b'-5000', b'70000', b'']]),
        (b'list:ints', [[b'RPUSH', p + b'list:ints'] +
                        [b'%d' % v for v in (0, 127, 128, -4096, 4095, 4096,
                                             -32768, 32768, 8388607,
                                             -8388609, 2 ** 31, -2 ** 63,
                                             2 ** 63 - 1)]]),
        (b'list:nodes', [[b'RPUSH', p + b'list:nodes'] +
                         [b'element-%d' % i for i in range(5000)]]),
        (b'list:bigelem', [[b'RPUSH', p + b'list:bigelem', b'a',
                            b'y' * 20000, b'b', b'z' * 9000]]),
        (b'set:intset', [[b'SADD', p + b'set:intset', b'1', b'2', b'-3',
                          b'70000', b'-2147483649']]),
        (b'set:intset16', [[b'SADD', p + b'set:intset16', b'3', b'-2',
                            b'1']]),
        (b'set:intset512', [[b'SADD', p + b'set:intset512'] +
                            [b'%d' % i for i in range(LIMIT_INTSET)]]),
        (b'set:intset513', [[b'SADD', p + b'set:intset513'] +
                            [b'%d' % i for i in range(LIMIT_INTSET + 1)]]),
        (b'set:str', [[b'SADD', p + b'set:str', b'a', b'b', b'c', b'']]),
        (b'set:big', [[b'SADD', p + b'set:big'] +
                      [b'm%d' % i for i in range(3000)]]),
        (b'zset:small', [[b'ZADD', p + b'zset:small', b'1', b'a', b'2.5',
                          b'b', b'-3', b'c', b'inf', b'd', b'-inf', b'e',
                          b'0.1', b'f', b'1e300', b'g']]),
        (b'zset:128', [[b'ZADD', p + b'zset:128'] +
                       sum(([b'%d' % i, b'm%d' % i]
                            for i in range(LIMIT_ZSET)), [])]),
        (b'zset:129', [[b'ZADD', p + b'zset:129'] +
                       sum(([b'%d.5' % i, b'm%d' % i]
                            for i in range(LIMIT_ZSET + 1)), [])]),
        (b'zset:longmember', [[b'ZADD', p + b'zset:longmember', b'1', b'a',
                               b'2', b'q' * (LIMIT_VALUE + 1)]]),
        (b'zset:big', [[b'ZADD', p + b'zset:big'] +
                       sum(([b'%d' % (i * 7 % 1000), b'member:%d' % i]
                            for i in range(4000)), [])]),
        (b'hash:small', [[b'HSET', p + b'hash:small', b'f1', b'v1', b'f2',
                          b'123', b'f3', b'', b'', b'empty-field']]),
        (b'hash:64', [[b'HSET', p + b'hash:64', b'f', b'v' * LIMIT_VALUE]]),
        (b'hash:65', [[b'HSET', p + b'hash:65', b'f',
                       b'v' * (LIMIT_VALUE + 1)]]),
        (b'hash:512', [[b'HSET', p + b'hash:512'] +
                       sum(([b'f%d' % i, b'%d' % i]
                            for i in range(LIMIT_HASH)), [])]),
        (b'hash:513', [[b'HSET', p + b'hash:513'] +
                       sum(([b'f%d' % i, b'%d' % i]
                            for i in range(LIMIT_HASH + 1)), [])]),
        (b'hash:big', [[b'HSET', p + b'hash:big'] +
                       sum(([b'field:%d' % i, b'value:%d' % (i * 3)]
                            for i in range(5000)), [])]),
    ]
    return keys


def load(c, keys, prefix=b''):
    """Run every key's commands on client c; fail on an error reply."""
    for name, cmds in keys:
        for reply in c.pipeline(cmds):
            if isinstance(reply, RespError):
                raise AssertionError('loading %r: %r' % (name, reply))


def sorted_pairs(flat):
    return sorted(zip(flat[0::2], flat[1::2]))


def snapshot(c, key):
    """(type, value) of key on client c (RESP2), order-independent where
    the type is; None if absent."""
    t = c.call('TYPE', key)
    if t == 'none':
        return None
    if t == 'string':
        v = c.call('GET', key)
    elif t == 'list':
        v = c.call('LRANGE', key, 0, -1)
    elif t == 'set':
        v = sorted(c.call('SMEMBERS', key))
    elif t == 'zset':
        v = c.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    elif t == 'hash':
        v = sorted_pairs(c.call('HGETALL', key))
    else:
        v = '(type %s)' % t
    return (t, v)


def ttl_class(c, key):
    """-2 absent (or due within 100 ms), -1 no TTL, else the PTTL rounded
    to minutes (two servers are read a moment apart)."""
    t = c.call('PTTL', key)
    if 0 <= t < 100:
        return -2
    return t if t < 0 else t // 60000


# ----------------------------------------------------------------------
# reading payloads back (to compare two DUMPs with LZF taken out)

def lzf_decompress(data, out_len):
    out = bytearray()
    i = 0
    while i < len(data):
        ctrl = data[i]
        i += 1
        if ctrl < 32:
            out += data[i:i + ctrl + 1]
            i += ctrl + 1
            continue
        n = ctrl >> 5
        if n == 7:
            n += data[i]
            i += 1
        back = ((ctrl & 0x1f) << 8) + data[i] + 1
        i += 1
        for _ in range(n + 2):
            out.append(out[-back])
    assert len(out) == out_len, 'LZF output %d, want %d' % (len(out), out_len)
    return bytes(out)


def read_len(p, i):
    b = p[i]
    kind = b >> 6
    if kind == 0:
        return b & 0x3f, i + 1, False
    if kind == 1:
        return ((b & 0x3f) << 8) | p[i + 1], i + 2, False
    if kind == 3:
        return b & 0x3f, i + 1, True
    if b == 0x80:
        return struct.unpack('>I', p[i + 1:i + 5])[0], i + 5, False
    return struct.unpack('>Q', p[i + 1:i + 9])[0], i + 9, False


def read_string(p, i):
    """(bytes as written raw, next index): integer and LZF encodings
    expanded to the bytes they stand for, tagged so equal payloads stay
    equal."""
    n, i, enc = read_len(p, i)
    if not enc:
        return p[i:i + n], i + n
    if n == 0:
        return b'int8:%d' % struct.unpack('<b', p[i:i + 1]), i + 1
    if n == 1:
        return b'int16:%d' % struct.unpack('<h', p[i:i + 2]), i + 2
    if n == 2:
        return b'int32:%d' % struct.unpack('<i', p[i:i + 4]), i + 4
    clen, i, _ = read_len(p, i)
    ulen, i, _ = read_len(p, i)
    return lzf_decompress(p[i:i + clen], ulen), i + clen


def uncompressed(payload):
    """A DUMP payload of a one-blob, quicklist 2 or zset2 type with every
    string decompressed (the trailer dropped), for byte comparisons."""
    t = payload[0]
    if t == 5:
        n, i, _ = read_len(payload, 1)
        out = [b'5']
        for _ in range(n):
            s, i = read_string(payload, i)
            out.append(s + b'@' + payload[i:i + 8])
            i += 8
        return out
    if t == 18:
        n, i, _ = read_len(payload, 1)
        out = [b'18']
        for _ in range(n):
            container, i, _ = read_len(payload, i)
            s, i = read_string(payload, i)
            out.append(b'%d:' % container + s)
        return out
    s, _ = read_string(payload, 1)
    return [b'%d' % t, s]
