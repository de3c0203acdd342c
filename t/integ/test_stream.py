"""Checks the stream commands against a redis-server started by each test, reply by reply and byte for byte, in RESP2 and RESP3: a corpus covering every command and option (ids of every form, exclusive bounds, COUNT, trimming by MAXLEN / MINID with = and ~ and LIMIT, NOMKSTREAM, bad numbers 0, -1, +-2^31, +-2^63, 2^64, nan, inf and garbage in each numeric argument), a seeded random stream of appends, deletes, trims and reads, and streams under TYPE, SCAN TYPE, RENAME, COPY, EXPIRE and DEL; larder-only checks of auto ids and of a stream outliving a restart."""

import os
import random
import re
import shutil
import time

from larder_test import (Client, RespError, Server, Skip, assert_eq,
                         assert_true, larder_only, main, wait_until)

SEEDS = [int(x) for x in os.environ.get('LARDER_STREAM_SEEDS',
                                        '1,2,3').split(',')]
RANDOM_COMMANDS = int(os.environ.get('LARDER_STREAM_COMMANDS', '1500'))
BATCH = 50

# Bad and edge numbers for every numeric argument.
NUMS = [b'0', b'-1', b'1', b'5', b'2147483647', b'2147483648',
        b'-2147483648', b'-2147483649', b'9223372036854775807',
        b'9223372036854775808', b'-9223372036854775808',
        b'-9223372036854775809', b'18446744073709551615',
        b'18446744073709551616', b'nan', b'inf', b'-inf', b'abc', b'',
        b'1.5', b' 1', b'+1', b'01', b'0x10']


# NUMS for idle-time arguments: a few ms of idleness depend on the clock
# (which of two servers under load has passed 5 ms), so not 1 and 5.
IDLE_NUMS = [n for n in NUMS if n not in (b'1', b'5')]


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile]


class RawClient(Client):
    """A client that keeps every byte read, so a reply's exact bytes can
    be compared (RESP2's null array and null bulk decode alike)."""

    def _fill(self):
        data = self.sock.recv(1 << 20)
        if not data:
            raise ConnectionError('server closed the connection')
        self.buf += data

    def raw_pipeline(self, commands):
        self.send_raw(b''.join(_encode(c) for c in commands))
        out = []
        for _ in commands:
            start = self.pos
            self.read_reply()
            out.append(bytes(self.buf[start:self.pos]))
        del self.buf[:self.pos]
        self.pos = 0
        return out


def _encode(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


def peer():
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    return RedisPeer()


def fmt(cmd):
    return ' '.join(repr(a if len(a) < 40 else a[:20] + b'...')[1:]
                    for a in cmd)


class Resp:
    """A reply parsed from its bytes, keeping RESP's types."""

    def __init__(self, data):
        self.d, self.i = data, 0

    def line(self):
        j = self.d.index(b'\r\n', self.i)
        out, self.i = self.d[self.i:j], j + 2
        return out

    def parse(self):
        t, rest = self.d[self.i:self.i + 1], None
        self.i += 1
        head = self.line()
        if t in (b'*', b'~', b'>', b'%'):
            n = int(head)
            if n < 0:
                return (t, None)
            n = n * 2 if t == b'%' else n
            return (t, [self.parse() for _ in range(n)])
        if t in (b'$', b'=', b'!'):
            n = int(head)
            if n < 0:
                return (t, None)
            rest = self.d[self.i:self.i + n]
            self.i += n + 2
            return (t, rest)
        if t == b':':
            return (t, int(head))
        return (t, head)


# Values that depend on the clock or on Redis's memory layout.
MASK_AFTER = {b'idle', b'seen-time', b'radix-tree-keys', b'radix-tree-nodes'}
TIME_MS = 10 ** 12


def mask(cmd, raw):
    """The reply with clock-dependent numbers masked, for commands that
    report times (XPENDING's idle, XINFO's times and node counts)."""
    name = cmd[0].upper()
    sub = cmd[1].upper() if len(cmd) > 1 else b''
    if name not in (b'XPENDING', b'XINFO') or raw.startswith(b'-'):
        return raw
    tree = Resp(raw).parse()

    def walk(x):
        t, v = x
        if t == b':' and v >= TIME_MS:
            return (t, 'T')
        if not isinstance(v, list):
            return x
        out = [walk(e) for e in v]
        for i in range(len(out) - 1):
            if out[i][0] in (b'$', b'+') and out[i][1] in MASK_AFTER:
                out[i + 1] = (b':', 'M')
        if (name == b'XPENDING' and len(cmd) > 3 and len(out) == 4 and
                out[2][0] == b':' and out[0][0] == b'$'):
            out[2] = (b':', 'IDLE')
        return (t, out)
    return repr(walk(tree)).encode()


BULK = re.compile(rb'\$\d+\r\n([^\r]*)\r\n')


def compare(larder, redis, commands, proto, what):
    """Run commands on both servers in batches; fail on the first
    replies that differ (with the ten first shown)."""
    cl, cr = RawClient(larder.port), RawClient(redis.port)
    bad = []
    try:
        for c in (cl, cr):
            if proto == 3:
                c.hello(3)
            c.call('FLUSHALL')
        for i in range(0, len(commands), BATCH):
            batch = commands[i:i + BATCH]
            rl = cl.raw_pipeline(batch)
            rr = cr.raw_pipeline(batch)
            for cmd, a, b in zip(batch, rl, rr):
                if cmd[0].upper() == b'SCAN':
                    a, b = sorted(BULK.findall(a)), sorted(BULK.findall(b))
                a, b = mask(cmd, a), mask(cmd, b)
                if a != b:
                    at = next((i for i in range(min(len(a), len(b)))
                               if a[i] != b[i]), min(len(a), len(b)))
                    at = max(0, at - 100)
                    bad.append('%s\n      larder %r\n      redis  %r' %
                               (fmt(cmd), a[at:at + 300], b[at:at + 300]))
    finally:
        cl.close()
        cr.close()
    assert_true(not bad, '%s RESP%d: %d of %d replies differ:\n    %s' %
                (what, proto, len(bad), len(commands),
                 '\n    '.join(bad[:10])))


def b(*args):
    return [a if isinstance(a, bytes) else str(a).encode() for a in args]


def corpus_entries():
    """XADD XLEN XRANGE XREVRANGE XDEL XTRIM XREAD and the keyspace."""
    c = []
    add = c.append
    add(b('SET', 'str', 'x'))
    # XADD: ids of every form, and their errors.
    add(b('XADD', 's', '1-1', 'a', '1', 'b', '2'))
    add(b('XADD', 's', '1-1', 'a', '1'))
    add(b('XADD', 's', '1-0', 'a', '1'))
    add(b('XADD', 's', '1-*', 'c', '3'))
    add(b('XADD', 's', '1', 'c', '3'))
    add(b('XADD', 's', '2', 'd', '4'))
    add(b('XADD', 's', '3-*', 'e', ''))
    add(b('XADD', 's', '0-0', 'e', '5'))
    add(b('XADD', 'new', '0-0', 'e', '5'))
    add(b('XADD', 'new', '0-*', 'e', '5'))
    add(b('XADD', 'new', '0-*', 'e', '6'))
    add(b('XADD', 's', '+', 'f', 'v'))
    add(b('XADD', 's', '-', 'f', 'v'))
    add(b('XADD', 's', '5-', 'f', 'v'))
    add(b('XADD', 's', '-5', 'f', 'v'))
    add(b('XADD', 's', '5-1-1', 'f', 'v'))
    add(b('XADD', 's', '*-1', 'f', 'v'))
    add(b('XADD', 's', '**', 'f', 'v'))
    add(b('XADD', 's', '9' * 130, 'f', 'v'))
    add(b('XADD', 's', '10-1', 'f'))
    add(b('XADD', 's', '10-1', 'f', 'v', 'g'))
    add(b('XADD', 's', '10-1'))
    add(b('XADD', 's', 'MAXLEN', '5'))
    add(b('XADD', 's', 'MAXLEN'))
    add(b('XADD', 'str', '10-1', 'f', 'v'))
    add(b('XADD', 'nomk', 'NOMKSTREAM', '1-1', 'f', 'v'))
    add(b('EXISTS', 'nomk'))
    add(b('XADD', 's', 'NOMKSTREAM', '10-1', 'f', 'v'))
    add(b('XADD', 's', 'nomkstream', 'maxlen', '=', '100', '10-2', 'f', 'v'))
    add(b('XADD', 's', 'MAXLEN', '~', '100', 'LIMIT', '10', '10-3', 'f', 'v'))
    add(b('XADD', 's', 'MAXLEN', '100', 'LIMIT', '10', '10-4', 'f', 'v'))
    add(b('XADD', 's', 'LIMIT', '10', '10-4', 'f', 'v'))
    add(b('XADD', 's', 'MAXLEN', '5', 'MINID', '1', '10-4', 'f', 'v'))
    add(b('XADD', 's', 'MINID', '1', 'MAXLEN', '5', '10-4', 'f', 'v'))
    add(b('XADD', 's', 'MINID', '+', '10-4', 'f', 'v'))
    add(b('XADD', 's', 'MINID', '=', '2-1', '10-5', 'f', 'v'))
    add(b('XRANGE', 's', '-', '+'))
    add(b('XADD', 's', 'MAXLEN', '3', '11-0', 'f', 'v'))
    add(b('XRANGE', 's', '-', '+'))
    add(b('XADD', 's', 'MAXLEN', '0', '12-0', 'f', 'v'))
    add(b('XLEN', 's'))
    for n in NUMS:
        add(b('XADD', 'nums', 'MAXLEN', n, '*', 'f', 'v')[:5] +
            [b'13-0', b'f', b'v'])
        add(b('XADD', 'nums', 'MAXLEN', '~', '5', 'LIMIT', n, '14-0', 'f',
              'v'))
        add(b('XADD', 'nums', 'MINID', n, '15-0', 'f', 'v'))
        add(b('XADD', 'ids', n + b'-1', 'f', 'v'))
        add(b('XADD', 'ids', b'100-' + n, 'f', 'v'))
        add(b('XADD', 'ids', n, 'f', 'v'))
        add(b('XADD', 'ids', n + b'-*', 'f', 'v'))
    add(b('XRANGE', 'nums', '-', '+'))
    add(b('XRANGE', 'ids', '-', '+'))
    # The largest id: then the stream is exhausted.
    add(b('XADD', 'top', '18446744073709551615-18446744073709551614', 'f',
          'v'))
    add(b('XADD', 'top', '18446744073709551615-*', 'f', 'v'))
    add(b('XADD', 'top', '18446744073709551615-*', 'f', 'v'))
    add(b('XADD', 'top', '*', 'f', 'v'))
    add(b('XLEN', 'top'))
    add(b('XADD', 'seqtop', '5-18446744073709551615', 'f', 'v'))
    add(b('XADD', 'seqtop', '5-*', 'f', 'v'))
    add(b('XADD', 'seqtop', '6-*', 'f', 'v'))
    # XLEN
    add(b('XLEN', 'missing'))
    add(b('XLEN', 'str'))
    # XRANGE / XREVRANGE over a known stream.
    for i in range(1, 30):
        add(b('XADD', 'r', '%d-%d' % (i // 3 + 1, i % 3), 'n', str(i),
              'pad', 'x' * (i % 5)))
    bounds = [b'-', b'+', b'0', b'1', b'2-1', b'(2-1', b'(2', b'5', b'(5',
              b'(-', b'(+', b'(', b'((2', b'3-', b'x', b'0-0', b'(0-0',
              b'18446744073709551615', b'(18446744073709551615-'
              b'18446744073709551615', b'18446744073709551615-'
              b'18446744073709551615', b'-1', b'9-9', b'(9-9', b'2-*']
    for cmd in (b'XRANGE', b'XREVRANGE'):
        for s in bounds:
            for e in (b'+', b'-', b'5', b'(5', b'3-1', b'(3-1', s):
                add([cmd, b'r', s, e])
        for n in NUMS:
            add([cmd, b'r', b'-' if cmd == b'XRANGE' else b'+',
                 b'+' if cmd == b'XRANGE' else b'-', b'COUNT', n])
        add([cmd, b'r', b'-', b'+', b'COUNT'])
        add([cmd, b'r', b'-', b'+', b'COUNT', b'2', b'COUNT', b'3'])
        add([cmd, b'r', b'-', b'+', b'LIMIT', b'2'])
        add([cmd, b'r', b'-', b'+', b'count', b'4'])
        add([cmd, b'missing', b'-', b'+'])
        add([cmd, b'missing', b'-', b'+', b'COUNT', b'0'])
        add([cmd, b'missing', b'x', b'+'])
        add([cmd, b'str', b'-', b'+'])
        add([cmd, b'str', b'-', b'+', b'COUNT', b'0'])
        add([cmd, b'r', b'-'])
    # XDEL
    add(b('XDEL', 'r', '1-1', '1-1', '2-0', '99-0'))
    add(b('XDEL', 'r', '1-2', 'bad'))
    add(b('XDEL', 'r', '-'))
    add(b('XDEL', 'r', '+'))
    add(b('XDEL', 'r', '3'))
    add(b('XDEL', 'missing', 'bad'))
    add(b('XDEL', 'str', '1-1'))
    add(b('XDEL', 'str', 'bad'))
    add(b('XRANGE', 'r', '-', '+', 'COUNT', '5'))
    add(b('XLEN', 'r'))
    # XTRIM
    for n in NUMS:
        add(b('XTRIM', 'r', 'MAXLEN', n))
        add(b('XTRIM', 'r', 'MAXLEN', '~', '1000', 'LIMIT', n))
        add(b('XTRIM', 'r', 'MINID', n))
        add(b('XTRIM', 'r', 'MINID', '=', n + b'-0'))
    for args in (['MAXLEN'], [], ['LIMIT', '5'], ['MAXLEN', '5', 'extra'],
                 ['MAXLEN', '=', '25'], ['MAXLEN', '~', '1'],
                 ['MAXLEN', '20', 'LIMIT', '2'],
                 ['MAXLEN', '~', '20', 'LIMIT', '0'],
                 ['MINID', '~', '4'], ['MINID', '5-1'], ['MINID', '-'],
                 ['MINID', '+'], ['MINID', '~', '5', 'MAXLEN', '2'],
                 ['maxlen', '~', 'LIMIT'], ['MAXLEN', '18']):
        add(b('XTRIM', 'r', *args))
        add(b('XLEN', 'r'))
    add(b('XTRIM', 'missing', 'MAXLEN', '0'))
    add(b('XTRIM', 'missing', 'MAXLEN', 'x'))
    add(b('XTRIM', 'str', 'MAXLEN', '0'))
    add(b('XRANGE', 'r', '-', '+'))
    # Approximate trimming of a long stream: whole nodes only.
    for i in range(1, 1001):
        add(b('XADD', 'long', '%d-0' % i, 'f', 'v'))
    for args in (['MAXLEN', '~', '950'], ['MAXLEN', '~', '640'],
                 ['MAXLEN', '~', '640', 'LIMIT', '50'],
                 ['MAXLEN', '~', '400', 'LIMIT', '200'],
                 ['MINID', '~', '720'], ['MAXLEN', '=', '250'],
                 ['MAXLEN', '~', '120'], ['MINID', '~', '2000']):
        add(b('XTRIM', 'long', *args))
        add(b('XRANGE', 'long', '-', '+', 'COUNT', '1'))
    for i in range(1001, 1400):
        add(b('XADD', 'long', 'MAXLEN', '~', '150', '%d-0' % i, 'f', 'v'))
        if i % 37 == 0:
            add(b('XLEN', 'long'))
            add(b('XRANGE', 'long', '-', '+', 'COUNT', '1'))
    # XREAD
    add(b('XREAD', 'STREAMS', 'r', '0'))
    add(b('XREAD', 'COUNT', '2', 'STREAMS', 'r', 'long', '0', '1300'))
    add(b('XREAD', 'COUNT', '2', 'STREAMS', 'r', 'long', 'missing', '0',
          '$', '0'))
    add(b('XREAD', 'STREAMS', 'r', '$'))
    add(b('XREAD', 'STREAMS', 'missing', '$'))
    add(b('XREAD', 'STREAMS', 'r', '18446744073709551615'))
    add(b('XREAD', 'STREAMS', 'r', '+'))
    add(b('XREAD', 'STREAMS', 'r', '-'))
    add(b('XREAD', 'STREAMS', 'r', '>'))
    add(b('XREAD', 'STREAMS', 'r', 'bad'))
    add(b('XREAD', 'STREAMS', 'r', 'long', '0'))
    add(b('XREAD', 'STREAMS', 'r'))
    add(b('XREAD', 'STREAMS'))
    add(b('XREAD', 'COUNT', '1', 'r', '0'))
    add(b('XREAD', 'GROUP', 'g', 'c', 'STREAMS', 'r', '0'))
    add(b('XREAD', 'NOACK', 'STREAMS', 'r', '0'))
    add(b('XREAD', 'STREAMS', 'str', '0'))
    add(b('XREAD', 'STREAMS', 'r', 'str', '0', '0'))
    add(b('XREAD', 'STREAMS', 'r', 'str', 'bad', '0'))
    add(b('XREAD', 'STREAMS', 'str', 'r', '0', 'bad'))
    add(b('XREAD', 'COUNT', '1', 'COUNT', '2', 'STREAMS', 'r', '0'))
    add(b('xread', 'count', '3', 'streams', 'long', '(1300'))
    add(b('XADD', 'blk', '1-1', 'f', 'v'))
    add(b('XADD', 'blk', '2-1', 'f', 'v'))
    for n in NUMS:
        add(b('XREAD', 'COUNT', n, 'STREAMS', 'blk', '0'))
        # Served at once (the stream has entries above 0): never waits.
        add(b('XREAD', 'BLOCK', n, 'STREAMS', 'blk', '0'))
        add(b('XREAD', 'STREAMS', 'blk', n))
    # The keyspace: TYPE, SCAN TYPE, RENAME, COPY, EXPIRE, DEL.
    add(b('TYPE', 'r'))
    add(b('SCAN', '0', 'TYPE', 'stream', 'COUNT', '1000'))
    add(b('RENAME', 'r', 'r2'))
    add(b('XRANGE', 'r2', '-', '+', 'COUNT', '3'))
    add(b('COPY', 'r2', 'r3'))
    add(b('XADD', 'r3', '100-0', 'f', 'v'))
    add(b('XLEN', 'r2'))
    add(b('XLEN', 'r3'))
    add(b('XREVRANGE', 'r3', '+', '-', 'COUNT', '2'))
    add(b('EXPIRE', 'r3', '100'))
    add(b('TTL', 'r3'))
    add(b('PERSIST', 'r3'))
    add(b('DEL', 'r2', 'r3', 'long'))
    add(b('EXISTS', 'r2', 'r3', 'long'))
    add(b('XADD', 'long', '1-0', 'f', 'v'))
    add(b('XRANGE', 'long', '-', '+'))
    # An emptied stream stays, with its last id.
    add(b('XADD', 'e', '5-5', 'f', 'v'))
    add(b('XDEL', 'e', '5-5'))
    add(b('EXISTS', 'e'))
    add(b('XLEN', 'e'))
    add(b('XADD', 'e', '5-5', 'f', 'v'))
    add(b('XADD', 'e', '5-6', 'f', 'v'))
    add(b('XTRIM', 'e', 'MAXLEN', '0'))
    add(b('TYPE', 'e'))
    add(b('XREAD', 'STREAMS', 'e', '0'))
    return c


def corpus_groups():
    """XGROUP XREADGROUP XACK XPENDING XCLAIM XAUTOCLAIM XINFO XSETID."""
    c = []
    add = c.append
    add(b('SET', 'str', 'x'))
    for i in range(1, 21):
        add(b('XADD', 's', '%d-1' % i, 'n', str(i)))
    # XGROUP CREATE
    add(b('XGROUP', 'CREATE', 'missing', 'g', '$'))
    add(b('XGROUP', 'CREATE', 'str', 'g', '$'))
    add(b('XGROUP', 'CREATE', 'str', 'g', '$', 'MKSTREAM'))
    add(b('XGROUP', 'CREATE', 'mk', 'g', '$', 'MKSTREAM'))
    add(b('TYPE', 'mk'))
    add(b('XLEN', 'mk'))
    add(b('XGROUP', 'CREATE', 'mk2', 'g', '5-5', 'MKSTREAM', 'ENTRIESREAD',
          '3'))
    add(b('XGROUP', 'CREATE', 's', 'g', '0'))
    add(b('XGROUP', 'CREATE', 's', 'g', '0'))
    add(b('XGROUP', 'CREATE', 's', 'dollar', '$'))
    add(b('XGROUP', 'CREATE', 's', 'mid', '10'))
    add(b('XGROUP', 'CREATE', 's', 'bad', 'x'))
    add(b('XGROUP', 'CREATE', 's', 'bad', '-'))
    add(b('XGROUP', 'CREATE', 's', 'bad', '+'))
    add(b('XGROUP', 'CREATE', 's', 'bad', '0', 'FOO'))
    add(b('XGROUP', 'CREATE', 's', 'bad', '0', 'ENTRIESREAD'))
    add(b('XGROUP', 'CREATE', 's', 'bad', '0', 'MKSTREAM', 'MKSTREAM',
          'MKSTREAM', 'MKSTREAM'))
    add(b('XGROUP', 'CREATE', 's'))
    add(b('XGROUP', 'CREATE', 's', 'g'))
    add(b('XGROUP', 'FOO', 's', 'g'))
    add(b('XGROUP'))
    for n in NUMS:
        add(b('XGROUP', 'CREATE', 's', b'er' + n, '0', 'ENTRIESREAD', n))
    add(b('XINFO', 'GROUPS', 's'))
    # XGROUP SETID, CREATECONSUMER, DELCONSUMER, DESTROY
    add(b('XGROUP', 'SETID', 's', 'mid', '12'))
    add(b('XGROUP', 'SETID', 's', 'mid', '$', 'ENTRIESREAD', '7'))
    add(b('XGROUP', 'SETID', 's', 'mid', '-'))
    add(b('XGROUP', 'SETID', 's', 'mid', '+'))
    add(b('XGROUP', 'SETID', 's', 'mid', 'x'))
    add(b('XGROUP', 'SETID', 's', 'nogroup', '0'))
    add(b('XGROUP', 'SETID', 'missing', 'g', '0'))
    add(b('XGROUP', 'SETID', 's', 'mid', '0', 'MKSTREAM'))
    add(b('XGROUP', 'SETID', 's', 'mid', '0', 'ENTRIESREAD', '-2'))
    add(b('XGROUP', 'SETID', 's', 'mid', '5', 'ENTRIESREAD', '-1'))
    for n in NUMS:
        add(b('XGROUP', 'SETID', 's', 'mid', '3', 'ENTRIESREAD', n))
    add(b('XINFO', 'GROUPS', 's'))
    add(b('XGROUP', 'CREATECONSUMER', 's', 'g', 'alice'))
    add(b('XGROUP', 'CREATECONSUMER', 's', 'g', 'alice'))
    add(b('XGROUP', 'CREATECONSUMER', 's', 'nogroup', 'alice'))
    add(b('XGROUP', 'CREATECONSUMER', 'missing', 'g', 'alice'))
    add(b('XGROUP', 'CREATECONSUMER', 'str', 'g', 'alice'))
    add(b('XGROUP', 'DELCONSUMER', 's', 'g', 'nobody'))
    add(b('XGROUP', 'DESTROY', 's', 'nogroup'))
    add(b('XGROUP', 'DESTROY', 's', 'dollar'))
    add(b('XGROUP', 'DESTROY', 'missing', 'g'))
    add(b('XGROUP', 'DESTROY', 's', 'g', 'extra'))
    add(b('XGROUP', 'HELP'))
    add(b('XGROUP', 'HELP', 'extra'))
    # XREADGROUP
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'COUNT', '3', 'STREAMS', 's',
          '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'bob', 'COUNT', '2', 'STREAMS', 's',
          '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'carol', 'COUNT', '2', 'NOACK',
          'STREAMS', 's', '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', '0'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'COUNT', '1', 'STREAMS', 's',
          '0'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', '2-1'))
    add(b('XREADGROUP', 'GROUP', 'g', 'nobody', 'STREAMS', 's', '0'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', '$'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', 'x'))
    add(b('XREADGROUP', 'GROUP', 'nogroup', 'alice', 'STREAMS', 's', '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 'missing', '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 'str', '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', 'mk', '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', 'mk', '>',
          '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 'mk', 's', '>',
          '0'))
    add(b('XREADGROUP', 'STREAMS', 's', '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'STREAMS', 's', '>'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'FOO', 'STREAMS', 's', '>'))
    for n in NUMS:
        add(b('XREADGROUP', 'GROUP', 'g', 'dan', 'COUNT', n, 'STREAMS', 's',
              '0'))
        add(b('XREADGROUP', 'GROUP', 'g', 'dan', 'BLOCK', n, 'STREAMS', 's',
              '0'))
    add(b('XINFO', 'GROUPS', 's'))
    add(b('XINFO', 'CONSUMERS', 's', 'g'))
    add(b('XPENDING', 's', 'g'))
    # XACK
    add(b('XACK', 's', 'g', '1-1', '1-1', '99-1'))
    add(b('XACK', 's', 'g', '2-1', 'bad'))
    add(b('XACK', 's', 'g', '-'))
    add(b('XACK', 's', 'nogroup', '2-1'))
    add(b('XACK', 'missing', 'g', '2-1'))
    add(b('XACK', 'missing', 'g', 'bad'))
    add(b('XACK', 'str', 'g', '2-1'))
    add(b('XACK', 's', 'g', '2'))
    add(b('XPENDING', 's', 'g'))
    # XPENDING
    add(b('XPENDING', 's', 'g', '-', '+', '10'))
    add(b('XPENDING', 's', 'g', '-', '+', '10', 'alice'))
    add(b('XPENDING', 's', 'g', '-', '+', '10', 'nobody'))
    add(b('XPENDING', 's', 'g', '(3-1', '+', '10'))
    add(b('XPENDING', 's', 'g', '-', '(4-1', '10'))
    add(b('XPENDING', 's', 'g', '4', '5', '10'))
    add(b('XPENDING', 's', 'g', '(-', '+', '10'))
    add(b('XPENDING', 's', 'g', 'IDLE', '0', '-', '+', '10'))
    add(b('XPENDING', 's', 'g', 'IDLE', '3600000', '-', '+', '10'))
    add(b('XPENDING', 's', 'g', 'IDLE', '0', '-', '+', '10', 'bob'))
    add(b('XPENDING', 's', 'g', 'IDLE', '0', '-', '+'))
    add(b('XPENDING', 's', 'g', 'IDLE', 'x', '-', '+', '10'))
    add(b('XPENDING', 's', 'g', '-', '+', '10', 'bob', 'extra'))
    add(b('XPENDING', 's', 'g', '-'))
    add(b('XPENDING', 's', 'g', '-', '+'))
    add(b('XPENDING', 's', 'g', 'x', '+', '10'))
    add(b('XPENDING', 's', 'g', '-', '+', 'x'))
    add(b('XPENDING', 's', 'nogroup'))
    add(b('XPENDING', 'missing', 'g'))
    add(b('XPENDING', 'str', 'g'))
    add(b('XPENDING', 'mk', 'g'))
    add(b('XPENDING', 'mk', 'g', '-', '+', '5'))
    for n in NUMS:
        add(b('XPENDING', 's', 'g', '-', '+', n))
    for n in IDLE_NUMS:
        add(b('XPENDING', 's', 'g', 'IDLE', n, '-', '+', '5'))
    # XCLAIM
    add(b('XCLAIM', 's', 'g', 'bob', '0', '3-1'))
    add(b('XCLAIM', 's', 'g', 'bob', '3600000', '2-1'))
    add(b('XCLAIM', 's', 'g', 'bob', '0', '2-1', '3-1', 'JUSTID'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '10-1', '11-1'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '10-1', '11-1', 'FORCE'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '2-1', 'IDLE', '5000000'))
    add(b('XPENDING', 's', 'g', 'IDLE', '4000000', '-', '+', '10'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '3-1', 'TIME', '1000',
          'RETRYCOUNT', '7'))
    add(b('XPENDING', 's', 'g', '-', '+', '10'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '3-1', 'LASTID', '15-1'))
    add(b('XINFO', 'GROUPS', 's'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '3-1', 'LASTID', 'x'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '3-1', 'BOGUS'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '-'))
    add(b('XCLAIM', 's', 'g', 'erin', '0', '3-1', 'IDLE'))
    add(b('XCLAIM', 's', 'g', 'erin', 'x', '3-1'))
    add(b('XCLAIM', 's', 'nogroup', 'erin', '0', '3-1'))
    add(b('XCLAIM', 'missing', 'g', 'erin', '0', '3-1'))
    add(b('XCLAIM', 'str', 'g', 'erin', '0', '3-1'))
    for n in IDLE_NUMS:
        add(b('XCLAIM', 's', 'g', 'fay', n, '4-1', 'JUSTID'))
    for n in NUMS:
        add(b('XCLAIM', 's', 'g', 'fay', '0', '4-1', 'IDLE', n, 'JUSTID'))
        add(b('XCLAIM', 's', 'g', 'fay', '0', '4-1', 'TIME', n, 'JUSTID'))
        add(b('XCLAIM', 's', 'g', 'fay', '0', '4-1', 'RETRYCOUNT', n))
    add(b('XPENDING', 's', 'g', '-', '+', '20'))
    # A deleted entry leaves the PEL when claimed.
    add(b('XDEL', 's', '4-1'))
    add(b('XCLAIM', 's', 'g', 'gus', '0', '4-1', '5-1'))
    add(b('XPENDING', 's', 'g'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 's', '0'))
    # XAUTOCLAIM
    add(b('XREADGROUP', 'GROUP', 'g', 'hal', 'STREAMS', 's', '>'))
    add(b('XDEL', 's', '12-1', '14-1'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', '0', 'COUNT', '3'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', '6-1', 'COUNT', '3',
          'JUSTID'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', '(9-1', 'COUNT', '4'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', '0'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '3600000', '0'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', '0', 'COUNT', '1', 'COUNT',
          '2'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', '0', 'BOGUS'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', 'x'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', '0', '(18446744073709551615-'
          '18446744073709551615'))
    add(b('XAUTOCLAIM', 's', 'g', 'ivy', 'x', '0'))
    add(b('XAUTOCLAIM', 's', 'nogroup', 'ivy', '0', '0'))
    add(b('XAUTOCLAIM', 'missing', 'g', 'ivy', '0', '0'))
    add(b('XAUTOCLAIM', 'str', 'g', 'ivy', '0', '0'))
    for n in IDLE_NUMS:
        add(b('XAUTOCLAIM', 's', 'g', 'jo', n, '0', 'COUNT', '2', 'JUSTID'))
    for n in NUMS:
        add(b('XAUTOCLAIM', 's', 'g', 'jo', '0', '0', 'COUNT', n, 'JUSTID'))
    add(b('XINFO', 'CONSUMERS', 's', 'g'))
    add(b('XPENDING', 's', 'g'))
    # DELCONSUMER with pending entries
    add(b('XGROUP', 'DELCONSUMER', 's', 'g', 'jo'))
    add(b('XPENDING', 's', 'g'))
    add(b('XINFO', 'CONSUMERS', 's', 'g'))
    # XINFO
    for args in (['STREAM', 's'], ['STREAM', 's', 'FULL'],
                 ['STREAM', 's', 'FULL', 'COUNT', '2'],
                 ['STREAM', 's', 'FULL', 'COUNT', '0'],
                 ['STREAM', 's', 'FULL', 'COUNT'], ['STREAM', 's', 'FOO'],
                 ['STREAM', 's', 'FULL', 'FOO', '1'],
                 ['STREAM', 'missing'], ['STREAM', 'str'], ['STREAM', 'mk'],
                 ['STREAM', 'mk', 'FULL'], ['GROUPS', 'mk'],
                 ['GROUPS', 'missing'], ['GROUPS', 'str'],
                 ['CONSUMERS', 's', 'nogroup'], ['CONSUMERS', 'missing', 'g'],
                 ['CONSUMERS', 's'], ['HELP'], ['FOO'], ['STREAM']):
        add(b('XINFO', *args))
    for n in NUMS:
        add(b('XINFO', 'STREAM', 's', 'FULL', 'COUNT', n))
    # Lag and entries-read across deletes, trims and XSETID.
    add(b('XGROUP', 'CREATE', 'lag', 'a', '0', 'MKSTREAM'))
    add(b('XINFO', 'GROUPS', 'lag'))
    for i in range(1, 11):
        add(b('XADD', 'lag', '%d-0' % i, 'f', 'v'))
    add(b('XGROUP', 'CREATE', 'lag', 'b', '0'))
    add(b('XGROUP', 'CREATE', 'lag', 'c', '5-0'))
    add(b('XGROUP', 'CREATE', 'lag', 'd', '$'))
    add(b('XINFO', 'GROUPS', 'lag'))
    add(b('XREADGROUP', 'GROUP', 'a', 'x', 'COUNT', '3', 'STREAMS', 'lag',
          '>'))
    add(b('XINFO', 'GROUPS', 'lag'))
    add(b('XDEL', 'lag', '5-0'))
    add(b('XINFO', 'GROUPS', 'lag'))
    add(b('XREADGROUP', 'GROUP', 'a', 'x', 'COUNT', '3', 'STREAMS', 'lag',
          '>'))
    add(b('XREADGROUP', 'GROUP', 'b', 'x', 'STREAMS', 'lag', '>'))
    add(b('XINFO', 'GROUPS', 'lag'))
    add(b('XDEL', 'lag', '1-0'))
    add(b('XTRIM', 'lag', 'MAXLEN', '6'))
    add(b('XINFO', 'GROUPS', 'lag'))
    add(b('XINFO', 'STREAM', 'lag'))
    add(b('XADD', 'lag', '11-0', 'f', 'v'))
    add(b('XINFO', 'GROUPS', 'lag'))
    # XSETID
    add(b('XSETID', 'lag', '10-0'))
    add(b('XSETID', 'lag', '20-0'))
    add(b('XSETID', 'lag', '30-0', 'ENTRIESADDED', '5'))
    add(b('XSETID', 'lag', '30-0', 'ENTRIESADDED', '50'))
    add(b('XSETID', 'lag', '30-0', 'ENTRIESADDED', '-1'))
    add(b('XSETID', 'lag', '30-0', 'MAXDELETEDID', '40-0'))
    add(b('XSETID', 'lag', '30-0', 'MAXDELETEDID', '25-0'))
    add(b('XSETID', 'lag', '24-0'))
    add(b('XSETID', 'lag', '30-0', 'FOO', '1'))
    add(b('XSETID', 'lag', '30-0', 'ENTRIESADDED'))
    add(b('XSETID', 'lag', '-'))
    add(b('XSETID', 'lag', 'x'))
    add(b('XSETID', 'missing', '1-1'))
    add(b('XSETID', 'str', '1-1'))
    for n in NUMS:
        add(b('XSETID', 'lag', '99-0', 'ENTRIESADDED', n))
        add(b('XSETID', 'lag', n + b'-0'))
    add(b('XINFO', 'STREAM', 'lag'))
    add(b('XINFO', 'GROUPS', 'lag'))
    add(b('XADD', 'lag', '*', 'f', 'v')[:3] + [b'98-0', b'f', b'v'])
    # COPY and RENAME carry the groups; DEL frees them.
    add(b('COPY', 's', 's2'))
    add(b('XINFO', 'GROUPS', 's2'))
    add(b('XPENDING', 's2', 'g'))
    add(b('RENAME', 's2', 's3'))
    add(b('XINFO', 'CONSUMERS', 's3', 'g'))
    add(b('DEL', 's3'))
    add(b('XGROUP', 'CREATE', 's3', 'g', '0', 'MKSTREAM'))
    add(b('XINFO', 'GROUPS', 's3'))
    add(b('XGROUP', 'DESTROY', 's', 'g'))
    add(b('XINFO', 'GROUPS', 's'))
    return c


def random_commands(seed, n):
    """Appends (with explicit ids, some too small), deletes, trims and
    reads over a few streams."""
    r = random.Random(seed)
    keys = [b'x1', b'x2', b'x3']
    nexts = {k: 1 for k in keys}
    out = []

    def rid(k):
        hi = nexts[k] + 3
        return b'%d-%d' % (r.randint(0, hi), r.randint(0, 3))

    groups = [b'g1', b'g2']
    cons = [b'c1', b'c2', b'c3']
    for k in keys:
        out.append([b'XGROUP', b'CREATE', k, b'g1', b'0', b'MKSTREAM'])
    for _ in range(n):
        k = r.choice(keys)
        x = r.random()
        if r.random() < 0.3:
            g, cn = r.choice(groups), r.choice(cons)
            y = r.random()
            if y < 0.3:
                out.append([b'XREADGROUP', b'GROUP', g, cn] +
                           ([b'COUNT', b'%d' % r.randint(1, 4)]
                            if r.random() < 0.7 else []) +
                           ([b'NOACK'] if r.random() < 0.1 else []) +
                           [b'STREAMS', k,
                            b'>' if r.random() < 0.7 else rid(k)])
            elif y < 0.5:
                out.append([b'XACK', k, g] +
                           [rid(k) for _ in range(r.randint(1, 3))])
            elif y < 0.6:
                out.append([b'XCLAIM', k, g, cn, b'0'] +
                           [rid(k) for _ in range(r.randint(1, 3))] +
                           r.choice([[], [b'JUSTID'], [b'FORCE'],
                                     [b'RETRYCOUNT', b'3']]))
            elif y < 0.7:
                out.append([b'XAUTOCLAIM', k, g, cn, b'0', rid(k), b'COUNT',
                            b'%d' % r.randint(1, 5)] +
                           ([b'JUSTID'] if r.random() < 0.3 else []))
            elif y < 0.8:
                out.append([b'XPENDING', k, g] +
                           ([b'-', b'+', b'%d' % r.randint(1, 10)] +
                            ([cn] if r.random() < 0.3 else [])
                            if r.random() < 0.6 else []))
            elif y < 0.85:
                out.append([b'XGROUP', b'CREATE', k, g,
                            r.choice([b'0', b'$', rid(k)]), b'MKSTREAM'])
            elif y < 0.88:
                out.append([b'XGROUP', b'SETID', k, g, r.choice([b'0', b'$',
                                                                  rid(k)])])
            elif y < 0.9:
                out.append([b'XGROUP', b'DELCONSUMER', k, g, cn])
            elif y < 0.92:
                out.append([b'XGROUP', b'DESTROY', k, g])
            else:
                out.append([b'XINFO', r.choice([b'GROUPS', b'STREAM']), k])
            continue
        if x < 0.4:
            if r.random() < 0.85:
                nexts[k] += r.randint(0, 2)
                id_ = r.choice([b'%d-*' % nexts[k], b'%d' % nexts[k],
                                b'%d-%d' % (nexts[k], r.randint(0, 5))])
            else:
                id_ = rid(k)
            trim = r.choice([[], [], [b'MAXLEN', b'%d' % r.randint(0, 40)],
                             [b'MAXLEN', b'~', b'%d' % r.randint(0, 300)],
                             [b'MINID', rid(k)],
                             [b'MINID', b'~', rid(k)]])
            fields = []
            for _ in range(r.randint(1, 3)):
                fields += [r.choice([b'a', b'b', b'c']),
                           b'%d' % r.randint(0, 999)]
            out.append([b'XADD', k] + trim + [id_] + fields)
        elif x < 0.5:
            out.append([b'XDEL', k] + [rid(k) for _ in range(r.randint(1, 3))])
        elif x < 0.55:
            out.append([b'XTRIM', k] + r.choice([
                [b'MAXLEN', b'%d' % r.randint(0, 60)],
                [b'MAXLEN', b'~', b'%d' % r.randint(0, 60)],
                [b'MINID', rid(k)]]))
        elif x < 0.75:
            s, e = rid(k), rid(k)
            cmd = r.choice([b'XRANGE', b'XREVRANGE'])
            if r.random() < 0.3:
                s = b'(' + s
            if r.random() < 0.3:
                e = b'(' + e
            if r.random() < 0.3:
                s, e = (b'-', b'+') if cmd == b'XRANGE' else (b'+', b'-')
            out.append([cmd, k, s, e] +
                       ([b'COUNT', b'%d' % r.randint(-1, 10)]
                        if r.random() < 0.5 else []))
        elif x < 0.9:
            ks = r.sample(keys, r.randint(1, 3))
            out.append([b'XREAD'] +
                       ([b'COUNT', b'%d' % r.randint(0, 5)]
                        if r.random() < 0.5 else []) +
                       [b'STREAMS'] + ks + [r.choice([rid(k), b'$', b'0'])
                                            for k in ks])
        elif x < 0.97:
            out.append([b'XLEN', k])
        else:
            out.append([b'DEL', k])
            nexts[k] = 1
    for k in keys:
        out.append([b'XRANGE', k, b'-', b'+'])
        out.append([b'XINFO', b'STREAM', k, b'FULL'])
    return out


def test_entries_corpus_resp2_and_resp3(server):
    with peer() as redis:
        for proto in (2, 3):
            compare(server, redis, corpus_entries(), proto, 'corpus')


def test_groups_corpus_resp2_and_resp3(server):
    with peer() as redis:
        for proto in (2, 3):
            compare(server, redis, corpus_groups(), proto, 'groups')


# Group and consumer name lengths around the storage's inline limit (400
# bytes) and LMDB's key limit (511), and far past both.
NAME_LENGTHS = [0, 1, 400, 401, 511, 4096, 100000]


def long_name(n, tail=b''):
    """n bytes: 'n's, ending in `tail`."""
    return (b'n' * n)[:max(0, n - len(tail))] + tail[:n]


def corpus_long_names():
    """Every command that takes a group or consumer name, with names of
    every length in NAME_LENGTHS, some sharing their first 400 bytes (so
    XINFO's name order is tested past the inline part)."""
    c = []
    add = c.append
    for i in range(1, 11):
        add(b('XADD', 'ln', '%d-1' % i, 'f', str(i)))
    names = []
    for n in NAME_LENGTHS:
        for tail in (b'', b'a', b'z'):
            nm = long_name(n, tail)
            if nm not in names:
                names.append(nm)
    # Created out of name order: the listing must sort.
    for g in reversed(names):
        add([b'XGROUP', b'CREATE', b'ln', g, b'0'])
    add([b'XGROUP', b'CREATE', b'ln', names[-1], b'0'])
    add(b('XINFO', 'GROUPS', 'ln'))
    for i, g in enumerate(names):
        cons = [long_name(n, t) for n in NAME_LENGTHS for t in (b'', b'q')]
        cons = cons[i % 3::3] + [names[-1]]
        for cn in cons:
            add([b'XGROUP', b'CREATECONSUMER', b'ln', g, cn])
            add([b'XREADGROUP', b'GROUP', g, cn, b'COUNT', b'1',
                 b'STREAMS', b'ln', b'>'])
        add([b'XGROUP', b'CREATECONSUMER', b'ln', g, cons[0]])
        add([b'XINFO', b'CONSUMERS', b'ln', g])
        add([b'XPENDING', b'ln', g])
        add([b'XPENDING', b'ln', g, b'-', b'+', b'100'])
        add([b'XPENDING', b'ln', g, b'-', b'+', b'100', cons[1]])
        add([b'XACK', b'ln', g, b'1-1', b'9-1'])
        add([b'XCLAIM', b'ln', g, cons[-1], b'0', b'2-1', b'3-1'])
        add([b'XCLAIM', b'ln', g, cons[2], b'0', b'4-1', b'JUSTID'])
        add([b'XAUTOCLAIM', b'ln', g, cons[0], b'0', b'0-0', b'COUNT', b'2'])
        add([b'XREADGROUP', b'GROUP', g, cons[0], b'STREAMS', b'ln', b'0'])
        add([b'XGROUP', b'DELCONSUMER', b'ln', g, cons[1]])
        add([b'XGROUP', b'DELCONSUMER', b'ln', g, cons[1]])
        add([b'XINFO', b'CONSUMERS', b'ln', g])
        add([b'XGROUP', b'SETID', b'ln', g, b'5-1', b'ENTRIESREAD', b'5'])
    add(b('XINFO', 'GROUPS', 'ln'))
    add(b('XINFO', 'STREAM', 'ln', 'FULL'))
    for g in names[1::2]:
        add([b'XGROUP', b'DESTROY', b'ln', g])
        add([b'XGROUP', b'DESTROY', b'ln', g])
        add([b'XINFO', b'CONSUMERS', b'ln', g])
        add([b'XREADGROUP', b'GROUP', g, b'c', b'STREAMS', b'ln', b'>'])
    add(b('XINFO', 'GROUPS', 'ln'))
    add(b('XINFO', 'STREAM', 'ln', 'FULL'))
    return c


def test_long_names_resp2_and_resp3(server):
    with peer() as redis:
        for proto in (2, 3):
            compare(server, redis, corpus_long_names(), proto, 'long names')


def corpus_big_trims():
    """Trims of more than a thousand entries (larder hands those to its
    lazy freer and moves the stream's floor): every read after them,
    pending entries of a group in the trimmed part (XPENDING, XCLAIM,
    XAUTOCLAIM report them deleted), XDEL and XSETID below the floor, an
    XADD after a stream was trimmed empty."""
    c = []
    add = c.append
    for key in ('t1', 't2', 't3'):
        for i in range(1, 5001):
            add(b('XADD', key, '%d-%d' % (i // 2 + 1, i % 2), 'n', str(i)))
    add(b('XGROUP', 'CREATE', 't1', 'g', '0'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'COUNT', '3', 'STREAMS', 't1',
          '>'))
    add(b('XDEL', 't1', '1000-0', '2400-1'))
    add(b('XTRIM', 't1', 'MAXLEN', '=', '2000'))
    add(b('XTRIM', 't2', 'MAXLEN', '~', '1500', 'LIMIT', '0'))
    add(b('XTRIM', 't3', 'MINID', '~', '2100-0'))
    add(b('XTRIM', 't3', 'MINID', '=', '2101-1'))
    for key in ('t1', 't2', 't3'):
        add(b('XLEN', key))
        add(b('XRANGE', key, '-', '+', 'COUNT', '3'))
        add(b('XREVRANGE', key, '3000', '-', 'COUNT', '3'))
        add(b('XRANGE', key, '1-0', '1502-0'))
        add(b('XREAD', 'COUNT', '2', 'STREAMS', key, '0'))
        add(b('XINFO', 'STREAM', key))
        add(b('XDEL', key, '5-0', '2600-0'))
        add(b('XLEN', key))
    add(b('XPENDING', 't1', 'g'))
    add(b('XPENDING', 't1', 'g', '-', '+', '10'))
    add(b('XREADGROUP', 'GROUP', 'g', 'alice', 'STREAMS', 't1', '0'))
    add(b('XAUTOCLAIM', 't1', 'g', 'bob', '0', '0-0', 'COUNT', '1'))
    add(b('XCLAIM', 't1', 'g', 'bob', '0', '2-1', '3-0'))
    add(b('XPENDING', 't1', 'g'))
    add(b('XINFO', 'STREAM', 't1', 'FULL', 'COUNT', '3'))
    add(b('COPY', 't1', 't1copy'))
    add(b('XRANGE', 't1copy', '-', '+', 'COUNT', '2'))
    add(b('XLEN', 't1copy'))
    # Trimmed empty; XSETID moves the last id back; an XADD below the
    # old entries.
    add(b('XTRIM', 't2', 'MAXLEN', '0'))
    add(b('XINFO', 'STREAM', 't2'))
    add(b('XSETID', 't2', '100-0'))
    add(b('XADD', 't2', '200-0', 'f', 'v'))
    add(b('XRANGE', 't2', '-', '+'))
    add(b('XLEN', 't2'))
    add(b('XTRIM', 't2', 'MAXLEN', '0'))
    add(b('XADD', 't2', '3000-0', 'f', 'v'))
    add(b('XRANGE', 't2', '-', '+'))
    # In one batch: appends, FLUSHALL, a new stream of the same name.
    add(b('XADD', 't3', '9000-0', 'f', 'v'))
    add(b('FLUSHALL'))
    add(b('XADD', 't3', '1-1', 'f', 'v'))
    add(b('XINFO', 'STREAM', 't3'))
    return c


def test_big_trims_match_redis(server):
    with peer() as redis:
        for proto in (2, 3):
            compare(server, redis, corpus_big_trims(), proto, 'big trims')


def corpus_ordinals():
    """Approximate trims after XSETID ENTRIESADDED moved entries-added
    on: Redis's nodes do not change with it, so neither may the entries
    a trim by whole nodes takes."""
    c = []
    add = c.append
    for i in range(1, 151):
        add(b('XADD', 'o', '%d-0' % i, 'f', 'v'))
    add(b('XSETID', 'o', '150-0', 'ENTRIESADDED', '1000'))
    for i in range(151, 211):
        add(b('XADD', 'o', '%d-0' % i, 'f', 'v'))
    add(b('XINFO', 'STREAM', 'o'))
    add(b('XTRIM', 'o', 'MAXLEN', '~', '10'))
    add(b('XLEN', 'o'))
    add(b('XSETID', 'o', '210-0', 'ENTRIESADDED', '5000000'))
    for i in range(211, 331):
        add(b('XADD', 'o', 'MAXLEN', '~', '20', '%d-0' % i, 'f', 'v'))
        add(b('XLEN', 'o'))
    return c


def test_trims_after_xsetid_match_redis(server):
    with peer() as redis:
        for proto in (2, 3):
            compare(server, redis, corpus_ordinals(), proto, 'ordinals')


def test_random_streams(server):
    with peer() as redis:
        for seed in SEEDS:
            cmds = random_commands(seed, RANDOM_COMMANDS)
            compare(server, redis, cmds, 2 if seed % 2 else 3,
                    'seed %d' % seed)


def stream_events_script():
    """Every stream command that emits keyspace events, and some that
    emit none (reads, acks, failed writes)."""
    return [b(*x) for x in (
        ('XADD', 's', '1-1', 'f', 'v'), ('XADD', 's', '2-1', 'f', 'v'),
        ('XADD', 's', 'MAXLEN', '1', '3-1', 'f', 'v'),
        ('XADD', 's', '1-1', 'f', 'v'), ('XADD', 'n', 'NOMKSTREAM', '*', 'f',
                                        'v'),
        ('XDEL', 's', '3-1', '9-9'), ('XDEL', 's', '9-9'),
        ('XADD', 's', '4-1', 'f', 'v'), ('XADD', 's', '5-1', 'f', 'v'),
        ('XTRIM', 's', 'MAXLEN', '1'), ('XTRIM', 's', 'MAXLEN', '1'),
        ('XGROUP', 'CREATE', 's', 'g', '0'),
        ('XGROUP', 'CREATE', 'mk', 'g', '$', 'MKSTREAM'),
        ('XGROUP', 'SETID', 's', 'g', '0'),
        ('XGROUP', 'CREATECONSUMER', 's', 'g', 'c1'),
        ('XGROUP', 'CREATECONSUMER', 's', 'g', 'c1'),
        ('XREADGROUP', 'GROUP', 'g', 'c2', 'STREAMS', 's', '>'),
        ('XREADGROUP', 'GROUP', 'g', 'c3', 'STREAMS', 's', '>'),
        ('XACK', 's', 'g', '5-1'), ('XRANGE', 's', '-', '+'),
        ('XREADGROUP', 'GROUP', 'g', 'c2', 'STREAMS', 's', '0'),
        ('XCLAIM', 's', 'g', 'c4', '0', '5-1', 'FORCE'),
        ('XAUTOCLAIM', 's', 'g', 'c5', '0', '0'),
        ('XGROUP', 'DELCONSUMER', 's', 'g', 'c1'),
        ('XGROUP', 'DELCONSUMER', 's', 'g', 'nobody'),
        ('XSETID', 's', '10-1'), ('XGROUP', 'DESTROY', 's', 'g'),
        ('XGROUP', 'DESTROY', 's', 'g'), ('DEL', 's'),
        ('MULTI',), ('XADD', 'm', '1-1', 'f', 'v'), ('XDEL', 'm', '1-1'),
        ('EXEC',))]


def test_stream_events_match_redis(server):
    """Keyspace notifications of every stream command, as redis-server
    sends them (types t and g, and new keys)."""
    import test_notify
    with peer() as redis:
        for flags in ('KEA', 'Kt', 'Etg', 'KEAn'):
            test_notify.compare(server, redis, stream_events_script(), flags,
                                what='flags %s' % flags)


def test_watch_and_multi(server):
    """WATCH sees XADD, XDEL, XTRIM and XSETID as it does in Redis; XREAD
    BLOCK inside EXEC answers at once; writes in EXEC are one
    transaction."""
    with peer() as redis:
        script = []
        for cmd in (['XADD', 'w', '9-1', 'f', 'v'], ['XDEL', 'w', '1-1'],
                    ['XTRIM', 'w', 'MAXLEN', '0'], ['XSETID', 'w', '99-1'],
                    ['XLEN', 'w'], ['XRANGE', 'w', '-', '+'],
                    ['XDEL', 'w', '5-5']):
            script += [b('DEL', 'w'), b('XADD', 'w', '1-1', 'f', 'v'),
                       b('WATCH', 'w'), b(*cmd), b('MULTI'),
                       b('XLEN', 'w'), b('EXEC')]
        script += [b('MULTI'), b('XREAD', 'BLOCK', '0', 'STREAMS', 'w', '$'),
                   b('XADD', 'w', '200-1', 'f', 'v'),
                   b('XREADGROUP', 'GROUP', 'nog', 'c', 'BLOCK', '0',
                     'STREAMS', 'w', '>'),
                   b('XGROUP', 'CREATE', 'w', 'g', '$'),
                   b('XREADGROUP', 'GROUP', 'g', 'c', 'BLOCK', '0',
                     'STREAMS', 'w', '>'), b('EXEC'),
                   b('XINFO', 'GROUPS', 'w')]
        for proto in (2, 3):
            compare(server, redis, script, proto, 'watch')


def two_workers(srv):
    """Two clients on different workers."""
    pool, got = [], {}
    try:
        while len(got) < 2:
            assert_true(len(pool) < 200, 'clients on 2 workers')
            c = srv.client()
            pool.append(c)
            for f in c.call('CLIENT', 'INFO').decode().split():
                if f.startswith('worker='):
                    got.setdefault(f, c)
        return list(got.values())
    finally:
        for c in pool:
            if c not in got.values():
                c.close()


def wait_blocked(srv, n, deadline=10.0):
    with srv.client() as c:
        wait_until(lambda: blocked_count(c) >= n, deadline,
                   '%d blocked' % n)


def blocked_count(c):
    m = re.search(rb'blocked_clients:(\d+)', c.call('INFO', 'clients'))
    return int(m.group(1)) if m else 0


def spread(srv, n, workers):
    """n clients placed round-robin over `workers` workers, with each
    one's worker index."""
    by, pool, out = {}, [], []
    try:
        while any(len(by.get(i, [])) < (n + workers - 1 - i) // workers
                  for i in range(workers)):
            assert_true(len(pool) < 400, 'clients on %d workers' % workers)
            c = srv.client()
            pool.append(c)
            m = re.search(rb'worker=(\d+)', c.call('CLIENT', 'INFO'))
            by.setdefault(int(m.group(1)), []).append(c)
        ws = sorted(by)
        for i in range(n):
            out.append((by[ws[i % workers]][i // workers], ws[i % workers]))
        return out
    finally:
        for c in pool:
            if c not in [x for x, _ in out]:
                c.close()


def test_group_readers_fifo_across_workers():
    """Readers of one consumer group blocked one after the other on three
    workers are served in that order, one entry each, whether the entries
    come in one transaction or in a burst of XADDs from any worker; a
    plain XREAD reader and another group's reader each see the first
    entry too."""
    larder_only()
    n = 6
    with Server(workers=3) as srv:
        placed = spread(srv, n + 3, 3)
        readers, (other, _), (plain, _), (pusher, _) = (placed[:n],
                                                       placed[n],
                                                       placed[n + 1],
                                                       placed[n + 2])
        pusher.call('XGROUP', 'CREATE', 'q', 'g', '$', 'MKSTREAM')
        pusher.call('XGROUP', 'CREATE', 'q', 'h', '$')
        try:
            for rnd in range(4):
                for i, (c, _) in enumerate(readers):
                    c.send('XREADGROUP', 'GROUP', 'g', 'c%d' % i, 'COUNT',
                           '1', 'BLOCK', '0', 'STREAMS', 'q', '>')
                    wait_blocked(srv, i + 1)
                other.send('XREADGROUP', 'GROUP', 'h', 'o', 'COUNT', '1',
                           'BLOCK', '0', 'STREAMS', 'q', '>')
                plain.send('XREAD', 'COUNT', '1', 'BLOCK', '0', 'STREAMS',
                           'q', '$')
                wait_blocked(srv, n + 2)
                ids = ['%d-%d' % (rnd + 1, i + 1) for i in range(n)]
                if rnd % 2 == 0:
                    pusher.call('MULTI')
                    for e in ids:
                        pusher.call('XADD', 'q', e, 'n', e)
                    assert_eq(pusher.call('EXEC'), [e.encode() for e in ids])
                else:
                    for e in ids:
                        pusher.send('XADD', 'q', e, 'n', e)
                    for e in ids:
                        assert_eq(pusher.read_reply(), e.encode())
                for i, (c, wk) in enumerate(readers):
                    e = ids[i].encode()
                    assert_eq(c.read_reply(), [[b'q', [[e, [b'n', e]]]]],
                              'round %d: reader %d on worker %d'
                              % (rnd, i, wk))
                first = ids[0].encode()
                assert_eq(other.read_reply(),
                          [[b'q', [[first, [b'n', first]]]]])
                assert_eq(plain.read_reply(),
                          [[b'q', [[first, [b'n', first]]]]])
                # h's reader takes the rest, so each round starts level.
                assert_eq(len(other.call('XREADGROUP', 'GROUP', 'h', 'o',
                                         'STREAMS', 'q', '>')[0][1]), n - 1)
        finally:
            for c, _ in placed:
                c.close()


def test_block_across_workers():
    """XREAD and XREADGROUP BLOCK on one worker wake on an XADD from
    another, without polling; waiters are served FIFO; a timeout answers
    null; a destroyed group, a deleted or overwritten stream wake their
    group readers with Redis's errors."""
    larder_only()
    with Server(workers=2) as srv:
        a, w = two_workers(srv)
        a2 = srv.client()
        w.call('XADD', 'bs', '1-1', 'f', 'v')
        # XREAD $ on a, XADD on w.
        a.send('XREAD', 'BLOCK', '0', 'STREAMS', 'bs', '$')
        wait_blocked(srv, 1)
        assert_eq(w.call('XADD', 'bs', '2-1', 'g', 'x'), b'2-1')
        assert_eq(a.read_reply(), [[b'bs', [[b'2-1', [b'g', b'x']]]]])
        # A stream that does not exist yet.
        a.send('XREAD', 'BLOCK', '0', 'STREAMS', 'later', '$')
        wait_blocked(srv, 1)
        w.call('XADD', 'later', '5-5', 'f', 'v')
        assert_eq(a.read_reply(), [[b'later', [[b'5-5', [b'f', b'v']]]]])
        # Two group readers, one entry each in the order they blocked.
        w.call('XGROUP', 'CREATE', 'bs', 'g', '$')
        a.send('XREADGROUP', 'GROUP', 'g', 'c1', 'COUNT', '1', 'BLOCK', '0',
               'STREAMS', 'bs', '>')
        wait_blocked(srv, 1)
        a2.send('XREADGROUP', 'GROUP', 'g', 'c2', 'COUNT', '1', 'BLOCK', '0',
                'STREAMS', 'bs', '>')
        wait_blocked(srv, 2)
        w.call('XADD', 'bs', '3-1', 'n', '1')
        assert_eq(a.read_reply(), [[b'bs', [[b'3-1', [b'n', b'1']]]]])
        w.call('XADD', 'bs', '4-1', 'n', '2')
        assert_eq(a2.read_reply(), [[b'bs', [[b'4-1', [b'n', b'2']]]]])
        assert_eq(w.call('XPENDING', 'bs', 'g')[3],
                  [[b'c1', b'1'], [b'c2', b'1']])
        # A timeout answers a null array.
        t0 = time.time()
        assert_eq(a.call('XREAD', 'BLOCK', '150', 'STREAMS', 'bs', '$'),
                  None)
        assert_true(time.time() - t0 >= 0.14, 'waited for the timeout')
        # XGROUP DESTROY wakes the group's readers with NOGROUP.
        a.send('XREADGROUP', 'GROUP', 'g', 'c1', 'BLOCK', '0', 'STREAMS',
               'bs', '>')
        wait_blocked(srv, 1)
        assert_eq(w.call('XGROUP', 'DESTROY', 'bs', 'g'), 1)
        assert_eq(a.read_reply(),
                  RespError('NOGROUP the consumer group this client was '
                            'blocked on no longer exists'))
        # A deleted or overwritten stream wakes its group readers too;
        # XREAD readers wait on (as Redis 7.0).
        for gone in (['DEL', 'gs'], ['SET', 'gs', 'x']):
            w.call('DEL', 'gs')
            w.call('XGROUP', 'CREATE', 'gs', 'g', '$', 'MKSTREAM')
            a.send('XREADGROUP', 'GROUP', 'g', 'c1', 'BLOCK', '0', 'STREAMS',
                   'gs', '>')
            a2.send('XREAD', 'BLOCK', '0', 'STREAMS', 'gs', '$')
            wait_blocked(srv, 2)
            w.call(*gone)
            assert_eq(a.read_reply(),
                      RespError('UNBLOCKED the stream key no longer exists'))
            w.call('DEL', 'gs')
            w.call('XADD', 'gs', '1-1', 'f', 'v')
            assert_eq(a2.read_reply(), [[b'gs', [[b'1-1', [b'f', b'v']]]]])
        # Many waiters, one XADD: every XREAD reader is served.
        readers = [srv.client() for _ in range(6)]
        for c in readers:
            c.send('XREAD', 'BLOCK', '0', 'STREAMS', 'bs', '$')
        wait_blocked(srv, len(readers))
        w.call('XADD', 'bs', '9-1', 'all', '1')
        for c in readers:
            assert_eq(c.read_reply(), [[b'bs', [[b'9-1', [b'all', b'1']]]]])
            c.close()
        for c in (a, a2, w):
            c.close()


def test_kill9_during_group_reads():
    """kill -9 of the whole tree while producers XADD and consumers
    XREADGROUP and XACK under `sync always`: after the restart every
    acknowledged XADD is in the stream, every acknowledged XACK is out of
    the PEL, and every acknowledged delivery not acked since is pending."""
    larder_only()
    import threading
    with Server(workers=2, args=['--sync', 'always']) as srv:
        with srv.client() as c:
            assert_eq(c.call('XGROUP', 'CREATE', 'q', 'g', '0', 'MKSTREAM'),
                      'OK')
        produced, delivered, acked, ack_sent = set(), set(), set(), set()
        stop = threading.Event()

        def producer(n):
            try:
                with srv.client() as c:
                    i = 0
                    while not stop.is_set():
                        r = c.call('XADD', 'q', '*', 'p', str(n), 'i', str(i))
                        if isinstance(r, bytes):
                            produced.add(r)
                        i += 1
            except Exception:         # the kill: reset, closed, refused
                pass

        def consumer(name):
            try:
                with srv.client() as c:
                    while not stop.is_set():
                        r = c.call('XREADGROUP', 'GROUP', 'g', name, 'COUNT',
                                   '5', 'STREAMS', 'q', '>')
                        if not r:
                            continue
                        ids = [e[0] for e in r[0][1]]
                        delivered.update(ids)
                        ack_sent.update(ids)
                        if c.call('XACK', 'q', 'g', *ids) == len(ids):
                            acked.update(ids)
            except Exception:         # the kill: reset, closed, refused
                pass

        threads = ([threading.Thread(target=producer, args=(n,))
                    for n in range(2)] +
                   [threading.Thread(target=consumer, args=('c%d' % n,))
                    for n in range(2)])
        for t in threads:
            t.start()
        wait_until(lambda: len(acked) >= 200, 30, 'acks before the kill')
        srv.kill9_tree()
        stop.set()
        for t in threads:
            t.join(10)
        srv.start()
        with srv.client() as c:
            have = set(e[0] for e in c.call('XRANGE', 'q', '-', '+'))
            pel = set(e[0] for e in c.call('XPENDING', 'q', 'g', '-', '+',
                                           str(10 ** 9)))
        assert_true(produced <= have, '%d acknowledged XADDs lost'
                    % len(produced - have))
        assert_true(not (acked & pel), '%d acked entries pending again'
                    % len(acked & pel))
        # An XACK whose reply the kill ate may or may not have happened.
        lost = (delivered - ack_sent) - pel
        assert_true(not lost, '%d deliveries lost from the PEL' % len(lost))
        assert_true(len(acked) >= 200 and len(produced) >= len(acked),
                    'the run did work')


ID = re.compile(rb'^(\d+)-(\d+)$')


BIG_TRIM_N = 40000
BIG_TRIM_KEEP = 1000
BIG_TRIM_ROUNDS = 3


def trimmed_views(c, key):
    """What a trimmed stream shows: length, first and last entry, and
    XINFO STREAM's counters."""
    info = c.call('XINFO', 'STREAM', key)
    d = dict(zip(info[0::2], info[1::2]))
    return (c.call('XLEN', key), c.call('XRANGE', key, '-', '+', 'COUNT', 1),
            c.call('XREVRANGE', key, '+', '-', 'COUNT', 1),
            d[b'first-entry'], d[b'entries-added'],
            d[b'max-deleted-entry-id'], len(c.call('XRANGE', key, '-', '+')))


def test_big_trim_survives_kills():
    """An exact and an approximate XTRIM of tens of thousands of entries
    (handed to the lazy freer) while the reaper is killed with SIGKILL at
    random moments of the freeing, and a worker killed right after it was
    sent the XTRIM: every view of the stream (XLEN, first and last entry,
    XINFO STREAM, a full XRANGE) is the trimmed one at once, after each
    kill and once the freer is done; a COPY taken before the freeing
    holds the live entries only."""
    larder_only()
    from test_crash import roles, wait_respawned, worker_of
    rnd = random.Random(13)
    with Server(workers=2) as srv:
        c = RawClient(srv.port)
        for r in range(BIG_TRIM_ROUNDS):
            key = 'big%d' % r
            for i in range(0, BIG_TRIM_N, 1000):
                c.raw_pipeline([[b'XADD', key, b'%d-1' % (j + 1), b'f', b'v']
                                for j in range(i, i + 1000)])
            how = (['MAXLEN', '~', BIG_TRIM_KEEP, 'LIMIT', '0'] if r % 2
                   else ['MAXLEN', BIG_TRIM_KEEP])
            if r == BIG_TRIM_ROUNDS - 1:
                # The worker dies right after it was sent the trim: it
                # happened whole or not at all.
                v = Client(srv.port)
                victim = worker_of(v)
                v.send('XTRIM', key, *how)
                os.kill(victim, 9)
                wait_respawned(srv, victim, 'worker')
                v.close()
                c.close()
                c = RawClient(srv.port)
                if c.call('XLEN', key) == BIG_TRIM_N:
                    c.call('XTRIM', key, *how)
            else:
                assert_true(c.call('XTRIM', key, *how) > BIG_TRIM_N // 2,
                            'XTRIM %s %r' % (key, how))
            want = trimmed_views(c, key)
            kept = want[0]
            assert_true(BIG_TRIM_KEEP <= kept < BIG_TRIM_KEEP + 200,
                        'XLEN after XTRIM %r: %d' % (how, kept))
            assert_eq(want[1][0][0], b'%d-1' % (BIG_TRIM_N - kept + 1),
                      'first entry after the trim')
            assert_eq(want[4], BIG_TRIM_N, 'entries-added')
            assert_eq(want[6], kept, 'entries a full XRANGE returns')
            assert_eq(c.call('COPY', key, key + 'copy'), 1)
            for _ in range(2):
                time.sleep(rnd.random() * 0.3)
                reaper = roles(srv)['reaper']
                os.kill(reaper, 9)
                wait_respawned(srv, reaper, 'reaper')
                assert_eq(trimmed_views(c, key), want, 'after a reaper kill')
            wait_until(lambda: c.call('INFO').find(
                b'lazyfree_pending_objects:0') >= 0, 30,
                'the lazy freer to finish')
            assert_eq(trimmed_views(c, key), want, 'after the freer')
            assert_eq(trimmed_views(c, key + 'copy'), want, 'the copy')
            assert_eq(c.call('XADD', key, '*', 'f', 'v') is not None, True)
            assert_eq(c.call('XLEN', key), kept + 1)
        c.close()


def test_auto_ids_increase(server):
    """`*` ids: milliseconds of the clock, increasing within a ms."""
    c = server.client()
    c.call('DEL', 'auto')
    ids = [c.call('XADD', 'auto', '*', 'f', str(i)) for i in range(200)]
    parsed = []
    for i in ids:
        m = ID.match(i)
        assert_true(m is not None, 'id %r' % i)
        parsed.append((int(m.group(1)), int(m.group(2))))
    assert_eq(parsed, sorted(set(parsed)), 'ids strictly increase')
    assert_eq(c.call('XLEN', 'auto'), 200)
    # A future explicit id: the next `*` continues from it.
    c.call('XADD', 'auto', '99999999999999-5', 'f', 'v')
    assert_eq(c.call('XADD', 'auto', '*', 'f', 'v'), b'99999999999999-6')
    c.close()


def test_stream_survives_restart(server):
    larder_only()
    c = server.client()
    c.call('DEL', 'keep')
    for i in range(50):
        c.call('XADD', 'keep', '%d-1' % (i + 1), 'f', str(i))
    c.call('XDEL', 'keep', '10-1')
    c.close()
    server.restart()
    c = server.client()
    assert_eq(c.call('XLEN', 'keep'), 49)
    assert_eq(c.call('XRANGE', 'keep', '9', '11'),
              [[b'9-1', [b'f', b'8']], [b'11-1', [b'f', b'10']]])
    assert_eq(c.call('XADD', 'keep', '50-1', 'f', 'v'),
              RespError('ERR The ID specified in XADD is equal or smaller '
                        'than the target stream top item'))
    c.close()


if __name__ == '__main__':
    main(globals())
