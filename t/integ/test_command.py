"""Checks COMMAND (INFO, DOCS, LIST with its filters, COUNT, GETKEYS, GETKEYSANDFLAGS) and the dispatcher's subcommand errors against a redis-server started by each test: the same replies, RESP2 and RESP3, for every command and subcommand larder has."""

import re
import shutil

from larder_test import (Client, RespError, Server, Skip, assert_eq,
                         assert_true, larder_only, main, short)

# COMMAND DOCS fields redis-server has and larder's table does not carry.
DOCS_NOT_CARRIED = (b'arguments',)


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile]


def peer():
    """A fresh redis-server (the caller stops it: use `with`)."""
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    return RedisPeer()


def client(server, proto):
    c = server.client()
    if proto == 3:
        assert_true(not isinstance(c.hello(3), RespError), 'HELLO 3')
    return c


def call_raw(c, *args):
    """(decoded reply, its exact bytes)."""
    # Drop what was read already, so the client's buffer compaction
    # (past 64 KiB read) cannot move the reply's start while it is read.
    del c.buf[:c.pos]
    c.pos = 0
    c.send(*args)
    start = c.pos
    reply = c.read_reply()
    return reply, bytes(c.buf[start:c.pos])


def version(v):
    return tuple(int(x) for x in re.findall(rb'\d+', v)[:3])


def reference_version(r):
    info = r.call('INFO', 'server')
    return version(re.search(rb'redis_version:([0-9.]+)', info).group(1))


def docs_map(reply, name):
    """One command's docs as a dict, from a COMMAND DOCS reply in either
    protocol, without the fields larder does not carry."""
    if isinstance(reply, list):                 # RESP2: flat pairs
        reply = dict(zip(reply[0::2], reply[1::2]))
    d = reply[name]
    if isinstance(d, list):
        d = dict(zip(d[0::2], d[1::2]))
    d = dict(d)
    for k in DOCS_NOT_CARRIED:
        d.pop(k, None)
    subs = d.pop(b'subcommands', None)
    if subs is not None:            # each is compared on its own
        d[b'subcommands'] = sorted(subs.keys() if isinstance(subs, dict)
                                   else subs[0::2])
    return d


def names_of(larder):
    """larder's COMMAND LIST: every command and subcommand."""
    with larder.client() as c:
        return [n.decode() for n in c.call('COMMAND', 'LIST')]


def newer_than(larder, names, ref):
    """The names larder has that the reference server lacks must be of a
    later Redis version than the reference (CLIENT SETINFO is 7.2)."""
    out = set()
    with larder.client() as c:
        for n in names:
            d = docs_map(c.call('COMMAND', 'DOCS', n), n.encode())
            out.add(n)
            assert_true(version(d[b'since']) > ref,
                        '%s: not in the reference server (%s) but since %s'
                        % (n, '.'.join(map(str, ref)), d[b'since']))
    return out


def split_known(larder, r):
    """(names both have, names only larder has: newer commands)."""
    names = names_of(larder)
    with r.client() as rc:
        theirs = set(n.decode() for n in rc.call('COMMAND', 'LIST'))
        ref = reference_version(rc)
    only = [n for n in names if n not in theirs]
    newer_than(larder, only, ref)
    return [n for n in names if n in theirs], set(only)


def info_entry_equal(mine, theirs, only, what):
    """COMMAND INFO entries: equal, but a container lists only the
    subcommands larder has (Redis's other subcommands are left out)."""
    if mine is None or theirs is None:
        assert_eq(mine, theirs, what)
        return
    assert_eq(mine[:9], theirs[:9], what)
    if not mine[9] and not theirs[9]:
        return
    subs = dict((e[0], e) for e in theirs[9])
    for e in mine[9]:
        if e[0].decode() in only:
            continue
        assert_true(e[0] in subs, '%s: %r unknown to redis' % (what, e[0]))
        info_entry_equal(e, subs[e[0]], only, '%s %s' % (what, e[0]))


def test_info_matches_redis(s):
    with peer() as r:
        known, only = split_known(s, r)
        for proto in (2, 3):
            with client(s, proto) as lc, client(r, proto) as rc:
                for name in known + ['nosuch', 'get|x', 'client|nosuch']:
                    mine, mine_raw = call_raw(lc, 'COMMAND', 'INFO', name)
                    theirs, theirs_raw = call_raw(rc, 'COMMAND', 'INFO', name)
                    what = 'RESP%d COMMAND INFO %s' % (proto, name)
                    assert_eq(len(mine), 1, what)
                    info_entry_equal(mine[0], theirs[0], only, what)
                    if mine[0] is None or not theirs[0][9]:
                        # no subcommands: the very same bytes (the order
                        # of flags, categories and key specs included)
                        assert_eq(mine_raw, theirs_raw, what)
                # several names at once, unknown ones as nulls
                many = ['get', 'nosuch', 'client|list', 'zunionstore']
                mine = lc.call('COMMAND', 'INFO', *many)
                theirs = rc.call('COMMAND', 'INFO', *many)
                for i, name in enumerate(many):
                    info_entry_equal(mine[i], theirs[i], only,
                                     'COMMAND INFO ... %s' % name)


def test_all_commands_match_info(s):
    """COMMAND and COMMAND INFO without names list every top-level command
    (COUNT of them), each as COMMAND INFO <name> describes it."""
    names = names_of(s)
    top = [n for n in names if '|' not in n]
    for proto in (2, 3):
        with client(s, proto) as c:
            count = c.call('COMMAND', 'COUNT')
            assert_eq(count, len(top), 'COMMAND COUNT')
            for args in (('COMMAND',), ('COMMAND', 'INFO')):
                full = c.call(*args)
                assert_eq(sorted(e[0].decode() for e in full), sorted(top),
                          ' '.join(args))
                for e in full:
                    assert_eq(e, c.call('COMMAND', 'INFO', e[0])[0],
                              '%s: %r' % (' '.join(args), e[0]))
            docs = c.call('COMMAND', 'DOCS')
            keys = docs.keys() if isinstance(docs, dict) else docs[0::2]
            assert_eq(sorted(k.decode() for k in keys), sorted(top),
                      'COMMAND DOCS')


def test_docs_match_redis(s):
    with peer() as r:
        known, only = split_known(s, r)
        for proto in (2, 3):
            with client(s, proto) as lc, client(r, proto) as rc:
                for name in known:
                    key = name.encode()
                    mine = docs_map(lc.call('COMMAND', 'DOCS', name), key)
                    theirs = docs_map(rc.call('COMMAND', 'DOCS', name), key)
                    if b'subcommands' in mine:
                        mine[b'subcommands'] = [
                            n for n in mine[b'subcommands']
                            if n.decode() not in only]
                        # Redis has more subcommands than larder serves
                        assert_true(set(mine[b'subcommands']) <=
                                    set(theirs[b'subcommands']),
                                    'RESP%d DOCS %s subcommands' % (proto,
                                                                    name))
                        theirs[b'subcommands'] = mine[b'subcommands']
                    assert_eq(mine, theirs, 'RESP%d COMMAND DOCS %s'
                              % (proto, name))
                # unknown names are left out
                args = ('COMMAND', 'DOCS', 'nosuch', 'get', 'client|nosuch')
                mine, theirs = lc.call(*args), rc.call(*args)
                assert_eq(docs_map(mine, b'get'), docs_map(theirs, b'get'),
                          'COMMAND DOCS nosuch get')
                assert_eq(len(mine), len(theirs), 'COMMAND DOCS nosuch get')


def test_list_and_filters_match_redis(s):
    with peer() as r:
        known, only = split_known(s, r)
        mine_all = set(names_of(s))
        with r.client() as rc:
            categories = [x.decode() for x in rc.call('ACL', 'CAT')]
        assert_true(len(categories) > 10, 'ACL CAT: %r' % (categories,))
        filters = ([('ACLCAT', cat) for cat in categories] +
                   [('ACLCAT', 'CONNECTION'), ('ACLCAT', 'nosuch'),
                    ('ACLCAT', '@read')] +
                   [('PATTERN', p) for p in
                    ('*', 'client*', '*|list', 'CLIENT|LIST', 'z*', '?et',
                     '[sg]et*', '*|*', 'command*', 'nosuch')] +
                   [('MODULE', 'x')])
        for proto in (2, 3):
            with client(s, proto) as lc, client(r, proto) as rc:
                for kind, arg in filters:
                    args = ('COMMAND', 'LIST', 'FILTERBY', kind, arg)
                    mine = lc.call(*args)
                    theirs = rc.call(*args)
                    what = 'RESP%d %s' % (proto, ' '.join(args))
                    assert_true(isinstance(mine, list), what)
                    assert_eq(len(set(mine)), len(mine), what + ' (dups)')
                    mine = set(n.decode() for n in mine)
                    theirs = set(n.decode() for n in theirs)
                    assert_eq(mine - only, theirs & mine_all, what)
                for args in (('COMMAND', 'LIST', 'x'),
                             ('COMMAND', 'LIST', 'FILTERBY'),
                             ('COMMAND', 'LIST', 'FILTERBY', 'FOO', 'x'),
                             ('COMMAND', 'LIST', 'FILTERBY', 'PATTERN', 'a',
                              'b')):
                    assert_eq(lc.call(*args), rc.call(*args), ' '.join(args))
            # every name larder lists is Redis's (or newer)
            assert_eq(sorted(mine_all - only), sorted(known), 'COMMAND LIST')


GETKEYS_LINES = [
    # issue 14 (i14a): SORT's keys found by its own rule, and the others
    ('sort', 'k'), ('sort', 'k', 'STORE', 'd'),
    ('sort', 'k', 'LIMIT', '0', '1', 'GET', 'x', 'STORE', 'd', 'BY', 'y'),
    ('sort', 'k', 'store', 'd1', 'store', 'd2'), ('sort', 'k', 'GET', 'store'),
    ('sort_ro', 'k', 'BY', 'w*'), ('lcs', 'a', 'b'),
    ('zintercard', '2', 'a', 'b'), ('bitop', 'and', 'd', 'a', 'b'),
    ('pfmerge', 'd', 'a', 'b'), ('pfcount', 'a', 'b'), ('pfdebug', 'x', 'k'),
    ('georadius', 'k', '0', '0', '1', 'km', 'STORE', 'd'),
    ('georadiusbymember', 'k', 'm', '1', 'km', 'STOREDIST', 'd'),
    ('geosearchstore', 'd', 's', 'FROMLONLAT', '0', '0', 'BYRADIUS', '1', 'm'),
    ('object', 'encoding', 'k'), ('memory', 'usage', 'k'),
    ('get', 'k'), ('set', 'k', 'v'), ('set', 'k', 'v', 'get'),
    ('set', 'k', 'v', 'EX', '10', 'GET'), ('set', 'k', 'v', 'nx'),
    ('mset', 'a', '1', 'b', '2'), ('mset', 'a', '1', 'b'), ('mset', 'a'),
    ('msetnx', 'a', '1'), ('setnx', 'k', 'v'), ('mget', 'a', 'b', 'c'),
    ('del', 'a', 'b', 'c'),
    ('exists', 'a', 'b'), ('rename', 'a', 'b'), ('copy', 'a', 'b', 'db', '1'),
    ('getex', 'a', 'persist'), ('getdel', 'a'), ('hset', 'h', 'f', 'v'),
    ('smove', 'a', 'b', 'm'), ('sinterstore', 'd', 'a', 'b'),
    ('sintercard', '2', 'a', 'b', 'limit', '1'), ('sintercard', '0', 'a'),
    ('sintercard', '3', 'a', 'b'), ('lmove', 'a', 'b', 'left', 'right'),
    ('rpoplpush', 'a', 'b'), ('lmpop', '2', 'a', 'b', 'left'),
    ('lmpop', '1', 'a', 'left', 'count', '2'), ('lmpop', 'x', 'a', 'left'),
    ('lmpop', '-1', 'a', 'left'), ('lmpop', '5', 'a', 'b', 'left'),
    ('zmpop', '1', 'a', 'min'), ('zunion', '2', 'a', 'b', 'weights', '1', '2'),
    ('zunion', '0', 'a'), ('zunionstore', 'd', '2', 'a', 'b'),
    ('zunionstore', 'd', '0', 'a'), ('zinterstore', 'd', '3', 'a', 'b'),
    ('zdiffstore', 'd', '1', 'a'), ('zrangestore', 'd', 's', '0', '-1'),
    ('ping',), ('ping', 'x'), ('nosuch', 'x'), ('get',), ('get', 'a', 'b'),
    ('client', 'list'), ('client', 'nosuch'), ('client',),
    ('config', 'get', 'x'), ('ssubscribe', 'a'), ('spublish', 'a', 'b'),
    ('subscribe', 'a'), ('command', 'getkeys', 'get', 'a'), ('GET', 'K'),
]


def test_getkeys_match_redis(s):
    with peer() as r:
        for proto in (2, 3):
            with client(s, proto) as lc, client(r, proto) as rc:
                for sub in ('GETKEYS', 'GETKEYSANDFLAGS'):
                    for line in GETKEYS_LINES:
                        args = ('COMMAND', sub) + line
                        mine, mine_raw = call_raw(lc, *args)
                        theirs, theirs_raw = call_raw(rc, *args)
                        what = 'RESP%d %s' % (proto, ' '.join(args))
                        assert_eq(mine, theirs, what)
                        assert_eq(mine_raw, theirs_raw, what)
                    for args in (('COMMAND', sub), ('COMMAND', sub, 'get')):
                        assert_eq(lc.call(*args), rc.call(*args),
                                  ' '.join(args))


# Lines whose replies do not depend on the server: the dispatcher's
# unknown-subcommand and arity errors for containers and subcommands.
SUBCOMMAND_LINES = [
    ('CLIENT',), ('CLIENT', 'FOO'), ('client', 'setname'),
    ('CLIENT', 'GETNAME', 'x'), ('CLIENT', 'NO-EVICT'),
    ('CLIENT', 'NO-EVICT', 'maybe'), ('CLIENT', 'HELP', 'x'),
    ('CLIENT', 'SETNAME', 'a b'), ('CLIENT', 'SETNAME', 'n1'),
    ('CLIENT', 'GETNAME'), ('CONFIG',), ('CONFIG', 'GET'),
    ('CONFIG', 'FOO'), ('CONFIG', 'SET', 'a'), ('CONFIG', 'RESETSTAT', 'x'),
    ('COMMAND', 'COUNT', 'x'), ('COMMAND', 'FOO'), ('COMMAND', 'GETKEYS'),
    ('COMMAND', 'HELP', 'x'), ('PUBSUB',), ('PUBSUB', 'FOO'),
    ('PUBSUB', 'NUMPAT', 'x'), ('PUBSUB', 'HELP', 'x'),
    ('PUBSUB', 'CHANNELS', 'a', 'b'), ('PUBSUB', 'NUMSUB'),
    ('PUBSUB', 'NUMPAT'), ('CLIENT|LIST',),
    # MODULE: none loaded, loading refused as Redis refuses it by default
    ('MODULE',), ('MODULE', 'HELP'), ('MODULE', 'LIST'),
    ('MODULE', 'LIST', 'x'), ('MODULE', 'NOSUCH'), ('MODULE', 'LOAD'),
    ('MODULE', 'LOAD', '/nonexistent.so'),
    ('MODULE', 'LOADEX', '/x.so', 'CONFIG', 'a', 'b', 'ARGS', 'c'),
    ('MODULE', 'UNLOAD'), ('MODULE', 'UNLOAD', 'json'),
    ('MODULE', 'HELP', 'x'), ('BGREWRITEAOF', 'x'),
]


def test_subcommand_errors_match_redis(s):
    with peer() as r:
        for proto in (2, 3):
            with client(s, proto) as lc, client(r, proto) as rc:
                for line in SUBCOMMAND_LINES:
                    assert_eq(lc.call(*line), rc.call(*line),
                              'RESP%d %s' % (proto, ' '.join(line)))
                # inside MULTI an unknown subcommand or a subcommand's
                # arity error is refused at once and aborts EXEC
                for line in (('CLIENT', 'FOO'), ('CLIENT', 'SETNAME')):
                    seq = [('MULTI',), ('CLIENT', 'GETNAME'), line, ('EXEC',)]
                    assert_eq(lc.pipeline(seq), rc.pipeline(seq),
                              'MULTI %s EXEC' % ' '.join(line))
                # queued subcommands run at EXEC as themselves
                seq = [('MULTI',), ('CLIENT', 'SETNAME', 'm1'),
                       ('CLIENT', 'GETNAME'), ('PUBSUB', 'NUMPAT'),
                       ('EXEC',)]
                assert_eq(lc.pipeline(seq), rc.pipeline(seq),
                          'MULTI subcommands EXEC')


SUBSCRIBED_LINES = [
    ('GET', 'x'), ('CLIENT', 'GETNAME'), ('CLIENT', 'FOO'),
    ('CLIENT', 'SETNAME'), ('CONFIG', 'GET', 'x'), ('PUBSUB', 'NUMPAT'),
    ('PUBSUB', 'NUMPAT', 'x'), ('PUBSUB', 'CHANNELS'), ('COMMAND', 'COUNT'),
    ('COMMAND',), ('ECHO', 'x'), ('PING',), ('PING', 'x'),
    ('SUBSCRIBE', 'b'), ('PSUBSCRIBE', 'p*'), ('UNSUBSCRIBE', 'b'),
    ('PUNSUBSCRIBE', 'p*'), ('SSUBSCRIBE', 's'), ('SUNSUBSCRIBE', 's'),
    ('MULTI',), ('PUBLISH', 'a', 'x'), ('RESET',), ('GET', 'x'),
]


def test_subscribed_mode_matches_redis(s):
    """RESP2 subscribed mode admits only the rows flagged for it, and names
    a subcommand by its full name when it refuses it."""
    with peer() as r:
        with s.client() as lc, r.client() as rc:
            first = ('SUBSCRIBE', 'a')
            assert_eq(lc.call(*first), rc.call(*first), 'SUBSCRIBE a')
            for line in SUBSCRIBED_LINES:
                assert_eq(lc.call(*line), rc.call(*line),
                          'subscribed: %s' % ' '.join(line))


def test_command_help(s):
    larder_only()
    with s.client() as c:
        h = c.call('COMMAND', 'HELP')
        assert_true(isinstance(h, list) and len(h) > 4 and
                    all(isinstance(x, str) for x in h),
                    'COMMAND HELP: %s' % short(h))
        assert_true(h[0].startswith('COMMAND <subcommand>'), h[0])
        for sub in ('COUNT', 'LIST', 'INFO', 'DOCS', 'GETKEYS', 'HELP'):
            assert_true(any(x.startswith(sub) for x in h),
                        'COMMAND HELP names %s' % sub)


if __name__ == '__main__':
    main(globals())
