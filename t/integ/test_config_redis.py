"""Checks CONFIG GET, SET, REWRITE, RESETSTAT and HELP against a redis-server 7.0 started by each test: every parameter Redis has is there with Redis's default (but those larder gives a meaning of its own), CONFIG SET of each with a battery of good and bad values gives Redis's reply and then Redis's CONFIG GET, several pairs are set all or nothing, several patterns list a name once, RESP2 and RESP3; and, larder only, appendonly/appendfsync/sync as one setting, maxmemory capping the cache, CONFIG REWRITE keeping comments and order, RESETSTAT."""

import os
import re
import shutil

from larder_test import (Client, RespError, Server, Skip, assert_eq,
                         assert_error, assert_true, larder_only, main, short,
                         wait_until)


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile]


def peer():
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    return RedisPeer()


def as_dict(reply):
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[0::2], reply[1::2]))


# Parameters whose value larder sets otherwise on purpose (its defaults,
# or what the harness passes), with the reason.
DEFAULTS_DIFFER = {
    b'appendonly': 'larder writes everything durably: appendonly is sync != no',
    b'bind': 'larder listens on 127.0.0.1 by default',
    b'dbfilename': 'SAVE writes an LMDB copy, backup.mdb',
    b'dir': 'each server has its own temp dir',
    b'logfile': 'each server has its own log',
    b'port': 'each server has its own port',
    b'syslog-ident': 'larder',
    b'unixsocket': 'per server',
    b'hz': 'the same default, but redis reports the dynamic value',
}

# Parameters CONFIG SET treats otherwise in larder, with the reason.
SET_DIFFERS = {
    b'bind': 'larder opens its listeners before it forks: immutable',
    b'port': 'likewise',
    b'maxclients': "Redis also checks the process's file limit",
    b'requirepass': 'a password would lock the test out (test_config.py)',
    b'masterauth': 'harmless, but kept apart with requirepass',
    b'appendonly': 'Redis starts an AOF rewrite; larder maps it (below)',
    b'save': 'redis-server\'s own snapshots would run in the test dir',
    b'dir': 'protected in both; compared by test_protected',
}
# The TLS context and listeners are made once by the master before it
# forks (issue 16, srv_tls.h): these are immutable in larder.
SET_DIFFERS.update(
    (name, 'TLS is set up before fork: immutable')
    for name in (b'tls-port', b'tls-cert-file', b'tls-key-file',
                 b'tls-key-file-pass', b'tls-dh-params-file',
                 b'tls-ca-cert-file', b'tls-ca-cert-dir', b'tls-auth-clients',
                 b'tls-protocols', b'tls-ciphers', b'tls-ciphersuites',
                 b'tls-prefer-server-ciphers', b'tls-session-caching',
                 b'tls-session-cache-size', b'tls-session-cache-timeout',
                 b'tls-replication', b'tls-cluster'))

# The battery: what every parameter gets, then what its kind gets (the
# kind read from Redis's default value), then some parameters' own.
VALUES_ALL = ['', 'abc', '-1', '0', '1', '2147483648', '9223372036854775808',
              '1mb', '10%', 'yes', '1.5']
VALUES_BOOL = ['no', 'YES', 'No']
VALUES_NUMBER = ['100', '65536', '2147483647', '-2147483649', '4294967296',
                 '9223372036854775807', '18446744073709551616', '1kb', '200%',
                 'inf', '150', '0x10', ' 1', '+1']
VALUES_WORD = ['everysec', 'always', 'local0', 'noeviction', 'allkeys-lru',
               'relative', 'on-empty-db', 'hostname', 'optional', 'panic',
               'KEA', '{title} {port}', '{x}', 'a b']
VALUES_OWN = {
    b'notify-keyspace-events': ['KEA', 'Ex', 'Q', 'AKEmn', 'Kgmdnt$'],
    b'save': ['3600 1 300 100', '0 1', '1 -1', '01 +3', '  '],
    b'client-output-buffer-limit': ['normal 1mb 2mb 3', 'replica 1 2',
                                   'pubsub 0 0 0', 'master 1 2 3',
                                   'slave 1kb 2k 3 pubsub 0 0 -1'],
    b'oom-score-adj-values': ['0 200 800', '300 200 100', '0 200 3000',
                              'a b c', '1 2'],
    b'latency-tracking-info-percentiles': ['50 99 99.9', '99.90 50.0 0',
                                           '50 101', 'abc', 'nan'],
    b'shutdown-on-sigint': ['now nosave', 'save nosave', 'default now',
                            'now force nosave', 'foo'],
    b'shutdown-on-sigterm': ['now nosave', 'save nosave', 'default'],
    b'proc-title-template': ['{title} {port}', '{x}', '{title'],
}


def battery(name, default):
    values = list(VALUES_ALL)
    if default in (b'yes', b'no'):
        values += VALUES_BOOL
    elif re.match(rb'^-?[0-9]+%?$', default):
        values += VALUES_NUMBER
    else:
        values += VALUES_WORD
    return values + VALUES_OWN.get(name, [])


def test_every_redis_parameter_is_there():
    with peer() as r, Server() as s:
        with r.client() as rc, s.client() as lc:
            ref = as_dict(rc.call('CONFIG', 'GET', '*'))
            got = as_dict(lc.call('CONFIG', 'GET', '*'))
            missing = sorted(set(ref) - set(got))
            assert_eq(missing, [], 'Redis parameters larder lacks')
            for name, value in sorted(ref.items()):
                if name in DEFAULTS_DIFFER:
                    continue
                assert_eq(got[name], value, 'default of %s' % name.decode())


def test_set_each_parameter_like_redis():
    """For every parameter and every value of the battery: the same
    CONFIG SET reply; when both accept, the same CONFIG GET; then both
    go back to their value before."""
    # hz 100: a CONFIG SET waits at most a tick for every process to have
    # it, and this test makes hundreds.
    with peer() as r, Server(args=['--hz', '100']) as s:
        with r.client() as rc, s.client() as lc:
            names = sorted(as_dict(rc.call('CONFIG', 'GET', '*')))
            checked = 0
            for name in names:
                if name in SET_DIFFERS:
                    continue
                r0 = as_dict(rc.call('CONFIG', 'GET', name))[name]
                l0 = as_dict(lc.call('CONFIG', 'GET', name))[name]
                for v in battery(name, r0):
                    want = rc.call('CONFIG', 'SET', name, v)
                    got = lc.call('CONFIG', 'SET', name, v)
                    what = 'CONFIG SET %s %r' % (name.decode(), v)
                    assert_eq(got, want, what)
                    if want == 'OK':
                        assert_eq(lc.call('CONFIG', 'GET', name),
                                  rc.call('CONFIG', 'GET', name),
                                  what + ' then CONFIG GET')
                        assert_eq(rc.call('CONFIG', 'SET', name, r0), 'OK',
                                  'redis: back to %r' % r0)
                        assert_eq(lc.call('CONFIG', 'SET', name,
                                          b'100' if name == b'hz' else l0),
                                  'OK', 'larder: back to %r' % l0)
                    checked += 1
            assert_true(checked > 150 * len(VALUES_ALL),
                        'only %d cases checked' % checked)


test_set_each_parameter_like_redis.timeout = 180


def test_protected_and_immutable():
    with peer() as r, Server() as s:
        with r.client() as rc, s.client() as lc:
            for args in (('dir', '/tmp'), ('dbfilename', 'x.rdb'),
                         ('daemonize', 'yes'), ('databases', '4'),
                         ('unixsocket', '/tmp/x'), ('pidfile', '/tmp/p'),
                         ('logfile', '/tmp/l'), ('supervised', 'no'),
                         ('syslog-enabled', 'no'), ('io-threads', '2'),
                         ('cluster-enabled', 'yes'), ('replicaof', 'no one'),
                         ('slaveof', 'no one'), ('nosuch', '1'),
                         ('enable-debug-command', 'yes')):
                assert_eq(lc.call('CONFIG', 'SET', *args),
                          rc.call('CONFIG', 'SET', *args),
                          'CONFIG SET %s %s' % args)


def test_set_several_all_or_nothing():
    with peer() as r, Server() as s:
        with r.client() as rc, s.client() as lc:
            for c in (rc, lc):
                assert_eq(c.call('CONFIG', 'SET', 'hz', '10',
                                 'maxmemory-policy', 'noeviction'), 'OK')
            cases = [
                ('hz', '20', 'maxmemory-policy', 'bogus'),
                ('hz', '20', 'nosuch', '1'),
                ('hz', '20', 'HZ', '30'),
                ('hz', '20', 'daemonize', 'no'),
                ('hz', '20', 'timeout'),
                ('hz',),
                ('slave-priority', '7', 'replica-priority', '8'),
                ('hz', '20', 'maxmemory-policy', 'allkeys-lru',
                 'lfu-log-factor', '3'),
            ]
            for args in cases:
                want = rc.call('CONFIG', 'SET', *args)
                assert_eq(lc.call('CONFIG', 'SET', *args), want,
                          'CONFIG SET %s' % ' '.join(args))
                pats = ('hz', 'maxmemory-policy', 'lfu-log-factor',
                        '*-priority')
                assert_eq(as_dict(lc.call('CONFIG', 'GET', *pats)),
                          as_dict(rc.call('CONFIG', 'GET', *pats)),
                          'after CONFIG SET %s' % ' '.join(args))


def test_get_patterns_and_protocols():
    with peer() as r, Server() as s:
        for proto in (2, 3):
            with r.client() as rc, s.client() as lc:
                if proto == 3:
                    rc.hello(3)
                    lc.hello(3)
                for pats in (('maxmemory',), ('MAXMEMORY',),
                             ('maxmemory*', 'maxmemory-policy'),
                             ('*max-*-entries*',), ('h?',), ('nosuch',),
                             ('slave-*', 'replica-*'), ('*', 'hz'),
                             ('notify-keyspace-events', 'save', 'appendfsync'),
                             ('client-output-buffer-limit',),
                             ('latency-tracking*', 'slowlog*', 'shutdown-*')):
                    want = rc.call('CONFIG', 'GET', *pats)
                    got = lc.call('CONFIG', 'GET', *pats)
                    if pats[0] == '*':
                        want, got = set(as_dict(want)), set(as_dict(got))
                        assert_true(want <= got, 'CONFIG GET * covers Redis')
                        continue
                    if proto == 3:
                        assert_true(isinstance(got, dict), 'RESP3 map')
                    assert_eq(as_dict(got), as_dict(want),
                              'CONFIG GET %s (RESP%d)' % (pats, proto))
                    if proto == 2:
                        assert_eq(len(got), len(want), 'pairs listed once')
                for args in (('CONFIG', 'GET'), ('CONFIG', 'SET', 'hz'),
                             ('CONFIG', 'RESETSTAT', 'x'),
                             ('CONFIG', 'REWRITE', 'x'), ('CONFIG', 'HELP'),
                             ('CONFIG', 'HELP', 'x'), ('CONFIG', 'NOSUCH'),
                             ('CONFIG', 'SET', 'a', 'b', 'c')):
                    assert_eq(lc.call(*args), rc.call(*args), ' '.join(args))


def test_rewrite_without_a_file():
    with peer() as r, Server() as s:
        with r.client() as rc, s.client() as lc:
            assert_eq(lc.call('CONFIG', 'REWRITE'),
                      rc.call('CONFIG', 'REWRITE'), 'no config file')


def test_sync_appendonly_appendfsync_one_setting():
    larder_only()
    with Server() as s, s.client() as c:
        def get(*names):
            return [as_dict(c.call('CONFIG', 'GET', n))[n.encode()].decode()
                    for n in names]
        names = ('sync', 'appendonly', 'appendfsync')
        assert_eq(get(*names), ['everysec', 'yes', 'everysec'], 'defaults')
        assert_eq(c.call('CONFIG', 'SET', 'appendonly', 'no'), 'OK')
        assert_eq(get(*names), ['no', 'no', 'everysec'], 'appendonly no')
        assert_eq(c.call('CONFIG', 'SET', 'appendfsync', 'always'), 'OK')
        assert_eq(get(*names), ['no', 'no', 'always'], 'policy kept aside')
        assert_eq(c.call('CONFIG', 'SET', 'appendonly', 'yes'), 'OK')
        assert_eq(get(*names), ['always', 'yes', 'always'], 'appendonly yes')
        # Writes are acknowledged under sync always (held until flushed).
        for i in range(20):
            assert_eq(c.call('SET', 'k%d' % i, 'v'), 'OK')
        assert_eq(c.call('CONFIG', 'SET', 'sync', 'no'), 'OK')
        assert_eq(get(*names), ['no', 'no', 'always'], 'sync no')
        assert_eq(c.call('CONFIG', 'SET', 'sync', 'everysec'), 'OK')
        assert_eq(get(*names), ['everysec', 'yes', 'everysec'], 'sync again')
        assert_eq(c.call('SET', 'after', 'v'), 'OK')
        info = c.call('INFO', 'persistence').decode()
        assert_true('sync:everysec' in info, 'INFO shows the level')


def test_maxmemory_caps_the_cache():
    larder_only()
    with Server(args=['--cache-mb', '64']) as s, s.client() as c:
        def budget():
            m = re.search(r'cache_budget_bytes:(\d+)',
                          c.call('INFO', 'cache').decode())
            return int(m.group(1))
        assert_eq(budget(), 64 << 20, 'cache-mb')
        assert_eq(c.call('CONFIG', 'SET', 'maxmemory', '16mb'), 'OK')
        assert_eq(budget(), 16 << 20, 'maxmemory caps it')
        assert_eq(c.call('CONFIG', 'GET', 'maxmemory'),
                  [b'maxmemory', str(16 << 20).encode()])
        assert_eq(c.call('CONFIG', 'SET', 'maxmemory', '0'), 'OK')
        assert_eq(budget(), 64 << 20, 'maxmemory 0: cache-mb again')
        r = c.call('CONFIG', 'SET', 'maxmemory', '0', 'cache-mb', '100000')
        assert_true(isinstance(r, RespError) and 'cache-mb' in r.message, r)
        assert_eq(budget(), 64 << 20, 'nothing changed')


CONF = """# larder test config: comments and order must survive
port {port}

# the data
dir {dir}
logfile {log}
# a comment between two directives
hz 10
maxmemory-policy noeviction
save 900 1
save 300 10
  # an indented comment
slowlog-max-len 128
slave-priority 50
"""


def test_rewrite_keeps_comments_and_order():
    larder_only()
    d = None
    with Server(start=False) as s:
        conf = os.path.join(s.dir, 'larder.conf')
        text = CONF.format(port=0, dir=s.dir, log=s.logfile)
        with open(conf, 'w') as f:
            f.write(text)
        s.config_file = conf
        s.start()
        with s.client() as c:
            assert_eq(c.call('CONFIG', 'SET', 'hz', '20', 'slowlog-max-len',
                             '64', 'save', '60 5', 'maxmemory-policy',
                             'allkeys-lru', 'lfu-log-factor', '3',
                             'replica-priority', '7'), 'OK')
            assert_eq(c.call('CONFIG', 'REWRITE'), 'OK')
        with open(conf) as f:
            lines = f.read().splitlines()
        comments = [l for l in lines if l.strip().startswith('#')]
        assert_eq(comments[:4], [
            '# larder test config: comments and order must survive',
            '# the data', '# a comment between two directives',
            '  # an indented comment'], 'comments kept in order')
        assert_true('# Generated by CONFIG REWRITE' in lines, 'marker')
        body = [l for l in lines if l and not l.strip().startswith('#')]
        def index(prefix):
            for i, l in enumerate(body):
                if l.startswith(prefix):
                    return i
            raise AssertionError('no %r line in %r' % (prefix, body))
        assert_true(index('hz 20') < index('maxmemory-policy allkeys-lru') <
                    index('save 60 5') < index('slowlog-max-len 64') <
                    index('replica-priority 7'), 'order kept: %r' % body)
        assert_eq([l for l in body if l.startswith('save')], ['save 60 5'],
                  'the second save line dropped')
        assert_true(index('lfu-log-factor 3') > index('replica-priority 7'),
                    'new directives appended')
        assert_true(not any(l.startswith('slave-priority') for l in body),
                    'the alias written as its canonical name')
        assert_true(any(l.startswith('port ') for l in body), 'port kept')
        # The rewritten file starts the server with the same settings.
        s.stop()
        s.start()
        with s.client() as c:
            got = as_dict(c.call('CONFIG', 'GET', 'hz', 'slowlog-max-len',
                                 'save', 'maxmemory-policy',
                                 'lfu-log-factor', 'replica-priority'))
            assert_eq(got, {b'hz': b'20', b'slowlog-max-len': b'64',
                            b'save': b'60 5',
                            b'maxmemory-policy': b'allkeys-lru',
                            b'lfu-log-factor': b'3',
                            b'replica-priority': b'7'}, 'after restart')


def test_resetstat():
    larder_only()
    with Server(workers=2) as s:
        with s.client() as a, s.client() as b:
            for i in range(50):
                a.call('SET', 'k%d' % i, 'v')
                b.call('GET', 'k%d' % i)
            info = a.call('INFO', 'stats').decode()
            n = int(re.search(r'total_commands_processed:(\d+)', info).group(1))
            assert_true(n >= 100, 'commands counted: %d' % n)
            assert_eq(a.call('CONFIG', 'RESETSTAT'), 'OK')
            info = b.call('INFO', 'stats').decode()
            n = int(re.search(r'total_commands_processed:(\d+)', info).group(1))
            assert_true(n <= 2, 'reset on every worker: %d' % n)
            assert_true('keyspace_hits:0' in info, 'hits reset')


if __name__ == '__main__':
    main(globals())
