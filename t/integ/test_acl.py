"""Checks ACLs (users, rules, NOPERM, AUTH/HELLO, ACL subcommands, LOG, DRYRUN, LOAD/SAVE, MULTI, killed sessions, protected mode) against redis-server reply by reply in RESP2 and RESP3, and that a change made on one worker is in force on every worker."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from larder_test import (Client, ConnectionClosed, RespError, Server, Skip,
                         assert_eq, assert_error, assert_true, larder_only,
                         main, short, wait_until, IS_REDIS)

WORKERS = 3


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return (['redis-server'] +
                ([self.config_file] if self.config_file else []) +
                ['--port', str(self.port), '--save', '', '--appendonly',
                 'no', '--dir', self.dir, '--logfile', self.logfile] +
                [str(a) for a in self.extra])


def need_redis():
    if not shutil.which('redis-server'):
        raise Skip('redis-server is not installed')


class Pair:
    """larder (several workers) and redis-server side by side."""

    def __init__(self, args=(), **kw):
        need_redis()
        self.larder = Server(workers=WORKERS, args=args, **kw)
        try:
            self.redis = RedisPeer(args=args, **kw)
        except BaseException:
            self.larder.cleanup()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self.larder.cleanup()
        finally:
            self.redis.cleanup()

    def clients(self, proto=2, user=None, password=None):
        out = []
        for srv in (self.larder, self.redis):
            c = srv.client()
            if user is not None:
                r = c.call('AUTH', user, password)
                assert_eq(r, 'OK', 'AUTH %s on %s' % (user, type(srv)))
            if proto == 3:
                c.hello(3)
            out.append(c)
        return out


def norm_rules(text):
    """The rules of an ACL LIST line or GETUSER "commands" with the single
    command rules sorted: Redis emits them in its command dict's order,
    which changes from one start to the next."""
    if isinstance(text, bytes):
        text = text.decode()
    out = []
    for part in text.replace(' (', '\0(').split('\0'):
        words = part.split(' ')
        head = [w for w in words if not (w[:1] in '+-' and w[1:2] != '@')]
        cmds = sorted(w for w in words if w[:1] in '+-' and w[1:2] != '@')
        out.append(' '.join(head + cmds))
    return ' | '.join(out)


def norm(reply):
    """A reply with ACL descriptions normalized (see norm_rules)."""
    if isinstance(reply, list):
        if len(reply) and all(isinstance(x, bytes) and x.startswith(b'user ')
                              for x in reply):
            return [norm_rules(x) for x in reply]
        return [norm(x) for x in reply]
    if isinstance(reply, dict):
        return dict((k, norm_rules(v) if k == b'commands' else norm(v))
                    for k, v in reply.items())
    return reply


def getuser_norm(r):
    """GETUSER in RESP2 is a flat list: make it a dict to normalize."""
    if isinstance(r, list):
        d = {}
        for i in range(0, len(r), 2):
            v = r[i + 1]
            if r[i] == b'selectors':
                v = [getuser_norm(s) for s in v]
            elif r[i] == b'flags':
                v = sorted(v)
            d[r[i]] = v
        r = d
    if isinstance(r, dict):
        r = dict((k, ([getuser_norm(s) for s in v] if k == b'selectors'
                      else sorted(v) if k == b'flags' and
                      isinstance(v, (list, set)) else v))
                 for k, v in r.items())
    return norm(r)


def same(pair_clients, *cmd, fix=lambda r: r):
    """Send cmd to both; their replies (after fix) must be equal. Returns
    larder's."""
    got = [fix(c.call(*cmd)) for c in pair_clients]
    if got[0] != got[1]:
        raise AssertionError('%s: larder %s, redis %s' % (
            short(b' '.join(a if isinstance(a, bytes) else str(a).encode()
                            for a in cmd), 200),
            short(got[0], 600), short(got[1], 600)))
    return got[0]


RULE_SETS = [
    ['on', '>p1', '~k*', '+@all', '-@dangerous'],
    [],
    ['reset'],
    ['on', 'nopass', 'allkeys', 'allchannels', 'allcommands'],
    ['skip-sanitize-payload', 'sanitize-payload', 'off', 'on'],
    ['-@all', '+get'],
    ['-@all', '+get', '+set', '+client|list'],
    ['-@all', '+select|0'],
    ['+@all', '-get', '+get'],
    ['-@all', '+@read', '-get'],
    ['+@all', '-@write'],
    ['+@all', '-@admin'],
    ['-@all', '+@string'],
    ['+config', '-config|set'],
    ['-@all', '+client'],
    ['%R~r*', '%W~w*', '%RW~b*', '~k*', '%R~k*'],
    ['%R~'],
    ['%RW~*', '~a'],
    ['&ch*', '&other', '&ch*'],
    ['resetchannels', '&x'],
    ['allchannels', 'resetchannels'],
    ['~a', 'resetkeys', '~b'],
    ['()', '(~a +get)', '(%W~b', '+set)'],
    ['(+@all ~* &*)', 'clearselectors'],
    ['#' + 'a' * 64, '#' + 'b' * 64, '!' + 'a' * 64],
    ['>x', '>y', '<x'],
    ['nopass', '>x'],
    ['>x', 'nopass'],
    ['>x', 'resetpass'],
    ['nocommands', '+ping'],
    ['+@all', 'nocommands'],
    ['ON', 'NOPASS', '~K', '+GET', '+@READ'],
]

BAD_RULES = [
    ['foo'], ['+nocmd'], ['+@nocat'], ['-@nocat'], ['~*', '~a'],
    ['&*', '&a'], ['#abc'], ['#' + 'A' * 64], ['#' + 'g' * 64],
    ['<nopw'], ['!' + 'c' * 64], ['+client|list|x'], ['+select|'],
    ['-select|0'], ['+client|nosuch'], ['-client|nosuch'], ['%X~a'],
    ['~a b'], ['&a b'], ['%~a'], ['%'], ['%RR~a'], ['(+get'],
    ['on', '(+get'], ['(+get', 'x'], ['(foo)'], ['(on)'], ['(+nocmd)'],
    ['+get|x'], ['-get|x'], ['+'], ['-'], ['+@'], ['(~* ~a)'],
    ['(&* &a)'], ['>ok', 'bad'],
]


def test_setuser_and_describe_match_redis():
    with Pair() as p:
        for proto in (2, 3):
            a = p.clients(proto)
            for i, rules in enumerate(RULE_SETS):
                name = 'u%d_%d' % (proto, i)
                same(a, 'ACL', 'SETUSER', name, *rules)
                same(a, 'ACL', 'GETUSER', name, fix=getuser_norm)
            same(a, 'ACL', 'LIST', fix=norm)
            same(a, 'ACL', 'USERS')
            # Applying the description gives the same user back (or the
            # same error: "~* ~a" describes a user it cannot make).
            lists = [c.call('ACL', 'LIST') for c in a]
            for lines in zip(*lists):
                got = []
                for c, line in zip(a, lines):
                    words = line.split(b' ')
                    got.append(c.call('ACL', 'SETUSER', words[1] + b'_again',
                                      'reset', *words[2:]))
                assert_eq(got[0], got[1], 'SETUSER from %r' % lines[1])
            same(a, 'ACL', 'LIST', fix=norm)
            same(a, 'ACL', 'GETUSER', 'nosuch')
            for c in a:
                c.close()


def test_setuser_errors_match_redis():
    with Pair() as p:
        a = p.clients()
        for rules in BAD_RULES:
            same(a, 'ACL', 'SETUSER', 'bad', *rules)
        # All or nothing: the user was never created.
        same(a, 'ACL', 'USERS')
        same(a, 'ACL', 'SETUSER', 'a b')
        same(a, 'ACL', 'SETUSER', 'a\x00b')
        same(a, 'ACL', 'SETUSER', 'good', 'on', '>p')
        same(a, 'ACL', 'SETUSER', 'good', '+get', 'nonsense')
        same(a, 'ACL', 'GETUSER', 'good', fix=getuser_norm)
        same(a, 'ACL', 'SETUSER')
        same(a, 'ACL', 'GETUSER')
        same(a, 'ACL', 'DELUSER')


def test_noperm_texts_match_redis():
    with Pair() as p:
        adm = p.clients()
        same(adm, 'ACL', 'SETUSER', 'u', 'on', '>pw', '-@all', '+get',
             '+set', '+del', '+rename', '+mget', '+publish', '+subscribe',
             '+psubscribe', '+ssubscribe', '+spublish', '+select|0',
             '+client|getname', '+lmove', '%R~r*', '%W~w*', '~k*', '&ch*',
             '(~s* +setnx)', '+ping', '+unsubscribe', '+punsubscribe', '+sunsubscribe')
        for proto in (2, 3):
            a = p.clients(proto, 'u', 'pw')
            for cmd in [
                    ('GET', 'k1'), ('GET', 'x'), ('GET', 'r1'), ('GET', 'w1'),
                    ('SET', 'w1', 'v'), ('SET', 'r1', 'v'), ('SET', 'k1', 'v'),
                    ('SET', 'w1', 'v', 'GET'), ('SET', 'k1', 'v', 'GET'),
                    ('DEL', 'w1'), ('DEL', 'r1'), ('DEL', 'k1', 'x'),
                    ('MGET', 'r1', 'k1', 'w1'), ('RENAME', 'k1', 'w2'),
                    ('RENAME', 'w1', 'k2'), ('LMOVE', 'k1', 'w1', 'LEFT',
                                             'RIGHT'),
                    ('SETNX', 's1', 'v'), ('SETNX', 'k1', 'v'),
                    ('INCR', 'k1'), ('FLUSHALL',), ('SELECT', '0'),
                    ('SELECT', '1'), ('CLIENT', 'GETNAME'), ('CLIENT', 'LIST'),
                    ('PUBLISH', 'ch1', 'm'), ('PUBLISH', 'x', 'm'),
                    ('SPUBLISH', 'x', 'm'), ('CONFIG', 'GET', 'x'),
                    ('ACL', 'WHOAMI'), ('PING',)]:
                same(a, *cmd)
            for cmd in [('SUBSCRIBE', 'ch1', 'x'), ('PSUBSCRIBE', 'ch*x'),
                        ('PSUBSCRIBE', 'ch*'), ('SSUBSCRIBE', 'x')]:
                same(a, *cmd)
                same(a, 'UNSUBSCRIBE')
                same(a, 'PUNSUBSCRIBE')
                same(a, 'SUNSUBSCRIBE')
            for c in a:
                c.close()


def test_dryrun_matches_redis():
    with Pair() as p:
        a = p.clients()
        same(a, 'ACL', 'SETUSER', 'd', 'on', '~k*', '&c*', '-@all', '+get',
             '+client', '+publish', '+select|3', '(+set ~s*)')
        r3 = p.clients(3)
        for c in [a, r3]:
          for cmd in [('get', 'x'), ('get', 'kx'), ('del', 'kx'),
                    ('publish', 'x', '1'), ('publish', 'c1', '1'),
                    ('nocmd',), ('get',), ('client', 'list'),
                    ('client', 'nosuch'), ('config', 'get', 'x'),
                    ('select', '3'), ('select', '4'), ('set', 's1', 'v'),
                    ('set', 'x', 'v'), ('SET', 'k', 'v', 'GET')]:
            same(c, 'ACL', 'DRYRUN', 'd', *cmd)
          same(c, 'ACL', 'DRYRUN', 'nouser', 'get', 'x')
          same(c, 'ACL', 'DRYRUN', 'default', 'flushall')


def test_auth_and_hello_match_redis():
    with Pair() as p:
        a = p.clients()
        same(a, 'AUTH', 'x')
        same(a, 'AUTH', 'default', 'anything')
        same(a, 'AUTH', 'a', 'b', 'c')
        same(a, 'AUTH', 'nosuch', 'x')
        same(a, 'ACL', 'SETUSER', 'u', 'on', '>pw', '+@all', '~*')
        same(a, 'ACL', 'SETUSER', 'off', 'off', '>pw', '+@all')
        same(a, 'AUTH', 'u', 'bad')
        same(a, 'AUTH', 'off', 'pw')
        same(a, 'AUTH', 'u', 'pw')
        same(a, 'ACL', 'WHOAMI')
        same(a, 'HELLO', '3', 'AUTH', 'u', 'bad')
        same(a, 'HELLO', '2', 'AUTH', 'default', 'x', 'SETNAME', 'n1',
             fix=lambda r: r[:4] if isinstance(r, list) else r)
        same(a, 'ACL', 'WHOAMI')
        same(a, 'RESET')
        same(a, 'ACL', 'WHOAMI')
        # requirepass is the default user's password.
        same(a, 'CONFIG', 'SET', 'requirepass', 'sekrit')
        same(a, 'ACL', 'GETUSER', 'default', fix=getuser_norm)
        b = p.clients()
        same(b, 'PING')
        same(b, 'HELLO', '3')
        same(b, 'AUTH', 'wrong')
        same(b, 'AUTH', 'sekrit')
        same(b, 'PING')
        same(b, 'RESET')
        same(b, 'PING')
        same(b, 'HELLO', '2', 'AUTH', 'default', 'sekrit',
             fix=lambda r: r[:4] if isinstance(r, list) else r)
        same(b, 'ACL', 'SETUSER', 'default', 'off')
        c = p.clients()
        same(c, 'PING')
        same(c, 'AUTH', 'sekrit')
        same(c, 'AUTH', 'u', 'pw')
        same(c, 'PING')
        same(b, 'ACL', 'SETUSER', 'default', 'on', 'nopass')
        same(b, 'CONFIG', 'SET', 'requirepass', '')
        same(b, 'ACL', 'GETUSER', 'default', fix=getuser_norm)
        # A connection made while a password was needed runs commands
        # once the default user needs none, as in Redis.
        d = p.clients()
        same(d, 'ACL', 'WHOAMI')
        for x in a + b + c + d:
            x.close()


def test_noauth_before_auth_matches_redis():
    with Pair(args=['--requirepass', 'pw']) as p:
        for first in (('HELLO', '3'), ('HELLO', '3', 'AUTH', 'default', 'x'),
                      ('HELLO', '3', 'AUTH', 'default', 'pw')):
            a = p.clients()
            for cmd in [('PING',), ('GET', 'x'), ('ACL', 'WHOAMI'), first,
                        ('AUTH', 'no'), ('AUTH', 'default', 'no'),
                        ('AUTH', 'pw'), ('ACL', 'WHOAMI'),
                        ('ACL', 'GETUSER', 'default'), ('GET', 'x')]:
                same(a, *cmd, fix=lambda r: (getuser_norm(r) if not
                                             isinstance(r, dict) or
                                             b'server' not in r else
                                             r[b'proto']))
            for c in a:
                c.close()


def log_fix(r):
    """ACL LOG entries without their age and client details, which
    differ by nature (the ids, addresses and larder's extra fields)."""
    if not isinstance(r, list):
        return r
    out = []
    for e in r:
        if isinstance(e, list):
            e = dict(zip(e[0::2], e[1::2]))
        e = dict(e)
        info = e.pop(b'client-info', b'')
        e.pop(b'age-seconds', None)
        fields = dict(kv.split(b'=', 1) for kv in info.split(b' ')
                      if b'=' in kv)
        e[b'info'] = (fields.get(b'cmd'), fields.get(b'user'))
        out.append(e)
    return out


def test_acl_log_matches_redis():
    with Pair() as p:
        adm = p.clients()
        same(adm, 'ACL', 'SETUSER', 'u', 'on', '>pw', '-@all', '+get',
             '+multi', '+exec', '+publish', '~k*', '&c*')
        u = p.clients(2, 'u', 'pw')
        same(u, 'GET', 'x')
        same(u, 'GET', 'x')
        same(u, 'GET', 'y')
        same(u, 'SET', 'k', 'v')
        same(u, 'PUBLISH', 'd', 'm')
        same(u, 'AUTH', 'u', 'bad')
        same(u, 'AUTH', 'nosuch', 'bad')
        same(u, 'MULTI')
        same(u, 'GET', 'x')
        same(u, 'EXEC')
        for proto in (2, 3):
            a = p.clients(proto)
            same(a, 'ACL', 'LOG', fix=log_fix)
            same(a, 'ACL', 'LOG', '2', fix=log_fix)
            for arg in ['0', '-1', '1', '2147483648', '-2147483649',
                        '9223372036854775807', '-9223372036854775808',
                        '18446744073709551616', 'nan', 'inf', '', 'abc',
                        '1.5']:
                same(a, 'ACL', 'LOG', arg, fix=log_fix)
            same(a, 'ACL', 'LOG', '1', '2')
            for c in a:
                c.close()
        same(adm, 'ACL', 'LOG', 'RESET')
        same(adm, 'ACL', 'LOG', fix=log_fix)
        same(adm, 'CONFIG', 'SET', 'acllog-max-len', '2')
        for i in range(4):
            same(u, 'GET', 'z%d' % i)
        same(adm, 'ACL', 'LOG', fix=log_fix)


def test_acl_misc_subcommands_match_redis():
    with Pair() as p:
        for proto in (2, 3):
            a = p.clients(proto)
            same(a, 'ACL', 'CAT')
            same(a, 'ACL', 'CAT', 'nosuch')
            same(a, 'ACL', 'CAT', 'a', 'b')
            same(a, 'ACL', 'WHOAMI')
            same(a, 'ACL', 'USERS')
            same(a, 'ACL', 'DELUSER', 'default')
            same(a, 'ACL', 'DELUSER', 'x', 'default')
            same(a, 'ACL', 'SETUSER', 'x')
            same(a, 'ACL', 'SETUSER', 'y')
            same(a, 'ACL', 'DELUSER', 'x', 'nosuch', 'y', 'x')
            same(a, 'ACL', 'NOSUCH')
            same(a, 'ACL', 'LOAD')
            same(a, 'ACL', 'SAVE')
            same(a, 'ACL', 'WHOAMI', 'x')
            same(a, 'ACL', 'HELP', fix=lambda r: r[0] if isinstance(r, list)
                 else r)
            for arg in ['0', '-1', '1', '4096', '4097', '2147483648',
                        '-2147483649', '9223372036854775807',
                        '-9223372036854775808', '18446744073709551616',
                        'nan', 'inf', '', 'abc', '1.5']:
                same(a, 'ACL', 'GENPASS', arg,
                     fix=lambda r: len(r) if isinstance(r, bytes) else r)
            same(a, 'ACL', 'GENPASS', fix=len)
            same(a, 'ACL', 'GENPASS', '5', '6')
            for c in a:
                c.close()
        # ACL CAT <category>: the same commands, of those larder has.
        a = p.clients()
        for cat in a[1].call('ACL', 'CAT'):
            got = [set(c.call('ACL', 'CAT', cat)) for c in a]
            extra = set(n for n in got[0] - got[1]
                        if a[1].call('COMMAND', 'INFO', n) != [None])
            missing = set(n for n in got[1] - got[0]
                          if a[0].call('COMMAND', 'INFO', n) != [None])
            assert_true(not extra, '@%s: larder has %s, redis not'
                        % (cat, sorted(extra)))
            assert_true(not missing, '@%s: redis has %s, larder not'
                        % (cat, sorted(missing)))
        # Every password GENPASS makes is new.
        assert_true(len(set(a[0].call('ACL', 'GENPASS') for _ in range(50)))
                    == 50, 'GENPASS repeats itself')
        assert_eq(len(a[0].call('ACL', 'GENPASS', '1')), 1)


def test_multi_exec_rechecks_rules_as_redis():
    with Pair() as p:
        adm = p.clients()
        same(adm, 'ACL', 'SETUSER', 'u', 'on', '>pw', '+@all', '~*', '&*')
        u = p.clients(2, 'u', 'pw')
        same(u, 'MULTI')
        same(u, 'SET', 'k', 'v')
        same(u, 'GET', 'k')
        same(u, 'PUBLISH', 'c', 'm')
        same(adm, 'ACL', 'SETUSER', 'u', '-set', 'resetkeys', '~k',
             'resetchannels')
        same(u, 'EXEC')
        same(u, 'MULTI')
        same(u, 'SET', 'k', 'v')
        same(u, 'GET', 'k')
        same(u, 'EXEC')
        same(adm, 'ACL', 'LOG', fix=log_fix)


def test_deleted_user_sessions_are_closed():
    with Pair() as p:
        adm = p.clients()
        same(adm, 'ACL', 'SETUSER', 'u', 'on', '>pw', '+@all', '~*')
        same(adm, 'ACL', 'SETUSER', 'v', 'on', '>pw', '+@all', '~*')
        us = [p.clients(2, 'u', 'pw') for _ in range(2 * WORKERS)]
        vs = p.clients(2, 'v', 'pw')
        same(vs, 'ACL', 'DELUSER', 'v')   # its own: the reply, then closed
        for c in vs:
            assert_true(c.is_closed(), 'the session of a deleted user '
                        '(its own DELUSER) closes after the reply')
        same(adm, 'ACL', 'DELUSER', 'u')
        for pair_ in us:
            for c in pair_:
                assert_true(c.is_closed(), 'a session of a deleted user '
                            'is closed')
        same(adm, 'ACL', 'SETUSER', 'u', 'on', '>pw', '+@all', '~*')
        same(adm, 'ACL', 'SETUSER', 'default', 'off')
        # Turning a user off leaves its sessions alone.
        w = p.clients(2, 'u', 'pw')
        same(adm, 'ACL', 'SETUSER', 'u', 'off')
        same(w, 'PING')
        same(adm, 'PING')


def test_lost_channels_close_subscribers():
    with Pair() as p:
        adm = p.clients()
        same(adm, 'ACL', 'SETUSER', 'u', 'on', '>pw', '+@all', '~*', '&a*',
             '&b')
        keep = p.clients(2, 'u', 'pw')
        lose = p.clients(2, 'u', 'pw')
        pat = p.clients(2, 'u', 'pw')
        same(keep, 'SUBSCRIBE', 'b')
        same(lose, 'SUBSCRIBE', 'a1')
        same(pat, 'PSUBSCRIBE', 'a*')
        same(adm, 'ACL', 'SETUSER', 'u', 'resetchannels', '&b', '&a1')
        for c in pat:
            assert_true(c.is_closed(), 'a pattern no longer allowed closes')
        same(keep, 'PING')
        same(lose, 'PING')
        same(adm, 'ACL', 'SETUSER', 'u', 'resetchannels', '&b')
        for c in lose:
            assert_true(c.is_closed(), 'a channel no longer allowed closes')
        same(keep, 'PING')


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def test_aclfile_load_and_save_match_redis():
    need_redis()
    d = tempfile.mkdtemp(prefix='larder-acl-')
    try:
        files = [os.path.join(d, 'l.acl'), os.path.join(d, 'r.acl')]
        good = ('user alice on #%s ~k* &c* -@all +get +set\n'
                'user default on nopass ~* &* +@all\n\n'
                'user bob off\n' % ('c' * 64))
        for f in files:
            write(f, good)
        larder = Server(workers=WORKERS, args=['--aclfile', files[0]])
        try:
            redis = RedisPeer(args=['--aclfile', files[1]])
        except BaseException:
            larder.cleanup()
            raise
        try:
            a = [larder.client(), redis.client()]
            same(a, 'ACL', 'LIST', fix=norm)
            same(a, 'ACL', 'SETUSER', 'carol', 'on', '>x', '+@read', '~*')
            s = [larder.client(), redis.client()]
            same(s, 'AUTH', 'carol', 'x')
            same(a, 'ACL', 'SAVE')
            texts = [open(f).read() for f in files]
            assert_eq(norm([l.encode() for l in texts[0].splitlines()]),
                      norm([l.encode() for l in texts[1].splitlines()]),
                      'ACL SAVE')
            # ACL LOAD replaces every user: sessions of others than the
            # default user end.
            same(a, 'ACL', 'LOAD')
            for c in s:
                assert_true(c.is_closed(), 'ACL LOAD closes the sessions '
                            'of the users it replaced')
            same(a, 'ACL', 'WHOAMI')
            same(a, 'ACL', 'LIST', fix=norm)
            for bad in ['user alice on +nocmd ~* foo\nnot a user line\n'
                        'user alice on\nuser x (+get\n',
                        'user d\tx on\n', 'user\n', 'USER a on\n']:
                for f in files:
                    write(f, bad)
                got = [c.call('ACL', 'LOAD') for c in a]
                assert_eq(got[0], RespError(got[1].message.replace(
                    files[1], files[0])), 'ACL LOAD of %r' % bad)
            same(a, 'ACL', 'LIST', fix=norm)
            for f in files:
                os.unlink(f)
            got = [c.call('ACL', 'LOAD') for c in a]
            assert_eq(got[0], RespError(got[1].message.replace(files[1],
                                                               files[0])))
        finally:
            larder.cleanup()
            redis.cleanup()
        # A broken aclfile stops the start, as in Redis.
        write(files[0], 'user x on +nocmd\n')
        srv = Server(workers=1, args=['--aclfile', files[0]], start=False)
        try:
            srv.port = 1
            out = subprocess.run(srv.command_line(), cwd=srv.dir,
                                 capture_output=True, timeout=20)
            assert_true(out.returncode != 0, 'starts with a bad aclfile')
            assert_true(b'Unknown command or category name in ACL' in
                        out.stderr + open(srv.logfile, 'rb').read(),
                        'says why: %r' % out.stderr)
        finally:
            srv.cleanup()
    finally:
        shutil.rmtree(d, ignore_errors=True)


def serving_pid(c):
    line = c.call('CLIENT', 'INFO')
    return dict(kv.split(b'=', 1) for kv in line.split()
                if b'=' in kv).get(b'worker')


def one_per_worker(srv, user=None, password=None):
    """A connection on each worker (by CLIENT INFO's worker=)."""
    got, spare = {}, []
    deadline = time.time() + 20
    while len(got) < WORKERS and time.time() < deadline:
        c = srv.client()
        if user:
            assert_eq(c.call('AUTH', user, password), 'OK')
        w = serving_pid(c)
        if w in got:
            spare.append(c)
        else:
            got[w] = c
    for c in spare:
        c.close()
    assert_eq(len(got), WORKERS, 'connections on every worker')
    return list(got.values())


def test_changes_are_in_force_on_every_worker_before_the_reply():
    larder_only()
    with Server(workers=WORKERS) as srv:
        admins = one_per_worker(srv)
        users = []
        try:
            admins[0].call('ACL', 'SETUSER', 'u', 'on', '>pw', '+@all', '~*')
            users = one_per_worker(srv, 'u', 'pw')
            for i in range(20):
                setter = admins[i % WORKERS]
                key = 'k%d' % i
                assert_eq(setter.call('ACL', 'SETUSER', 'u', 'resetkeys',
                                      '~' + key), 'OK')
                # The very next command on every worker sees the change.
                for c in users:
                    assert_eq(c.call('SET', key, 'v'), 'OK')
                    assert_error(c.call('SET', 'k%d' % (i + 1), 'v'),
                                 'NOPERM this user has no permissions to '
                                 'access one of the keys used as arguments')
                for a in admins:
                    assert_eq(a.call('ACL', 'GETUSER', 'u')[7],
                              ('~' + key).encode())
            # A deletion closes the user's sessions on every worker, also
            # those that send nothing.
            admins[1].call('ACL', 'DELUSER', 'u')
            for c in users:
                assert_true(c.is_closed(), 'sessions of a deleted user close '
                            'on every worker')
            # CONFIG SET requirepass, then an AUTH on each worker.
            assert_eq(admins[2].call('CONFIG', 'SET', 'requirepass', 'z'),
                      'OK')
            for c in one_per_worker(srv, 'default', 'z'):
                assert_eq(c.call('ACL', 'WHOAMI'), b'default')
                c.close()
            # The log is one for all workers.
            assert_eq(admins[0].call('ACL', 'LOG', 'RESET'), 'OK')
            admins[0].call('ACL', 'SETUSER', 'w', 'on', '>pw', '-@all',
                           '+client|info')
            ws = one_per_worker(srv, 'w', 'pw')
            for c in ws:
                c.call('GET', 'x')
                c.close()
            log = admins[1].call('ACL', 'LOG')
            assert_eq(len(log), 1)
            assert_eq(log[0][1], WORKERS)     # count, merged across workers
        finally:
            for c in admins + users:
                c.close()


def test_client_list_shows_the_user():
    with Pair() as p:
        a = p.clients()
        same(a, 'ACL', 'SETUSER', 'u', 'on', '>pw', '+@all', '~*')
        same(a, 'AUTH', 'u', 'pw')
        for c in a:
            line = c.call('CLIENT', 'INFO')
            assert_true(b' user=u ' in line, 'user= in %r' % line)


def in_netns():
    """Run this file's protected-mode part in a private network namespace
    (so a non-loopback address exists on this machine only); True if it
    ran there and passed."""
    script = os.path.abspath(__file__)
    cmd = ('ip link set lo up && ip addr add 198.18.0.1/32 dev lo && '
           'exec "$0" "$1" --protected-mode-inner')
    try:
        out = subprocess.run(['unshare', '--net', 'sh', '-c', cmd,
                              sys.executable, script],
                             capture_output=True, timeout=120,
                             env=dict(os.environ))
    except (OSError, subprocess.TimeoutExpired) as e:
        raise Skip('no private network namespace: %s' % e)
    if out.returncode == 77:
        raise Skip('no private network namespace: %s' % out.stderr[-300:])
    assert_true(out.returncode == 0, 'protected mode in a namespace:\n%s%s'
                % (out.stdout.decode()[-3000:], out.stderr.decode()[-3000:]))


def protected_mode_inner():
    """Inside the namespace: a client from 198.18.0.1 (not loopback)."""
    def peer(srv, host):
        """The first reply line to PING from host, and whether the server
        then closed the connection."""
        s = socket.create_connection((host, srv.port), timeout=5)
        s.sendall(b'PING\r\n')
        data = b''
        while not data.endswith(b'\r\n'):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.settimeout(0.5)
        try:
            closed = s.recv(1) == b''
        except socket.timeout:
            closed = False
        except ConnectionResetError:
            closed = True
        s.close()
        return data, closed
    failures = []
    kinds = [('larder', Server)] + ([('redis', RedisPeer)]
                                   if shutil.which('redis-server') else [])
    replies = {}
    for name, cls in kinds:
        for args in (['--bind', '* -::*'], ['--bind', '198.18.0.1 127.0.0.1'],
                     ['--bind', '* -::*', '--protected-mode', 'no'],
                     ['--bind', '* -::*', '--requirepass', 'x']):
            srv = cls(args=args) if cls is RedisPeer else cls(workers=2,
                                                               args=args)
            try:
                replies[(name, tuple(args))] = (peer(srv, '198.18.0.1'),
                                                peer(srv, '127.0.0.1'))
                with srv.client() as c:
                    if '--requirepass' not in args:
                        c.call('CONFIG', 'SET', 'protected-mode', 'no')
                        replies[(name, tuple(args), 'off')] = peer(
                            srv, '198.18.0.1')
            finally:
                srv.cleanup()
    for key, got in replies.items():
        if key[0] == 'larder':
            other = replies.get(('redis',) + key[1:])
            if other is not None and other != got:
                failures.append('%s: larder %r, redis %r' % (key, got, other))
    denied = replies[('larder', ('--bind', '* -::*'))][0]
    if not denied[0].startswith(b'-DENIED Redis is running in protected '
                                b'mode') or not denied[1]:
        failures.append('larder did not deny: %r' % denied)
    if failures:
        print('\n'.join(failures))
        sys.exit(1)
    sys.exit(0)


def test_protected_mode_matches_redis():
    in_netns()


if __name__ == '__main__':
    if sys.argv[1:] == ['--protected-mode-inner']:
        protected_mode_inner()
    main(globals())
