"""Chaos: a mixed load (strings, INCR, lists, sets, hashes, sorted sets, MULTI/EXEC, pub/sub, and BLPOP and EVAL once the server has them) runs while random server processes - workers, the reaper, the syncer, the broker and the master - are killed with SIGKILL (the master takes the rest with it, and the test starts the server again on the same data): every acknowledged write is there at the end, every client reconnects and is served, no process is left behind, and the data file stays within twice its compacted copy. LARDER_CHAOS_SECONDS sets the length (default 30)."""

import os
import random
import signal
import threading
import time

from larder_test import (Client, ConnectionClosed, Server, assert_eq,
                         assert_true, larder_only, main, proc_alive,
                         proc_comm, short, wait_until)

SECONDS = float(os.environ.get('LARDER_CHAOS_SECONDS', '30'))
SEED = int(os.environ.get('LARDER_CHAOS_SEED', '0')) or int(time.time())
WORKERS = 2
KILL_EVERY = (0.3, 1.5)     # seconds between kills, uniform
# Of the kills, the master's share: it stops everything, so less often.
MASTER_SHARE = 0.1
REPLY_TIMEOUT = 5.0         # one command; longer is a broken connection
RECONNECT_DEADLINE = 30.0   # a client must be served again within this
# data.mdb after the run, against a compacted copy of the same data
# (SAVE): killed readers and half-done transactions must not make LMDB
# grow the file without bound (the reaper clears dead readers' slots, so
# freed pages are used again). The slack covers the pages a snapshot held
# while it was read and LMDB's own free lists.
DATA_FILE_FACTOR = 2.0
DATA_FILE_SLACK_MIB = 16
# The durable pin (st_durable.h "Cost"): while the syncer pins the durable
# snapshot no page freed since is reused, so the file also holds what the
# commits of a flush cycle or two allocate. The syncer moves the pin every
# 16 MiB the commits allocate, and commits wait once the file has reached
# ST_DURABLE_ROOM_LIVE (2, DATA_FILE_FACTOR here) x its live data +
# ST_DURABLE_ROOM_BYTES (128 MiB); past it the file grows by what the
# workers commit between two flushes, or while a killed syncer is respawned
# after the 2 s the commits wait (32 MiB). Measured with it: 149-152 MiB
# for 9.7-10.9 MiB of data, 0-4 restarts; before it 229-656 MiB (4
# restarts: each grew the file again before the new syncer's first pin).
# A file beyond it (a reader slot never cleared: growth with every write)
# fails.
DURABLE_PIN_ALLOWANCE_MIB = 128 + 32
# A blocking pop waits this long for its element (which was pushed, and
# acknowledged, right after it was sent): a timeout is a lost wake-up.
BLOCK_TIMEOUT = 10


class Chaos:
    """The server under test, its processes by role, and the kills."""

    def __init__(self, server):
        self.server = server
        self.lock = threading.Lock()
        self.roles = {}         # pid -> 'worker' | 'reaper' | 'syncer' ...
        self.kills = {}         # role -> count
        self.restarts = 0
        self.last_kill = time.time()
        self.epoch = 0          # bumped when the server is restarted
        self.learn_roles()

    @property
    def port(self):
        return self.server.port

    def learn_roles(self):
        """At start: children in fork order are the workers, the reaper,
        the syncer; the broker names itself."""
        wait_until(lambda: len(self.server.children()) >= WORKERS + 3, 10,
                   'the server\'s children')
        kids = sorted(self.server.children())
        rest = []
        for p in kids:
            if 'larder-broker' in open('/proc/%d/comm' % p).read():
                self.roles[p] = 'broker'
            else:
                rest.append(p)
        names = ['worker'] * WORKERS + ['reaper', 'syncer']
        assert_eq(len(rest), len(names), 'children %r' % kids)
        for p, r in zip(rest, names):
            self.roles[p] = r

    def kill_one(self, rnd):
        if rnd.random() < MASTER_SHARE:
            self.kill_master()
            return
        pid = rnd.choice(sorted(self.roles))
        role = self.roles[pid]
        before = set(self.server.children())
        os.kill(pid, signal.SIGKILL)
        self.last_kill = time.time()
        self.kills[role] = self.kills.get(role, 0) + 1
        wait_until(lambda: not proc_alive(pid), 10, '%s %d to die' % (role,
                                                                      pid))
        # Its replacement (the master respawns it, with back-off).
        def replaced():
            new = set(self.server.children()) - before
            return new and new.pop()
        newpid = wait_until(replaced, 15, 'a new %s' % role)
        del self.roles[pid]
        self.roles[newpid] = role

    def kill_master(self):
        tree = [self.server.pid] + self.server.children()
        os.kill(self.server.pid, signal.SIGKILL)
        self.server.proc.wait()
        self.last_kill = time.time()
        self.kills['master'] = self.kills.get('master', 0) + 1
        # Children die with the master (PDEATHSIG): none may linger.
        wait_until(lambda: not any(proc_alive(p) for p in tree), 15,
                   'the children of a killed master to exit')
        self.roles.clear()
        self.server.start()
        self.restarts += 1
        self.epoch += 1
        self.learn_roles()


class Load(threading.Thread):
    """One client: runs `step` in a loop, reconnecting when its connection
    breaks; what the server acknowledged is recorded by the steps (what
    was in flight when a connection broke may or may not be there)."""

    def __init__(self, chaos, name, stop):
        super().__init__(daemon=True)
        self.chaos = chaos
        self.name = name
        self.stop = stop
        self.c = None
        self.ops = 0
        self.reconnects = 0
        self.last_ok = time.time()
        self.error = None
        self.n = 0

    def connect(self):
        end = time.time() + RECONNECT_DEADLINE
        while True:
            try:
                c = Client(self.chaos.port, timeout=REPLY_TIMEOUT)
                self.setup(c)
                return c
            except (OSError, ConnectionClosed, ValueError):
                if time.time() > end:
                    raise AssertionError('%s: not served again within %.0f '
                                         's' % (self.name,
                                                RECONNECT_DEADLINE))
                time.sleep(0.02)

    def setup(self, c):
        pass

    def run(self):
        try:
            while not self.stop.is_set():
                if self.c is None:
                    self.c = self.connect()
                try:
                    self.step(self.c)
                    self.ops += 1
                    self.last_ok = time.time()
                except (OSError, ConnectionClosed, ValueError):
                    self.c.close()
                    self.c = None
                    self.reconnects += 1
        except Exception as e:
            self.error = '%s: %s' % (self.name, e)
        finally:
            if self.c is not None:
                self.c.close()

    def expect(self, got, want, what):
        if got != want:
            raise AssertionError('%s: %s replied %s, expected %s' % (
                self.name, what, short(got), short(want)))


class Strings(Load):
    """SET of a fresh key each time, and an INCR counter."""

    def __init__(self, *a):
        super().__init__(*a)
        self.acked = []
        self.incr_acked = 0

    def step(self, c):
        self.n += 1
        k, v = 'str:%s:%d' % (self.name, self.n), 'v%d' % self.n
        self.expect(c.call('SET', k, v), 'OK', 'SET')
        self.acked.append((k, v.encode()))
        r = c.call('INCR', 'ctr:%s' % self.name)
        if not isinstance(r, int):
            raise AssertionError('%s: INCR replied %s' % (self.name, short(r)))
        self.incr_acked = max(self.incr_acked, r)

    def verify(self, c):
        for k, v in self.acked:
            assert_eq(c.call('GET', k), v, 'acknowledged SET %s' % k)
        got = int(c.call('GET', 'ctr:%s' % self.name) or 0)
        assert_true(got >= self.incr_acked, '%s: counter %d below the %d '
                    'acknowledged' % (self.name, got, self.incr_acked))
        return len(self.acked) + self.incr_acked


class Collections(Load):
    """RPUSH, SADD, HSET and ZADD of element n into this client's
    collections, one command each."""

    def __init__(self, *a):
        super().__init__(*a)
        self.acked = {'l': [], 's': [], 'h': [], 'z': []}

    def step(self, c):
        self.n += 1
        e = b'%d' % self.n
        key = lambda t: '%s:%s' % (t, self.name)
        r = c.call('RPUSH', key('l'), e)
        assert_true(isinstance(r, int), 'RPUSH %s' % short(r))
        self.acked['l'].append(e)
        self.expect(c.call('SADD', key('s'), e), 1, 'SADD')
        self.acked['s'].append(e)
        self.expect(c.call('HSET', key('h'), b'f' + e, e), 1, 'HSET')
        self.acked['h'].append(e)
        self.expect(c.call('ZADD', key('z'), e, b'm' + e), 1, 'ZADD')
        self.acked['z'].append(e)

    def verify(self, c):
        key = lambda t: '%s:%s' % (t, self.name)
        lst = c.call('LRANGE', key('l'), 0, -1)
        # Each element at most once, in the order pushed; every acked one.
        assert_eq(lst, sorted(set(lst), key=int), '%s: list order' % key('l'))
        missing = set(self.acked['l']) - set(lst)
        assert_eq(missing, set(), 'acknowledged RPUSH lost')
        members = set(c.call('SMEMBERS', key('s')))
        assert_eq(set(self.acked['s']) - members, set(),
                  'acknowledged SADD lost')
        h = c.call('HGETALL', key('h'))
        fields = dict(zip(h[0::2], h[1::2]))
        for e in self.acked['h']:
            assert_eq(fields.get(b'f' + e), e, 'acknowledged HSET f%s' % e)
        z = c.call('ZRANGE', key('z'), 0, -1, 'WITHSCORES')
        scores = dict(zip(z[0::2], z[1::2]))
        for e in self.acked['z']:
            assert_eq(scores.get(b'm' + e), e, 'acknowledged ZADD m%s' % e)
        return sum(len(v) for v in self.acked.values())


class Transactions(Load):
    """MULTI / SET / HSET / INCR / EXEC: all of a transaction or none of
    it, and every acknowledged one whole."""

    def __init__(self, *a):
        super().__init__(*a)
        self.acked = []

    def step(self, c):
        self.n += 1
        n = self.n
        r = c.pipeline([('MULTI',), ('SET', 'tx:%s:%d' % (self.name, n), n),
                        ('HSET', 'txh:%s' % self.name, n, n),
                        ('INCR', 'txc:%s' % self.name), ('EXEC',)])
        self.expect(r[:4], ['OK', 'QUEUED', 'QUEUED', 'QUEUED'], 'MULTI')
        if not (isinstance(r[4], list) and r[4][:2] == ['OK', 1]):
            raise AssertionError('%s: EXEC replied %s' % (self.name,
                                                          short(r[4])))
        self.acked.append((n, r[4][2]))

    def verify(self, c):
        h = c.call('HGETALL', 'txh:%s' % self.name)
        fields = dict(zip(h[0::2], h[1::2]))
        count = int(c.call('GET', 'txc:%s' % self.name) or 0)
        # Atomic: the string and the field exist for exactly the same n,
        # and the counter counts them.
        strings = set(int(k.split(b':')[-1]) for k in
                      c.call('KEYS', 'tx:%s:*' % self.name))
        assert_eq(strings, set(int(f) for f in fields),
                  '%s: transactions half applied' % self.name)
        assert_eq(count, len(strings), '%s: INCR of the transactions'
                  % self.name)
        for n, _ in self.acked:
            assert_true(n in strings, 'acknowledged EXEC %d lost' % n)
        return len(self.acked)


class PubSub(Load):
    """A subscriber on its own connection and a publisher: each message
    whose PUBLISH counted the subscriber arrives, in order, once (a message
    lost to a kill breaks the subscriber's wait: both connect again).
    Messages of the other PUBLISHes (those that counted no subscriber, and
    one in flight when a connection broke, which the server may still run
    after the new subscription) may arrive too, in order."""

    def __init__(self, *a):
        super().__init__(*a)
        self.sub = None
        self.received = 0
        self.last = 0           # the number of the last message received
        self.last_msg_at = time.time()

    def setup(self, c):
        if self.sub is not None:
            self.sub.close()
        self.sub = Client(self.chaos.port, timeout=REPLY_TIMEOUT)
        ch = 'chaos:%s' % self.name
        r = self.sub.call('SUBSCRIBE', ch)
        if r != [b'subscribe', ch.encode(), 1]:
            raise ConnectionClosed('subscribe: %r' % (r,))

    def step(self, c):
        self.n += 1
        r = c.call('PUBLISH', 'chaos:%s' % self.name, self.n)
        # The count may include a subscriber whose connection closed a
        # moment ago (Redis counts one until it reads its EOF too).
        if not isinstance(r, int) or r < 0:
            raise AssertionError('%s: PUBLISH replied %s' % (self.name,
                                                             short(r)))
        if r == 0:
            return              # the subscription is not known everywhere yet
        head = [b'message', b'chaos:%s' % self.name.encode()]
        while True:
            m = self.sub.read_reply()
            self.expect(m[:2] if isinstance(m, list) else m, head,
                        'the subscriber\'s message')
            k = int(m[2])
            if not self.last < k <= self.n:
                raise AssertionError('%s: message %d after %d, expecting %d'
                                     % (self.name, k, self.last, self.n))
            self.last = k
            self.received += 1
            if k == self.n:
                break
        self.last_msg_at = time.time()

    def verify(self, c):
        return self.received


class BlockingPops(Load):
    """A consumer blocked in BLPOP on its own connection and a producer
    that RPUSHes element n after the BLPOP was sent: the consumer gets the
    elements in push order, each once, and at the end every acknowledged
    one was received or is still in the list, but for at most one per
    BLPOP whose connection broke (it may have popped an element whose
    reply the kill lost, as in Redis)."""

    def __init__(self, *a):
        super().__init__(*a)
        self.cons = None
        self.acked = []
        self.received = []
        self.broken_pops = 0
        self.key = 'bq:%s' % self.name

    def setup(self, c):
        if self.cons is not None:
            self.cons.close()
        self.cons = Client(self.chaos.port,
                           timeout=BLOCK_TIMEOUT + REPLY_TIMEOUT)

    def step(self, c):
        self.n += 1
        self.cons.send('BLPOP', self.key, BLOCK_TIMEOUT)
        try:
            r = c.call('RPUSH', self.key, self.n)
            assert_true(isinstance(r, int), 'RPUSH %s' % short(r))
            self.acked.append(self.n)
            r = self.cons.read_reply()
        except (OSError, ConnectionClosed, ValueError):
            self.broken_pops += 1
            raise
        if r is None:
            raise AssertionError('%s: BLPOP timed out with element %d '
                                 'acknowledged' % (self.name, self.n))
        if not (isinstance(r, list) and r[0] == self.key.encode()):
            raise AssertionError('%s: BLPOP replied %s' % (self.name,
                                                           short(r)))
        e = int(r[1])
        if self.received and e <= self.received[-1]:
            raise AssertionError('%s: BLPOP gave %d after %d' % (
                self.name, e, self.received[-1]))
        self.received.append(e)

    def verify(self, c):
        left = [int(e) for e in c.call('LRANGE', self.key, 0, -1)]
        assert_eq(left, sorted(set(left)), '%s: list order' % self.key)
        got = set(left) | set(self.received)
        assert_eq(len(got), len(left) + len(self.received),
                  '%s: an element both popped and left' % self.key)
        missing = set(self.acked) - got
        assert_true(len(missing) <= self.broken_pops, '%s: %d acknowledged '
                    'pushes neither popped nor left (%d pops broken)' % (
                        self.key, len(missing), self.broken_pops))
        return len(self.acked) - len(missing)


# INCR a counter and RPUSH n, in one script: both or neither.
SCRIPT = ("redis.call('INCR', KEYS[1]) "
          "return redis.call('RPUSH', KEYS[2], ARGV[1])")


class Scripts(Load):
    """EVAL of SCRIPT: every acknowledged run is there, and no run is half
    applied (the counter counts the list)."""

    def __init__(self, *a):
        super().__init__(*a)
        self.acked = []
        self.keys = ('sc:c:%s' % self.name, 'sc:l:%s' % self.name)

    def step(self, c):
        self.n += 1
        r = c.call('EVAL', SCRIPT, 2, self.keys[0], self.keys[1], self.n)
        if not isinstance(r, int):
            raise AssertionError('%s: EVAL replied %s' % (self.name,
                                                          short(r)))
        self.acked.append(self.n)

    def verify(self, c):
        count = int(c.call('GET', self.keys[0]) or 0)
        lst = [int(e) for e in c.call('LRANGE', self.keys[1], 0, -1)]
        assert_eq(count, len(lst), '%s: a script half applied' % self.name)
        assert_eq(lst, sorted(set(lst)), '%s: list order' % self.name)
        assert_eq(set(self.acked) - set(lst), set(),
                  '%s: acknowledged EVAL lost' % self.name)
        return len(self.acked)


LOADS = [Strings, Strings, Collections, Collections, Transactions, PubSub]
# Loads that join once the server has their command (named in the output
# as not run until then).
LATER = {'blpop': BlockingPops, 'eval': Scripts}


def processes_of(server):
    """PIDs of processes whose command line names this server's dir."""
    out = []
    for name in os.listdir('/proc'):
        if name.isdigit() and server.dir in proc_comm(int(name)) and \
                proc_alive(int(name)):
            out.append(int(name))
    return out


def test_chaos():
    larder_only()
    rnd = random.Random(SEED)
    print('# chaos: %.0f s, seed %d' % (SECONDS, SEED))
    with Server(workers=WORKERS) as server:
        with server.client() as c:
            names = set(n.decode() for n in c.call('COMMAND', 'LIST'))
        missing = [n for n in sorted(LATER) if n not in names]
        kinds = LOADS + [LATER[n] for n in sorted(LATER) if n in names]
        chaos = Chaos(server)
        stop = threading.Event()
        loads = [cls(chaos, '%s%d' % (cls.__name__.lower(), i), stop)
                 for i, cls in enumerate(kinds)]
        for l in loads:
            l.start()
        t0 = time.time()
        try:
            while time.time() - t0 < SECONDS:
                time.sleep(rnd.uniform(*KILL_EVERY))
                errors = [l.error for l in loads if l.error]
                assert_eq(errors, [], 'load errors')
                chaos.kill_one(rnd)
            # Quiet: every client is served again, without new kills.
            quiet = time.time()
            wait_until(lambda: all(l.last_ok > quiet + 0.5 for l in loads),
                       RECONNECT_DEADLINE, 'every client served after the '
                       'last kill')
            wait_until(lambda: all(l.last_msg_at > quiet for l in loads
                                   if isinstance(l, PubSub)),
                       RECONNECT_DEADLINE, 'pub/sub messages after the '
                       'last kill')
        finally:
            stop.set()
            for l in loads:
                l.join(RECONNECT_DEADLINE + REPLY_TIMEOUT)
        assert_eq([l.error for l in loads if l.error], [], 'load errors')
        assert_true(all(not l.is_alive() for l in loads), 'a client hung')
        # What is left: the acknowledged writes, read after a restart too
        # (the data on disk, not a process's memory).
        counts = {}
        for rnd_ in ('running', 'restarted'):
            with server.client() as c:
                for l in loads:
                    counts[l.name] = l.verify(c)
            if rnd_ == 'running':
                server.restart()
        procs = processes_of(server)
        assert_eq(sorted(procs), sorted([server.pid] + server.children()),
                  'processes of this server')
        assert_eq(len(server.children()), WORKERS + 3, 'children')
        with server.client() as c:
            assert_eq(c.call('SAVE'), 'OK')
        # The space data.mdb takes: with lmdb-writemap yes it is a sparse
        # file of maxdisk bytes whose blocks are the data plus the room
        # kept ahead (storage/st_room.h), so count its blocks.
        st = os.stat(os.path.join(server.dir, 'data.mdb'))
        size = min(st.st_size, st.st_blocks * 512)
        live = os.path.getsize(os.path.join(server.dir, 'backup.mdb'))
        bound = DATA_FILE_FACTOR * live + (
            DATA_FILE_SLACK_MIB + DURABLE_PIN_ALLOWANCE_MIB) * 2 ** 20
        ops = sum(l.ops for l in loads)
        print('# chaos: %.0f s, %d kills %s, %d restarts, %d client '
              'operations, %d reconnects, %d acknowledged writes checked, '
              '0 lost; data.mdb %.1f MiB, its compacted copy %.1f MiB '
              '(bound %.1f); not in the load yet (no such command): %s' % (
                  SECONDS, sum(chaos.kills.values()),
                  dict(sorted(chaos.kills.items())), chaos.restarts, ops,
                  sum(l.reconnects for l in loads),
                  sum(v for k, v in counts.items() if 'pubsub' not in k),
                  size / 2 ** 20, live / 2 ** 20, bound / 2 ** 20,
                  ', '.join(missing) or 'none'))
        assert_true(size <= bound, 'data.mdb is %d bytes, its data %d'
                    % (size, live))
    # Stopped: nothing of it is left running.
    assert_eq(processes_of(server), [], 'processes left after stop')


test_chaos.timeout = int(SECONDS) + 300

if __name__ == '__main__':
    main(globals())
