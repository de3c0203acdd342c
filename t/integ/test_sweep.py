"""Bad-input sweep: every command of larder's COMMAND LIST, with each boundary value in each argument position of plausible calls built from redis-server's COMMAND DOCS, against larder and a redis-server side by side: every larder reply within 1 s, every larder process's peak RSS under a stated bound, no crash, and each reply equal to Redis's but for the reviewed differences listed in DIFFERENCES."""

import os
import re
import shutil
import signal
import socket
import threading
import time

from larder_test import (Client, ConnectionClosed, RespError, Server, Skip,
                         asan_small_quarantine, assert_true, larder_only,
                         main, proc_kib, proc_tree, rss_bound_mib, short)

# The boundary values of issue 16, with INT_MAX and LLONG_MAX beside 2^31
# and 2^63 (an int index or a count + 1 overflows at them: LMPOP
# 2147483647 read argv out of bounds).
VALUES = [b'0', b'-1', b'1', b'2147483647',
          b'2147483648', b'-2147483648', b'4294967296', b'-4294967296',
          b'9007199254740992', b'-9007199254740992',
          b'9223372036854775808', b'-9223372036854775808',
          b'18446744073709551616', b'9223372036854775807',
          b'nan', b'inf', b'', b'abc',
          # score and float syntax: what strtod takes and what it does not
          b'-inf', b'(', b'1e400', b' 1']

# The default run (make check) sends every case in RESP2 and a
# deterministic 1 in RESP3_SHARDS of them in RESP3 (about 30 s and 10 s on
# a quiet machine); LARDER_SWEEP=full sends every case in both.
# LARDER_SWEEP_SHARD=n picks which slice of RESP3 (default 0).
FULL = os.environ.get('LARDER_SWEEP') == 'full'
RESP3_SHARDS = 4
SHARD = int(os.environ.get('LARDER_SWEEP_SHARD', '0'))
# Where to write every case that differs (one line each), for review.
REPORT = os.environ.get('LARDER_SWEEP_REPORT')

REPLY_DEADLINE = 1.0        # each larder reply (the bound)
REDIS_DEADLINE = 5.0        # the reference; silent past it: not compared
# Peak RSS (VmHWM) of each larder process over the sweep. A worker
# peaks near 3 MiB here (the data set and every reply are a few KiB; the
# cache region is touched only as far as it is filled); a command that
# allocated without bound (the SRANDMEMBER -2^63 of issue 16 reached
# 24 GB) passes it within a fraction of its first second.
RSS_BOUND_MIB = rss_bound_mib(64)
asan_small_quarantine()
RSS_SAMPLE_EVERY = 200      # cases (VmHWM keeps the peak in between)
# Past this a larder process is killed at once (and the case fails).
WATCHDOG_MIB = 1024
WATCHDOG_PERIOD = 0.02

# ---------------------------------------------------------------------
# The data set both servers hold before each case (restored after any
# case that may have written).

SEED = [
    ('SET', 'num', '10'), ('SET', 'num2', '20'), ('SET', 'num3', '3.5'),
    ('SET', 'str', 'hello'),
    ('HSET', 'h', 'f1', 'v1', 'f2', '2', 'f3', '1.5'),
    ('HSET', 'h2', 'f1', 'x'),
    ('RPUSH', 'l', 'a', 'b', 'c', '1', '2'), ('RPUSH', 'l2', 'x', 'y'),
    ('RPUSH', 'l3', 'c'),
    ('SADD', 's', 'a', 'b', 'c', '1'), ('SADD', 's2', 'b', 'c', 'd'),
    ('SADD', 's3', 'c'),
    ('ZADD', 'z', '1', 'a', '2', 'b', '3', 'c'),
    ('ZADD', 'z2', '1', 'b', '2', 'c', '3', 'd'), ('ZADD', 'z3', '5', 'c'),
]

# Key arguments by command group: the i-th key argument of a call takes
# the i-th name (so SMOVE gets s and s2, MGET num and num2).
KEYS_BY_GROUP = {
    'string': ['num', 'num2', 'num3'],
    'hash': ['h', 'h2', 'h'],
    'list': ['l', 'l2', 'l3'],
    'set': ['s', 's2', 's3'],
    'sorted-set': ['z', 'z2', 'z3'],
    'generic': ['num', 'str', 'dst'],
}

# Plausible values of non-key arguments by name (then by type).
VALUE_BY_NAME = {
    'count': '2', 'start': '0', 'stop': '-1', 'end': '-1', 'index': '0',
    # a blocking command's timeout: short, should its key be empty
    'offset': '0', 'timeout': '0.1', 'seconds': '100',
    'milliseconds': '100000', 'increment': '1', 'decrement': '1',
    'rank': '1', 'len': '0', 'numkeys': None, 'score': '1.5',
    'min': '1', 'max': '3', 'weight': '1', 'value': 'v', 'member': 'a',
    'field': 'f1', 'element': 'a', 'pivot': 'b', 'channel': 'ch',
    'shardchannel': 'ch', 'pattern': '*', 'message': 'm',
    'connection-name': 'conn', 'parameter': 'maxclients',
    'protover': '2', 'limit': '0', 'maxlen': '0', 'num-rank': '1',
    'cursor': '0', 'delta': '1', 'replacementvalue': 'r',
    'newkey': 'dst', 'destination': 'dst', 'source': None,
    'username': 'default', 'password': 'p', 'clientname': 'c',
    'libname': 'lib', 'libver': '1', 'seconds_or_milliseconds': '100',
    'unix-time-seconds': '4000000000',
    'unix-time-milliseconds': '4000000000000',
}
VALUE_BY_TYPE = {'integer': '1', 'double': '1.5', 'string': 'a',
                 'pattern': '*', 'unix-time': '4000000000'}
# Lexicographic range bounds (ZRANGEBYLEX and the BYLEX forms).
LEX_COMMANDS = ('zrangebylex', 'zrevrangebylex', 'zlexcount',
                'zremrangebylex')

# Calls the argument tree does not give (the BYLEX and BYSCORE forms of
# ZRANGE with bounds of their kind, a negative count).
EXTRA_TEMPLATES = {
    'zrange': [['z', '[a', '[c', 'BYLEX', 'LIMIT', '0', '2'],
               ['z', '1', '3', 'BYSCORE', 'REV', 'LIMIT', '0', '2',
                'WITHSCORES']],
    'zrangestore': [['z2', 'z', '[a', '[c', 'BYLEX', 'LIMIT', '0', '2']],
    'srandmember': [['s', '-5']],
    'hrandfield': [['h', '-5', 'WITHVALUES']],
    'zrandmember': [['z', '-5', 'WITHSCORES']],
    'lpos': [['l', 'a', 'RANK', '-1', 'COUNT', '0', 'MAXLEN', '10']],
}

# Commands not swept, each with its reason.
NOT_SWEPT = {
    'shutdown': 'stops the server under test',
    'debug': 'a debugging aid: larder\'s subcommands are its own',
    'config|set': 'changes the server under test (maxclients, port ...); '
                  'its range checks are test_config\'s',
    'client|kill': 'would close the sweep\'s own connection',
    'client|pause': 'would stall every other case',
    'monitor': 'streams every later case back',
    'bgrewriteaof': 'starts a background job: whether the next one finds it '
                    'still running is the servers\' timing (test_server '
                    'checks its replies)',
    'migrate': 'connects to the host it names (a name lookup or connect '
               'timeout takes the network\'s time, not the server\'s); '
               'test_migrate sweeps its numeric arguments against '
               'redis-server',
}

# How replies are compared, by command (default: exactly).
#   order:    the same elements in any order (Redis tips them
#             nondeterministic_output_order)
#   shape:    random output: the same type and length (errors exactly)
#   scan:     a cursor is a position in the server's own order: the same
#             shape and a valid cursor; the same elements only for a
#             fresh iteration (cursor 0) that both finish in one call. A
#             cursor the server did not return (-1, 2^63 ...) names
#             nothing in particular: Redis returns the whole of a small
#             hash, set or zset whatever the cursor (its compact
#             encodings ignore it), larder the elements after that
#             position in its order (none after 2^64-1). Reviewed: both
#             keep SCAN's guarantees.
#   describe: describes the server itself (INFO, CLIENT LIST, COMMAND
#             COUNT ...): only whether it is an error, and the error text
COMPARE = {
    'scan': 'scan', 'hscan': 'scan', 'sscan': 'scan', 'zscan': 'scan',
    'info': 'describe', 'client|list': 'describe', 'client|info': 'describe',
    'acl|genpass': 'shape',  # random
    'client|id': 'describe', 'time': 'describe', 'lastsave': 'describe',
    'command': 'describe', 'command|info': 'describe',
    'command|docs': 'describe', 'command|list': 'describe',
    'command|count': 'describe', 'config|get': 'describe',
    'role': 'describe', 'hello': 'describe', 'bgsave': 'describe',
    'command|help': 'describe', 'client|help': 'describe',
    'config|help': 'describe', 'pubsub|help': 'describe',
    # what took how long in this server (a FLUSHALL past 10 ms under load
    # is slow in one server and not the other; test_monitoring checks
    # their contents)
    'slowlog|get': 'describe', 'slowlog|len': 'describe',
    'latency|histogram': 'describe', 'latency|doctor': 'describe',
}

# Cases whose Redis reply is unbounded: Redis builds a reply of |count|
# elements in memory (2^31 of them: tens of GB, minutes), so they are not
# sent to it. larder must answer them within the deadline with its
# documented bound: it closes a connection whose reply would pass
# client-reply-limit, as Redis closes a client over its output buffer
# limit. (count -2^63 is out of Redis's range and is sent: an error.)
UNBOUNDED_COUNT = {'srandmember': 2, 'hrandfield': 2, 'zrandmember': 2}

# Every deliberate difference from Redis, with its reason; each entry is
# (command, position, value or None for any, larder's reply pattern).
# A case matching none of them must reply as Redis does.
DIFFERENCES = [
    ('lpos', None, b'-9223372036854775808', r'value is out of range, value '
     r'must between -9223372036854775807 and 9223372036854775807',
     'RANK -2^63: Redis 7.0 negates it into itself (signed overflow, '
     'undefined behaviour in C) and then returns every match from the '
     'tail whatever COUNT says; larder answers as Redis 7.2 does, with '
     'the range error'),
    ('script|debug', None, None, r'Use SCRIPT DEBUG YES/SYNC/NO',
     'the sweep pipelines its calls: Redis refuses SCRIPT DEBUG in a '
     'pipeline before reading its argument (a lone call gets the same '
     'error as larder\'s); larder has no script debugger to guard'),
]


# ---------------------------------------------------------------------
# Templates

def docs_dict(reply):
    """COMMAND DOCS (RESP2) as {name: fields}, subcommands included."""
    out = {}
    for name, fields in zip(reply[0::2], reply[1::2]):
        d = dict(zip(fields[0::2], fields[1::2]))
        out[name.decode()] = d
        subs = d.get(b'subcommands')
        if subs:
            out.update(docs_dict(subs))
    return out


def arg_fields(a):
    d = dict(zip(a[0::2], a[1::2]))
    return {
        'name': d[b'name'].decode(),
        'type': d[b'type'].decode(),
        'token': d[b'token'].decode() if b'token' in d else None,
        'flags': [f if isinstance(f, str) else f.decode()
                  for f in d.get(b'flags', [])],
        'args': [arg_fields(x) for x in d.get(b'arguments', [])],
    }


class Builder:
    """Expands a command's argument tree into calls. `choice` maps a oneof
    (by id) to the alternative it takes; optional arguments are included
    when `full`."""

    def __init__(self, name, group, full, choice):
        self.name = name
        self.group = group
        self.full = full
        self.choice = choice
        self.nkeys = 0
        self.oneofs = []

    def key(self, arg):
        pool = KEYS_BY_GROUP.get(self.group, KEYS_BY_GROUP['generic'])
        if self.group == 'generic' and arg['name'] in ('newkey',
                                                       'destination'):
            return 'dst'
        k = pool[min(self.nkeys, len(pool) - 1)]
        self.nkeys += 1
        return k

    def value(self, arg):
        n, t = arg['name'], arg['type']
        if self.name in LEX_COMMANDS:
            if n == 'min':
                return '[a'
            if n == 'max':
                return '[c'
        if t == 'unix-time':
            return ('4000000000000' if self.name.startswith('p') else
                    '4000000000')
        v = VALUE_BY_NAME.get(n)
        if v is not None:
            return v
        return VALUE_BY_TYPE.get(t, 'a')

    def one(self, arg, out):
        """Append one instance of arg."""
        t = arg['type']
        if arg['token'] and t != 'pure-token':
            out.append(arg['token'])
        if t == 'pure-token':
            out.append(arg['token'])
        elif t == 'key':
            out.append(self.key(arg))
        elif t == 'oneof':
            self.oneofs.append((id(arg), len(arg['args'])))
            k = self.choice.get(id(arg), 0)
            self.one(arg['args'][k], out)
        elif t == 'block':
            for sub in arg['args']:
                self.arg(sub, out)
        else:
            out.append(self.value(arg))

    def arg(self, arg, out):
        if 'optional' in arg['flags'] and not self.full:
            return
        self.one(arg, out)
        if 'multiple' in arg['flags'] and self.full:
            self.one(arg, out)

    def build(self, args):
        out = []
        for a in args:
            self.arg(a, out)
        return out


def templates(name, docs):
    """The calls (lists of str, without the command name) for a command:
    required arguments only, every optional one, and each alternative of
    each oneof with the optional ones."""
    args = [arg_fields(a) for a in docs.get(b'arguments', [])]
    group = docs.get(b'group', b'generic').decode()
    seen, out = set(), []

    def add(call):
        call = fill_numkeys(args, call)
        t = tuple(call)
        if t not in seen:
            seen.add(t)
            out.append(call)

    b = Builder(name, group, False, {})
    add(b.build(args))
    b = Builder(name, group, True, {})
    add(b.build(args))
    for oid, n in b.oneofs:
        for k in range(1, n):
            add(Builder(name, group, True, {oid: k}).build(args))
    for call in EXTRA_TEMPLATES.get(name, []):
        add(list(call))
    return out


def fill_numkeys(args, call):
    """Set a numkeys argument to the number of keys after it."""
    names = [a['name'] for a in args]
    if 'numkeys' not in names:
        return call
    # numkeys is the first integer-looking argument before the keys; the
    # keys are the names of KEYS_BY_GROUP that follow it.
    allkeys = set(k for ks in KEYS_BY_GROUP.values() for k in ks)
    for i, v in enumerate(call):
        if v == '1' and i + 1 < len(call) and call[i + 1] in allkeys:
            j = i + 1
            while j < len(call) and call[j] in allkeys:
                j += 1
            call = list(call)
            call[i] = str(j - i - 1)
            return call
    return call


# ---------------------------------------------------------------------
# Running cases

class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile]


CLOSED = 'connection closed'
SILENT = 'no reply'


class Side:
    """One server's connection for the sweep: sends a case with RESET
    after it and reads every reply up to RESET's."""

    def __init__(self, server, proto):
        self.server = server
        self.proto = proto
        self.c = None
        self.dirty = True

    def connect(self):
        if self.c:
            self.c.close()
        self.c = Client(self.server.port)

    def send(self, argv):
        if self.c is None:
            self.connect()
        pre = []
        if self.dirty:
            pre = [('FLUSHALL',)] + SEED
        if self.proto == 3:
            pre.append(('HELLO', '3'))      # RESET went back to RESP2
        self.npre = len(pre)
        data = b''.join(encode(a) for a in pre + [argv, ('RESET',)])
        try:
            self.c.send_raw(data)
            self.sent = True
        except OSError:
            self.sent = False

    def read(self, deadline):
        """The case's replies (a list), CLOSED or SILENT; time taken."""
        t0 = time.time()
        if not self.sent:
            self.connect()
            return CLOSED, 0.0
        try:
            for _ in range(self.npre):
                self.c.settimeout(max(0.001, deadline))
                r = self.c.read_reply()
                if isinstance(r, RespError):
                    raise AssertionError('seeding failed: %s' % r.message)
            t1 = time.time()
            replies = []
            while True:
                self.c.settimeout(max(0.001, t1 + deadline - time.time()))
                r = self.c.read_reply()
                if r == 'RESET':
                    return replies, time.time() - t1
                replies.append(r)
        except socket.timeout:
            self.connect()
            return SILENT, time.time() - t0
        except (ConnectionClosed, OSError):
            self.connect()
            return CLOSED, time.time() - t0


def encode(args):
    out = [b'*%d\r\n' % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


def norm(v):
    """A reply as a sortable, comparable value."""
    if isinstance(v, list):
        return (type(v).__name__, tuple(norm(x) for x in v))
    if isinstance(v, dict):
        return ('map', tuple(sorted((norm(k), norm(x))
                                    for k, x in v.items())))
    if isinstance(v, (set, frozenset)):
        return ('set', tuple(sorted(norm(x) for x in v)))
    if isinstance(v, tuple):
        return ('tuple', tuple(norm(x) for x in v))
    if isinstance(v, RespError):
        return ('err', v.message)
    if isinstance(v, float):
        return ('float', repr(v))
    return (type(v).__name__, v)


def shape(v):
    if isinstance(v, (list, dict, set)):
        return (type(v).__name__, len(v))
    if isinstance(v, RespError):
        return ('err', v.message)
    return (type(v).__name__,)


def is_err(v):
    return isinstance(v, RespError)


def same(mode, mine, ref, fresh=True):
    """mine and ref (lists of replies, or CLOSED) agree under mode; for
    scan, `fresh` says the call's cursor was 0."""
    if not isinstance(mine, list) or not isinstance(ref, list):
        return mine == ref
    if len(mine) != len(ref):
        return False
    for a, b in zip(mine, ref):
        if is_err(a) or is_err(b):
            if a != b:
                return False
            continue
        if mode == 'describe':
            continue
        if mode == 'shape':
            if shape(a) != shape(b):
                return False
        elif mode == 'order':
            if not (isinstance(a, list) and isinstance(b, list)):
                if norm(a) != norm(b):
                    return False
            elif sorted(map(norm, a)) != sorted(map(norm, b)):
                return False
        elif mode == 'scan':
            if not (isinstance(a, list) and len(a) == 2 and
                    isinstance(b, list) and len(b) == 2):
                if norm(a) != norm(b):
                    return False
                continue
            if not re.fullmatch(rb'\d+', a[0] or b'x'):
                return False
            if fresh and a[0] == b'0' and b[0] == b'0' and \
                    sorted(map(norm, a[1])) != sorted(map(norm, b[1])):
                return False
        elif norm(a) != norm(b):
            return False
    return True


class Watchdog(threading.Thread):
    """Kills the larder under test if one of its processes grows past
    WATCHDOG_MIB (a command allocating without bound would otherwise take
    the machine's memory before its deadline passes); `fired` says so."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server = server
        self.fired = False
        self.paused = False
        self.done = False
        self.start()

    def run(self):
        while not self.done:
            if not self.paused:
                try:
                    pids = [self.server.pid] + proc_tree(self.server.pid)
                except Exception:
                    pids = []
                for pid in pids:
                    if proc_kib(pid) > WATCHDOG_MIB * 1024:
                        self.fired = True
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except OSError:
                            pass
            time.sleep(WATCHDOG_PERIOD)

    def pause(self):
        self.paused = True
        time.sleep(WATCHDOG_PERIOD * 2)

    def resume(self):
        self.fired = False
        self.paused = False

    def stop(self):
        self.done = True


def rss_peaks(server):
    """{pid: VmHWM in KiB} of the master and its children."""
    out = {}
    for pid in [server.pid] + server.children():
        kib = proc_kib(pid, 'VmHWM')
        if kib:
            out[pid] = kib
    return out


def difference_reason(name, pos, value, mine):
    for cmd, p, v, pattern, reason in DIFFERENCES:
        if cmd != name or (p is not None and p != pos) or \
                (v is not None and v != value):
            continue
        if re.search(pattern, short(mine, 2000)):
            return reason
    return None


def build_cases(larder, ref):
    """(name, argv, position, value) of every case of this run."""
    with larder.client() as c:
        names = sorted(n.decode() for n in c.call('COMMAND', 'LIST'))
        info = c.call('COMMAND', 'INFO', *[n for n in names
                                           if '|' not in n])
    with ref.client() as r:
        docs = docs_dict(r.call('COMMAND', 'DOCS'))
    containers = set()
    for entry in info:
        if entry and entry[9]:
            containers.add(entry[0].decode())
    cases = []
    for name in names:
        if name in containers or name in NOT_SWEPT:
            continue
        d = docs.get(name)
        if d is None:
            continue            # not a Redis 7.0 command: no reference
        words = name.split('|')
        for tpl in templates(name, d):
            argv = words + tpl
            first = len(words)
            for pos in range(first, len(argv)):
                for v in VALUES:
                    a = list(argv)
                    a[pos] = v
                    cases.append((name, a, pos, v))
    return cases


def unbounded_on_redis(name, argv, pos, value):
    p = UNBOUNDED_COUNT.get(name)
    if p is None or pos != p:
        return False
    try:
        n = int(value)
    except ValueError:
        return False
    return -2 ** 63 < n < -(1 << 20)


def compare_modes(ref, names):
    """{command: mode}: COMPARE, then Redis's COMMAND INFO tips."""
    out = {}
    with ref.client() as r:
        for entry in r.call('COMMAND', 'INFO', *sorted(names)):
            if not entry:
                continue
            name = entry[0].decode()
            tips = [t.decode() for t in entry[7]]
            if 'nondeterministic_output' in tips:
                out[name] = 'shape'
            elif 'nondeterministic_output_order' in tips:
                out[name] = 'order'
    out.update((n, m) for n, m in COMPARE.items() if n in names)
    return out


def command_flags(larder):
    """(commands that may write, blocking commands), from COMMAND INFO."""
    writes, blocking = set(), set()
    with larder.client() as c:
        names = [n.decode() for n in c.call('COMMAND', 'LIST')]
        for entry in c.call('COMMAND', 'INFO', *names):
            if not entry:
                continue
            if 'write' in entry[2] or 'pubsub' in entry[2]:
                writes.add(entry[0].decode())
            if 'blocking' in entry[2]:
                blocking.add(entry[0].decode())
    # Commands whose effect on the data RESET does not undo.
    writes.update(['flushall', 'flushdb', 'select', 'exec', 'save',
                   'bgsave'])
    return writes, blocking


def run_sweep(proto, cases_of):
    """Run this run's cases in protocol `proto` (cases_of picks them from
    all of them) and assert the sweep's bounds."""
    larder_only()
    if not shutil.which('redis-server'):
        raise Skip('redis-server not installed')
    with Server(workers=2) as larder, RedisPeer() as ref:
        cases = cases_of(build_cases(larder, ref))
        modes = compare_modes(ref, set(c[0] for c in cases))
        writes, blocking = command_flags(larder)
        L, R = Side(larder, proto), Side(ref, proto)
        watch = Watchdog(larder)
        diffs, slow, unexplained = [], [], []
        compared = larder_only_cases = 0
        peak = {}
        t0 = time.time()
        for n, (name, argv, pos, value) in enumerate(cases):
            hazard = unbounded_on_redis(name, argv, pos, value)
            L.send(argv)
            if not hazard:
                R.send(argv)
            mine, took = L.read(REPLY_DEADLINE)
            ref_reply = R.read(REDIS_DEADLINE)[0] if not hazard else None
            L.dirty = R.dirty = name in writes or name.split('|')[0] in writes
            if mine == SILENT and ref_reply == SILENT and name in blocking:
                # Blocks on both (a timeout of 0 on an empty key): the
                # same behaviour; a fresh connection for the next case.
                L.connect()
                continue
            if mine == SILENT or took > REPLY_DEADLINE or watch.fired:
                slow.append((name, argv, took, watch.fired))
            if mine == SILENT or watch.fired:
                # A worker spins or grew past the watchdog: start afresh
                # so the rest of the sweep still runs.
                watch.pause()
                larder.kill9_tree()
                larder.start()
                L.c = None
                L.dirty = True
                watch.resume()
            if n % RSS_SAMPLE_EVERY == 0:
                for pid, kb in rss_peaks(larder).items():
                    peak[pid] = max(peak.get(pid, 0), kb)
            if hazard:
                larder_only_cases += 1
                if mine != CLOSED and not (mine and all(map(is_err, mine))):
                    unexplained.append('%s (not sent to redis)\n    larder: '
                                       '%s' % (short(argv), short(mine)))
                continue
            if ref_reply == SILENT:
                continue
            compared += 1
            mode = modes.get(name, 'exact')
            cursor = argv[1 if name == 'scan' else 2] if mode == 'scan' \
                else b'0'
            if not same(mode, mine, ref_reply, cursor in (b'0', '0')):
                reason = difference_reason(name, pos, value, mine)
                line = '%s\n    larder: %s\n    redis:  %s' % (
                    short(argv, 200), short(mine, 300), short(ref_reply, 300))
                diffs.append((line, reason))
                if reason is None:
                    unexplained.append(line)
        for pid, kb in rss_peaks(larder).items():
            peak[pid] = max(peak.get(pid, 0), kb)
        watch.stop()
        took = time.time() - t0
        top = max(peak.values()) // 1024 if peak else 0
        print('# sweep RESP%d: %d cases, %d compared with redis, %d larder '
              'only, %d differences (%d reviewed), %d hangs or slow, peak '
              'RSS %d MiB of %d allowed, %.0f s' % (
                  proto, len(cases), compared, larder_only_cases,
                  len(diffs), len([d for d in diffs if d[1]]),
                  len(slow), top, RSS_BOUND_MIB, took))
        if REPORT:
            with open('%s.resp%d' % (REPORT, proto), 'w') as f:
                for line, reason in diffs:
                    f.write('%s\n    reason: %s\n' % (line, reason))
        assert_true(not slow, 'replies slower than %.1f s: %s' % (
            REPLY_DEADLINE, short(slow[:10], 2000)))
        assert_true(top <= RSS_BOUND_MIB, 'peak RSS %d MiB over the '
                    'bound of %d MiB' % (top, RSS_BOUND_MIB))
        assert_true(not unexplained, '%d cases differ from redis-server:\n'
                    '%s' % (len(unexplained),
                            '\n'.join(unexplained[:40])))


def test_sweep_resp2():
    """Every case, RESP2."""
    run_sweep(2, lambda cases: cases)


def test_sweep_resp3():
    """RESP3: every case with LARDER_SWEEP=full, else a deterministic 1 in
    RESP3_SHARDS of them (each command and position keeps some values)."""
    run_sweep(3, lambda cases: cases if FULL else [
        c for i, c in enumerate(cases) if i % RESP3_SHARDS == SHARD])


test_sweep_resp2.timeout = 1200
test_sweep_resp3.timeout = 1200

if __name__ == '__main__':
    main(globals())
