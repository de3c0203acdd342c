"""Checks DUMP and RESTORE of streams against redis-server 7.0: streams of every shape (one entry, many nodes, own and shared fields, integers, big and binary values, deleted and trimmed entries, empty, XSETID state, consumer groups with pending entries, consumers without, long and integer names, group and consumer names of 0 to 100,000 bytes) DUMPed by redis-server RESTORE into larder equal by XINFO STREAM FULL, XRANGE, XINFO GROUPS and XPENDING, and larder's DUMP of them RESTOREs into redis-server equal to the original (with Redis's own node layout where the original has no deleted entries); bad stream payloads get Redis's error."""

import os
import shutil
import struct
import tempfile

from dump_data import crc64, peer
from larder_test import RespError, Server, assert_eq, assert_true, main
from test_rdb import saved_rdb, tool


def xadd_many(key, n, fields=lambda i: [b'f', b'%d' % i], start=1):
    return [['XADD', key, '%d-1' % (start + i)] + fields(i)
            for i in range(n)]


def corpus():
    """(key, commands, layout): layout says the node layout is Redis's
    own (no deleted entries), so radix-tree sizes compare too."""
    big = b'v' * 5000
    out = [
        (b'x:one', [['XADD', 'x:one', '1-1', 'a', 'b']], True),
        (b'x:nodes', xadd_many('x:nodes', 250), True),
        (b'x:ownfields', xadd_many('x:ownfields', 30,
                                   lambda i: [b'k%d' % (i % 3), b'v'] *
                                   (1 + i % 2)), True),
        (b'x:ints', xadd_many('x:ints', 20, lambda i: [
            b'%d' % (i * 1000003), b'-%d' % i, b'9223372036854775807',
            b'-9223372036854775808', b'007', b'1.5']), True),
        (b'x:big', xadd_many('x:big', 5, lambda i: [b'f', big]), True),
        (b'x:bin', xadd_many('x:bin', 10, lambda i: [
            bytes(range(256)), b'\x00\r\n' * i, b'', b'empty']), True),
        (b'x:bytes', xadd_many('x:bytes', 300, lambda i: [
            b'field', b'x' * (i % 90)]), True),
        (b'x:deleted', xadd_many('x:deleted', 120) +
         [['XDEL', 'x:deleted', '3-1', '50-1', '101-1', '120-1']], False),
        (b'x:trimmed', xadd_many('x:trimmed', 300) +
         [['XTRIM', 'x:trimmed', 'MAXLEN', '150']], False),
        (b'x:empty', xadd_many('x:empty', 3) +
         [['XDEL', 'x:empty', '1-1', '2-1', '3-1']], False),
        (b'x:mkstream', [['XGROUP', 'CREATE', 'x:mkstream', 'g', '$',
                          'MKSTREAM']], True),
        (b'x:setid', xadd_many('x:setid', 4) +
         [['XSETID', 'x:setid', '99-7', 'ENTRIESADDED', '1000',
           'MAXDELETEDID', '2-0']], True),
    ]
    g = [['XADD', 'x:groups', '%d-%d' % (1 + i // 3, i % 3), 'f', str(i)]
         for i in range(40)]
    g += [['XGROUP', 'CREATE', 'x:groups', 'g1', '0'],
          ['XGROUP', 'CREATE', 'x:groups', '12345', '0'],
          ['XGROUP', 'CREATE', 'x:groups', 'n' * 300, '5-1',
           'ENTRIESREAD', '3'],
          ['XGROUP', 'CREATE', 'x:groups', 'late', '$'],
          ['XGROUP', 'CREATE', 'x:groups', 'unknown', '7-1'],
          ['XREADGROUP', 'GROUP', 'g1', 'alice', 'COUNT', '5', 'STREAMS',
           'x:groups', '>'],
          ['XREADGROUP', 'GROUP', 'g1', 'bob', 'COUNT', '7', 'STREAMS',
           'x:groups', '>'],
          ['XREADGROUP', 'GROUP', 'g1', 'c' * 200, 'COUNT', '3', 'NOACK',
           'STREAMS', 'x:groups', '>'],
          ['XGROUP', 'CREATECONSUMER', 'x:groups', 'g1', 'idle'],
          ['XACK', 'x:groups', 'g1', '1-1', '2-2'],
          ['XCLAIM', 'x:groups', 'g1', 'alice', '0', '3-0', 'RETRYCOUNT',
           '9'],
          ['XREADGROUP', 'GROUP', '12345', '42', 'STREAMS', 'x:groups',
           '>'],
          ['XDEL', 'x:groups', '4-1'],
          ['XREADGROUP', 'GROUP', 'n' * 300, 'z', 'COUNT', '2', 'STREAMS',
           'x:groups', '>']]
    out.append((b'x:groups', g, False))
    # Group and consumer names past LMDB's key limit, some sharing their
    # first 400 bytes (larder keeps 400 inline).
    ln, seen = xadd_many('x:longnames', 12), set()
    for i, n in enumerate([0, 1, 400, 401, 511, 4096, 100000]):
        for tail in (b'', b'z'):
            name = (b'n' * n)[:max(0, n - len(tail))] + tail[:n]
            if name in seen:
                continue
            seen.add(name)
            ln += [['XGROUP', 'CREATE', 'x:longnames', name, '0'],
                   ['XREADGROUP', 'GROUP', name, name, 'COUNT', '2',
                    'STREAMS', 'x:longnames', '>'],
                   ['XREADGROUP', 'GROUP', name, b'c' * (n + i), 'COUNT',
                    '1', 'STREAMS', 'x:longnames', '>']]
    out.append((b'x:longnames', ln, False))
    return out


def full(c, key):
    """XINFO STREAM FULL as a dict, Redis's radix-tree sizes apart."""
    flat = c.call('XINFO', 'STREAM', key, 'FULL')
    assert_true(isinstance(flat, list), 'XINFO STREAM FULL %r: %r'
                % (key, flat))
    d = dict(zip(flat[0::2], flat[1::2]))
    radix = (d.pop(b'radix-tree-keys'), d.pop(b'radix-tree-nodes'))
    return d, radix


def views(c, key):
    d, radix = full(c, key)
    groups = c.call('XINFO', 'GROUPS', key)
    pending = [c.call('XPENDING', key, gr[1]) for gr in groups]
    return {'full': d, 'range': c.call('XRANGE', key, '-', '+'),
            'rev': c.call('XREVRANGE', key, '+', '-', 'COUNT', '7'),
            'len': c.call('XLEN', key), 'groups': groups,
            'pending': pending, 'type': c.call('TYPE', key)}, radix


def load(c, items):
    for key, cmds, _ in items:
        for cmd in cmds:
            reply = c.call(*cmd)
            assert_true(not isinstance(reply, RespError),
                        'loading %r: %r -> %r' % (key, cmd, reply))


def test_redis_streams_restore_in_larder_and_back(larder):
    """redis-server's DUMP of each stream RESTOREs into larder with every
    view equal; larder's DUMP of it RESTOREs into redis-server equal to
    the original, with Redis's node layout where it had no deletions."""
    items = corpus()
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(rc, items)
        for key, _, layout in items:
            payload = rc.call('DUMP', key)
            assert_true(isinstance(payload, bytes), 'redis DUMP %r' % key)
            assert_eq(lc.call('RESTORE', key, 0, payload), 'OK',
                      'RESTORE of redis\'s %r into larder' % key)
            want, want_radix = views(rc, key)
            got, _ = views(lc, key)
            for k in want:
                assert_eq(got[k], want[k], '%s of %r' % (k, key))
            back = lc.call('DUMP', key)
            assert_true(isinstance(back, bytes), 'larder DUMP %r' % key)
            rc.call('SELECT', 1)
            assert_eq(rc.call('RESTORE', key, 0, back), 'OK',
                      'RESTORE of larder\'s %r into redis' % key)
            again, radix = views(rc, key)
            rc.call('SELECT', 0)
            for k in want:
                assert_eq(again[k], want[k], 'round trip: %s of %r' % (k, key))
            if layout:
                assert_eq(radix, want_radix, 'node layout of %r' % key)


def test_larder_streams_restore_in_redis(larder):
    """Streams built in larder DUMP into redis-server equal to the same
    commands run there; and RESTORE into larder of its own DUMP, with
    REPLACE, TTL and a key of another type in the way, answers as Redis."""
    items = corpus()
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(lc, items)
        load(rc, items)
        rc.call('SELECT', 1)
        for key, _, layout in items:
            payload = lc.call('DUMP', key)
            assert_true(isinstance(payload, bytes), 'DUMP %r' % key)
            assert_eq(rc.call('RESTORE', key, 0, payload), 'OK',
                      'RESTORE of larder\'s %r into redis' % key)
            got, radix = views(rc, key)
            rc.call('SELECT', 0)
            want, want_radix = views(rc, key)
            rc.call('SELECT', 1)
            # Delivery and seen times differ between two servers' runs.
            for k in ('range', 'len', 'type'):
                assert_eq(got[k], want[k], '%s of %r' % (k, key))
            if layout:
                assert_eq(radix, want_radix, 'node layout of %r' % key)
            mine, _ = views(lc, key)
            assert_eq(got, mine, 'larder\'s %r in redis' % key)
        rc.call('SELECT', 0)
        payload = lc.call('DUMP', 'x:groups')
        for c in (lc, rc):
            c.call('SET', 'str', 'v')
        for args in (['x:groups', 0, payload],
                     ['str', 0, payload],
                     ['str', 5000, payload, 'REPLACE'],
                     ['x:new', 1, payload, 'ABSTTL']):
            assert_eq(lc.call('RESTORE', *args), rc.call('RESTORE', *args),
                      'RESTORE %r' % (args[:1] + args[3:]))
        for c in (lc, rc):
            assert_eq(c.call('TYPE', 'str'), 'stream', 'replaced')
            assert_true(4000 < c.call('PTTL', 'str') <= 5000, 'ttl')
            assert_eq(c.call('EXISTS', 'x:new'), 0, 'past absttl')
        assert_eq(views(lc, 'str')[0]['range'], views(rc, 'str')[0]['range'],
                  'replaced stream')


def test_rdb_import_and_export_carry_streams(larder):
    """redis-server's RDB holding the streams imports into larder
    (--import-rdb) with every view equal; larder's export (--export-rdb)
    loads into redis-server with every view equal again."""
    items = corpus()
    d = tempfile.mkdtemp(prefix='larder-xrdb-')
    back = tempfile.mkdtemp(prefix='larder-xrdb-back-')
    try:
        with peer() as r:
            with r.client() as rc:
                load(rc, items)
                rc.call('SET', 'plain', 'v')
                want = {k: views(rc, k)[0] for k, _, _ in items}
            rc_, err = tool(d, '--import-rdb', saved_rdb(r))
            assert_eq(rc_, 0, 'import: ' + err)
            assert_true('imported %d keys' % (len(items) + 1) in err, err)
        with Server(dir=d) as s, s.client() as lc:
            for k, _, _ in items:
                assert_eq(views(lc, k)[0], want[k], 'imported %r' % k)
        out = os.path.join(back, 'dump.rdb')
        rc_, err = tool(d, '--export-rdb', out)
        assert_eq(rc_, 0, 'export: ' + err)
        with peer(dir=back) as r2, r2.client() as rc2:
            assert_eq(rc2.call('GET', 'plain'), b'v', 'the string too')
            for k, _, _ in items:
                assert_eq(views(rc2, k)[0], want[k], 'exported %r' % k)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(back, ignore_errors=True)


def trim_script(key):
    """Appends with approximate trims and reads of what is left."""
    out = []
    for i in range(40):
        out.append(['XADD', key, '*', 'f', str(i)])
    for n in (300, 200, 120, 60, 10):
        out += [['XTRIM', key, 'MAXLEN', '~', str(n)], ['XLEN', key],
                ['XADD', key, 'MAXLEN', '~', str(n), '*', 'g', 'h'],
                ['XLEN', key]]
    return out


def test_restored_streams_trim_as_redis(larder):
    """A stream RESTOREd from redis-server's DUMP (or loaded from its
    RDB) keeps Redis's nodes: approximate trims and the XADDs after them
    take the same entries on larder as on a redis-server that RESTOREd
    the same payload, for streams with deleted entries inside nodes,
    nodes emptied by XDEL, and entries-added moved by XSETID."""
    histories = {
        b'h:plain': xadd_many('h:plain', 250),
        b'h:exact': xadd_many('h:exact', 250) +
        [['XTRIM', 'h:exact', 'MAXLEN', '130']],
        b'h:holes': xadd_many('h:holes', 320) +
        [['XDEL', 'h:holes'] + ['%d-1' % i for i in range(90, 180, 3)]],
        b'h:setid': xadd_many('h:setid', 150) +
        [['XSETID', 'h:setid', '150-1', 'ENTRIESADDED', '10000']],
        b'h:big': xadd_many('h:big', 60, lambda i: [b'f', b'v' * 300]),
    }
    with peer() as r, larder.client() as lc, r.client() as rc:
        for key, cmds in histories.items():
            for cmd in cmds:
                rc.call(*cmd)
            payload = rc.call('DUMP', key)
            copy = key + b':r'
            assert_eq(lc.call('RESTORE', copy, 0, payload), 'OK')
            assert_eq(rc.call('RESTORE', copy, 0, payload), 'OK')
            for cmd in trim_script(copy):
                if cmd[0] == 'XADD':
                    # Same ids on both: take redis's.
                    got = rc.call(*cmd)
                    cmd = cmd[:-3] + [got] + cmd[-2:]
                    assert_eq(lc.call(*cmd), got, '%r %r' % (key, cmd))
                else:
                    assert_eq(lc.call(*cmd), rc.call(*cmd),
                              '%r: %r' % (key, cmd))


def frame(body, version=10):
    body += struct.pack('<H', version)
    return body + struct.pack('<Q', crc64(body))


def test_bad_stream_payloads(larder):
    """Truncated stream payloads, a length that is not the entries', a
    pending entry of no consumer and one in no group's list get Redis's
    error and leave no key."""
    with peer() as r, larder.client() as lc, r.client() as rc:
        load(rc, corpus())
        good = rc.call('DUMP', 'x:groups')[:-10]
        cases = [frame(good[:n]) for n in (1, 2, 5, 30, len(good) // 2,
                                           len(good) - 1)]
        one = rc.call('DUMP', 'x:one')[:-10]
        # length 1 -> 2 (the byte after the node): not the entries'.
        nodes_end = one.index(b'\x01\x01', 3)
        cases.append(frame(one[:nodes_end] + b'\x02' + one[nodes_end + 1:]))
        for i, p in enumerate(cases):
            want = rc.call('RESTORE', 'bad', 0, p)
            got = lc.call('RESTORE', 'bad', 0, p)
            if i < 6:
                assert_eq(got, want, 'bad payload %d' % i)
            assert_eq(got, RespError('ERR Bad data format'),
                      'bad payload %d' % i)
            assert_eq(lc.call('EXISTS', 'bad'), 0, 'no key %d' % i)


if __name__ == '__main__':
    main(globals())
