"""Checks the shared cache never serves a superseded value: many client processes over several workers (cache on and off) pass a per-key register linearizability check; and 100 start / kill -9 cycles leave nothing behind and each restart serves within 2 s."""

import multiprocessing
import os
import random
import time

from larder_test import (Client, Server, assert_eq, assert_true, larder_only,
                         main, proc_alive)

KEYS = ['reg:%d' % i for i in range(8)]
COUNTERS = ['ctr:%d' % i for i in range(2)]
PROCS = 6
OPS = int(os.environ.get('LARDER_CACHE_OPS', '4000'))
CYCLES = int(os.environ.get('LARDER_RESTART_CYCLES', '100'))
RESTART_BUDGET_S = 2.0


def _client_proc(port, seed, out):
    """One client process: random ops, each logged with its interval."""
    rnd = random.Random(seed)
    log = []
    incrs = {k: 0 for k in COUNTERS}
    with Client(port) as c:
        for i in range(OPS):
            key = rnd.choice(KEYS)
            op = rnd.random()
            t0 = time.monotonic()
            if op < 0.40:
                r = c.call('GET', key)
                log.append(('r', key, r, t0, time.monotonic()))
            elif op < 0.75:
                val = b'p%d-%d' % (seed, i)
                r = c.call('SET', key, val)
                assert r == 'OK', r
                log.append(('w', key, val, t0, time.monotonic()))
            elif op < 0.85:
                c.call('DEL', key)
                log.append(('w', key, None, t0, time.monotonic()))
            elif op < 0.92:
                # A TTL far away: changes the record, not the value.
                c.call('EXPIRE', key, 1000)
            else:
                ctr = rnd.choice(COUNTERS)
                r = c.call('INCR', ctr)
                assert isinstance(r, int), r
                incrs[ctr] += 1
    out.put((log, incrs))


def _check_register(key, writes, reads):
    """Every read returns a value current at some instant of its interval:
    its write began before the read ended, and no other write lies wholly
    between that write's end and the read's start."""
    writes = writes + [(None, float('-inf'), float('-inf'))]
    ends = sorted(w[2] for w in writes)
    bad = []
    for val, rs, re in reads:
        ok = False
        for wval, ws, we in writes:
            if wval != val or ws > re:
                continue
            # Is some write both started after `we` and finished before rs?
            superseded = any(s2 > we and e2 < rs for _, s2, e2 in writes)
            if not superseded:
                ok = True
                break
        if not ok:
            bad.append((val, rs, re))
    return bad


def _run_linearizability(cache_mb):
    larder_only()
    with Server(workers=3, args=['--cache-mb', str(cache_mb)]) as srv:
        q = multiprocessing.Queue()
        procs = [multiprocessing.Process(target=_client_proc,
                                         args=(srv.port, seed, q))
                 for seed in range(PROCS)]
        for p in procs:
            p.start()
        results = [q.get(timeout=120) for _ in procs]
        for p in procs:
            p.join(30)
            assert_eq(p.exitcode, 0, 'client process exit code')
        writes = {k: [] for k in KEYS}
        reads = {k: [] for k in KEYS}
        incrs = {k: 0 for k in COUNTERS}
        for log, inc in results:
            for kind, key, val, t0, t1 in log:
                (writes if kind == 'w' else reads)[key].append((val, t0, t1))
            for k, n in inc.items():
                incrs[k] += n
        nreads = sum(len(r) for r in reads.values())
        assert_true(nreads > PROCS * OPS // 4, 'enough reads: %d' % nreads)
        for key in KEYS:
            bad = _check_register(key, writes[key], reads[key])
            assert_eq(bad[:3], [], '%s: reads of superseded values' % key)
        with srv.client() as c:
            for k in COUNTERS:
                got = c.call('GET', k)
                assert_eq(int(got or 0), incrs[k], 'counter %s' % k)
            if cache_mb:
                info = c.call('INFO', 'cache').decode()
                hits = int(info.split('cache_hits:')[1].split('\r\n')[0])
                assert_true(hits > 0, 'the cache served hits: %d' % hits)


def test_linearizable_with_cache():
    _run_linearizability(16)


def test_linearizable_without_cache():
    _run_linearizability(0)


def _stray_processes(binary_dir):
    """larder-server processes whose cwd or data dir is ours."""
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                argv = f.read().split(b'\0')
        except OSError:
            continue
        if any(binary_dir.encode() in a for a in argv):
            found.append(int(pid))
    return found


def test_restart_cycles_leave_nothing_behind():
    larder_only()
    srv = Server(workers=2, args=['--cache-mb', '8'])
    try:
        with srv.client() as c:
            assert_eq(c.call('SET', 'survivor', 'v'), 'OK')
        shm_before = set(os.listdir('/dev/shm'))
        worst = 0.0
        for i in range(CYCLES):
            tree = srv.children() + [srv.pid]
            srv.kill9_tree()
            assert_eq([p for p in tree if proc_alive(p)], [],
                      'cycle %d: killed tree gone' % i)
            t0 = time.monotonic()
            srv.start()
            with srv.client() as c:
                assert_eq(c.call('GET', 'survivor'), b'v')
            worst = max(worst, time.monotonic() - t0)
        assert_true(worst < RESTART_BUDGET_S,
                    'slowest restart served after %.2fs' % worst)
        assert_eq(sorted(set(os.listdir('/dev/shm')) - shm_before), [],
                  'nothing new in /dev/shm')
        data_dir = srv.dir
    finally:
        srv.cleanup()
    assert_eq(_stray_processes(data_dir), [], 'no process left behind')


if __name__ == '__main__':
    main(globals())
