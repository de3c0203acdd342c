"""Checks client control across workers: CLIENT LIST and CLIENT INFO (Redis's fields, flags, filters, every worker's clients in id order), CLIENT KILL with each filter and the old addr:port form on clients of other workers, CLIENT NO-EVICT / NO-TOUCH; errors compared reply by reply with redis-server."""

import shutil
import time

from larder_test import (IS_REDIS, Client, ConnectionClosed, RespError,
                         Server, Skip, assert_eq, assert_error, assert_true,
                         larder_only, main, short, wait_until)

SLOW = 10.0
# Fields larder's lines carry that redis-server 7.0's do not: 7.2's
# library fields and the worker a client is on.
LARDER_FIELDS = ('lib-name', 'lib-ver', 'worker')


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


def fields(line):
    out = {}
    for f in line.split(' '):
        k, _, v = f.partition('=')
        out[k] = v
    return out


def lines(c, *args):
    text = c.call('CLIENT', 'LIST', *args)
    assert_true(isinstance(text, bytes), 'CLIENT LIST: %r' % (text,))
    return [fields(l) for l in text.decode().splitlines()]


def my_id(c):
    return c.call('CLIENT', 'ID')


def worker_of(c):
    return int(fields(c.call('CLIENT', 'INFO').decode().strip())['worker'])


def on_workers(s, want):
    """Clients placed as `want` says ('AB': two workers)."""
    pool, chosen, labels = [], [], {}
    try:
        for label in want:
            while True:
                pick = None
                for item in pool:
                    if item[0] is None:
                        continue
                    if label in labels:
                        ok = item[1] == labels[label]
                    else:
                        ok = item[1] not in labels.values()
                    if ok:
                        pick = item
                        break
                if pick is None:
                    assert_true(len(pool) < 200, 'clients placed as %r' % want)
                    c = s.client()
                    pool.append([c, worker_of(c)])
                    continue
                labels.setdefault(label, pick[1])
                chosen.append(pick[0])
                pick[0] = None
                break
        return chosen
    finally:
        for c, _ in pool:
            if c is not None:
                c.close()


def is_gone(c):
    try:
        c.settimeout(2.0)
        r = c.call('PING')
        return False if r == 'PONG' else True
    except (ConnectionClosed, OSError):
        return True


KILL_ERRORS = [
    ('CLIENT', 'KILL'), ('CLIENT', 'KILL', 'foo', 'bar'),
    ('CLIENT', 'KILL', 'type', 'foo'), ('CLIENT', 'KILL', 'id', 'x'),
    ('CLIENT', 'KILL', 'id', '0'), ('CLIENT', 'KILL', 'id', '-5'),
    ('CLIENT', 'KILL', 'id', '9223372036854775808'),
    ('CLIENT', 'KILL', 'skipme', 'maybe'), ('CLIENT', 'KILL', 'addr'),
    ('CLIENT', 'KILL', 'addr', '1.2.3.4:5', 'laddr', 'x'),
    ('CLIENT', 'KILL', 'user', 'nobody'), ('CLIENT', 'KILL', 'id', '1', 'id'),
    ('CLIENT', 'KILL', '1.2.3.4:5', 'x'), ('CLIENT', 'KILL', '1.2.3.4:5'),
    ('CLIENT', 'KILL', 'type', 'master'), ('CLIENT', 'KILL', 'type', 'slave'),
    ('CLIENT', 'KILL', 'TYPE', 'replica', 'SKIPME', 'yes'),
    ('CLIENT', 'KILL', 'id', '99999999', 'type', 'normal'),
    ('CLIENT', 'LIST', 'type', 'foo'), ('CLIENT', 'LIST', 'type', 'normal',
                                       'x'),
    ('CLIENT', 'LIST', 'id', 'x'), ('CLIENT', 'LIST', 'id', '0'),
    ('CLIENT', 'LIST', 'id', '-1'), ('CLIENT', 'LIST', 'id', '1', '2', 'x'),
    ('CLIENT', 'LIST', 'foo'), ('CLIENT', 'LIST', 'type'),
    ('CLIENT', 'LIST', 'id'), ('CLIENT', 'LIST', 'type', 'pubsub'),
    ('CLIENT', 'LIST', 'type', 'master'), ('CLIENT', 'LIST', 'TYPE',
                                           'REPLICA'),
    ('CLIENT', 'LIST', 'id', '99999999'),
    ('CLIENT', 'NO-EVICT', 'maybe'), ('CLIENT', 'NO-EVICT', 'on'),
    ('CLIENT', 'NO-EVICT', 'OFF'), ('CLIENT', 'NO-EVICT'),
]


def test_errors_match_redis(s):
    with peer() as r, s.client() as a, r.client() as b:
        for cmd in KILL_ERRORS:
            assert_eq(a.call(*cmd), b.call(*cmd), short(cmd))


def test_line_has_redis_fields(s):
    with peer() as r, s.client() as a, r.client() as b:
        mine = a.call('CLIENT', 'INFO').decode().strip().split(' ')
        theirs = b.call('CLIENT', 'INFO').decode().strip().split(' ')
        names = [f.partition('=')[0] for f in mine]
        assert_eq([n for n in names if n not in LARDER_FIELDS],
                  [f.partition('=')[0] for f in theirs], 'field names')
        fa, fb = fields(' '.join(mine)), fields(' '.join(theirs))
        for k in ('name', 'flags', 'db', 'sub', 'psub', 'ssub', 'multi',
                  'obl', 'oll', 'omem', 'events', 'cmd', 'user', 'redir',
                  'resp'):
            assert_eq(fa[k], fb[k], 'field %s' % k)
        for cmds in ([('SUBSCRIBE', 'x', 'y'), ('PSUBSCRIBE', 'p*')],
                     [('MULTI',), ('PING',)], [('HELLO', '3')],
                     [('SELECT', '3'), ('CLIENT', 'SETNAME', 'nm'),
                      ('CLIENT', 'NO-EVICT', 'on')]):
            with s.client() as x, r.client() as y, s.client() as lx, \
                    r.client() as ly:
                xid, yid = my_id(x), my_id(y)
                for cmd in cmds:
                    x.send(*cmd)
                    y.send(*cmd)
                time.sleep(0.2)
                gx = [l for l in lines(lx) if l['id'] == str(xid)]
                gy = [l for l in lines(ly) if l['id'] == str(yid)]
                assert_eq(len(gx), 1, 'the client in larder')
                for k in ('flags', 'db', 'sub', 'psub', 'multi', 'resp',
                          'name', 'cmd'):
                    assert_eq(gx[0][k], gy[0][k], '%s after %s' % (k, cmds))


def test_list_every_worker_in_id_order():
    larder_only()
    with Server(workers=3) as srv:
        cs = on_workers(srv, 'ABCABC')
        try:
            ls = lines(cs[0])
            ids = [int(l['id']) for l in ls]
            assert_eq(ids, sorted(ids), 'id order')
            assert_eq(set(ids) >= set(my_id(c) for c in cs), True,
                      'every client listed')
            assert_eq(len(set(l['worker'] for l in ls)), 3, 'three workers')
            # ID and TYPE filters, across workers.
            want = [my_id(cs[1]), my_id(cs[5])]
            got = lines(cs[2], 'ID', *want)
            assert_eq(sorted(int(l['id']) for l in got), sorted(want))
            sid = my_id(cs[4])
            cs[4].call('SUBSCRIBE', 'ch')
            got = lines(cs[0], 'TYPE', 'pubsub')
            assert_eq([int(l['id']) for l in got], [sid])
            assert_eq(got[0]['flags'], 'P')
            assert_eq(got[0]['sub'], '1')
            assert_true(all(l['id'] != got[0]['id']
                            for l in lines(cs[0], 'TYPE', 'normal')),
                        'a subscriber is not normal')
        finally:
            for c in cs:
                c.close()


def test_kill_across_workers():
    larder_only()
    with Server(workers=2) as srv:
        a1, a2, b1, b2, b3 = on_workers(srv, 'AABBB')
        ctl = a1
        # By ID, on the other worker.
        assert_eq(ctl.call('CLIENT', 'KILL', 'ID', my_id(b1)), 1)
        wait_until(lambda: is_gone(b1), SLOW, 'b1 killed')
        # The old form by address, on the other worker.
        addr = fields(b2.call('CLIENT', 'INFO').decode().strip())['addr']
        assert_eq(ctl.call('CLIENT', 'KILL', addr), 'OK')
        wait_until(lambda: is_gone(b2), SLOW, 'b2 killed')
        assert_error(ctl.call('CLIENT', 'KILL', addr), 'ERR No such client')
        # ADDR and LADDR filters.
        addr = fields(b3.call('CLIENT', 'INFO').decode().strip())['addr']
        assert_eq(ctl.call('CLIENT', 'KILL', 'ADDR', addr, 'TYPE', 'pubsub'),
                  0)
        laddr = fields(b3.call('CLIENT', 'INFO').decode().strip())['laddr']
        assert_eq(ctl.call('CLIENT', 'KILL', 'LADDR', laddr, 'ADDR', addr), 1)
        wait_until(lambda: is_gone(b3), SLOW, 'b3 killed')
        # TYPE pubsub kills subscribers only, on every worker.
        subs = on_workers(srv, 'AB')
        for c in subs:
            c.call('SUBSCRIBE', 'k')
        plain = on_workers(srv, 'B')[0]
        assert_eq(ctl.call('CLIENT', 'KILL', 'TYPE', 'pubsub'), 2)
        for c in subs:
            wait_until(lambda: is_gone(c), SLOW, 'subscriber killed')
        assert_eq(plain.call('PING'), 'PONG')
        # USER default with SKIPME yes (the default) spares the killer.
        n = len(lines(ctl)) - 1
        assert_eq(ctl.call('CLIENT', 'KILL', 'USER', 'default'), n)
        wait_until(lambda: is_gone(plain) and is_gone(a2), SLOW,
                   'every other client killed')
        assert_eq(ctl.call('PING'), 'PONG')
        # SKIPME no: the killer goes too, after its reply.
        other = on_workers(srv, 'B')[0]
        assert_eq(ctl.call('CLIENT', 'KILL', 'SKIPME', 'no'), 2)
        assert_true(is_gone(ctl), 'the killer closed after its reply')
        wait_until(lambda: is_gone(other), SLOW, 'the other killed')
        # MAXAGE (Redis 7.4's filter): only clients older than it.
        old = on_workers(srv, 'AB')
        time.sleep(2.1)
        young = on_workers(srv, 'AB')
        assert_eq(young[0].call('CLIENT', 'KILL', 'MAXAGE', '2'), 2)
        for c in old:
            wait_until(lambda: is_gone(c), SLOW, 'an old client killed')
        for c in young:
            assert_eq(c.call('PING'), 'PONG')
            c.close()


def test_kill_a_blocked_client_elsewhere():
    larder_only()
    with Server(workers=2) as srv:
        waiter, ctl = on_workers(srv, 'AB')
        waiter.send('BLPOP', 'kb', '0')
        wait_until(lambda: any(l['flags'] == 'b' for l in lines(ctl)), SLOW,
                   'the waiter blocked')
        wid = [int(l['id']) for l in lines(ctl) if l['flags'] == 'b'][0]
        assert_eq(ctl.call('CLIENT', 'KILL', 'ID', wid), 1)
        wait_until(lambda: is_gone(waiter), SLOW, 'the waiter killed')
        assert_eq(ctl.call('RPUSH', 'kb', 'x'), 1)
        time.sleep(0.3)
        assert_eq(ctl.call('LRANGE', 'kb', '0', '-1'), [b'x'],
                  'nobody took it')


def test_no_evict_no_touch_flags(s):
    with s.client() as c:
        assert_eq(c.call('CLIENT', 'NO-EVICT', 'on'), 'OK')
        assert_eq(fields(c.call('CLIENT', 'INFO').decode().strip())['flags'],
                  'e')
        assert_eq(c.call('CLIENT', 'NO-TOUCH', 'on'), 'OK')
        assert_eq(fields(c.call('CLIENT', 'INFO').decode().strip())['flags'],
                  'eT')
        assert_eq(c.call('CLIENT', 'NO-EVICT', 'off'), 'OK')
        assert_eq(c.call('CLIENT', 'NO-TOUCH', 'OFF'), 'OK')
        assert_eq(fields(c.call('CLIENT', 'INFO').decode().strip())['flags'],
                  'N')
        assert_error(c.call('CLIENT', 'NO-TOUCH', 'x'), 'ERR syntax error')


if __name__ == '__main__':
    main(globals(), workers=2)
