"""Checks mass expiry under load: 50,000 keys set to expire at the same millisecond (PEXPIREAT to one instant) while an open-loop GET load runs at a fixed rate; every GET gets the right answer (the value before the instant, nil after), every key expires, and the GET p99 during the expiry is reported beside the p99 without it.

The latency verdict (p99 during within 3x of the baseline) is a speed claim: it belongs to the benchmark (`bench/run --only expiry`), and this test enforces it only with LARDER_TIMING_STRICT=1 (on a quiet machine). Scaling: LARDER_SLOW=1 (the ASan run) halves the request rate.
"""

import collections
import os
import threading
import time

from larder_test import (Server, Client, ConnectionClosed, assert_eq,
                         assert_true, larder_only, main, wait_until)

SLOW = bool(os.environ.get('LARDER_SLOW'))
STRICT = bool(os.environ.get('LARDER_TIMING_STRICT'))
EXPIRING = 50000
STEADY = 5000                   # keys that never expire
RATE = 1000 if SLOW else 2000   # GETs per second, all connections
CONNS = 4
BASELINE = 3.0                  # s of load before the expiry instant
BASELINE_AFTER = 1.0            # s of load after it is over
SLICE = 0.5                     # s: baseline p99 is a median over slices
DURING_MIN = 0.5                # s: the window from the instant, at least
EXPIRY_TAIL = 0.1               # s past the last key's expiry
ATTEMPTS = 3
P99_FACTOR = 3.0
EXPIRING_SHARE = 10             # 1 GET in this many asks an expiring key
EXPIRY_SLACK = 0.05             # s: clock slack when judging a GET's reply


class OpenLoop:
    """GETs sent at fixed intended times regardless of replies (open
    loop), so queueing shows up: each sample is (intended send time,
    latency from it, key, reply)."""

    def __init__(self, port, rate, conns, key_for):
        self.samples = []
        self.errors = []
        self.lock = threading.Lock()
        self.halt = threading.Event()
        self.key_for = key_for
        self.threads = []
        self.t0 = time.monotonic() + 0.05
        for i in range(conns):
            c = Client(port)
            q = collections.deque()
            interval = conns / rate
            s = threading.Thread(target=self.send, daemon=True,
                                 args=(c, q, i, interval, conns))
            r = threading.Thread(target=self.recv, daemon=True, args=(c, q))
            self.threads += [s, r]
            s.start()
            r.start()

    def send(self, c, q, i, interval, conns):
        n = 0
        try:
            while not self.halt.is_set():
                intended = self.t0 + (i + n * conns) * interval / conns
                n += 1
                delay = intended - time.monotonic()
                if delay > 0:
                    time.sleep(delay)       # pacing, not synchronisation
                key = self.key_for(i + n * conns)
                q.append((intended, key))
                c.send('GET', key)
        except OSError as e:
            self.errors.append('send: %r' % e)
        finally:
            q.append(None)

    def recv(self, c, q):
        try:
            while True:
                while not q:
                    time.sleep(0.0005)
                item = q[0]
                if item is None:
                    break
                r = c.read_reply()
                now = time.monotonic()
                q.popleft()
                intended, key = item
                with self.lock:
                    self.samples.append((intended, now - intended, key, r))
        except (OSError, ConnectionClosed, ValueError) as e:
            self.errors.append('recv: %r' % e)
        finally:
            c.close()

    def stop(self):
        self.halt.set()
        for t in self.threads:
            t.join(15)

    def window(self, lo, hi):
        with self.lock:
            return [s for s in self.samples if lo <= s[0] < hi]


def p99(samples):
    lat = sorted(s[1] for s in samples)
    return lat[min(len(lat) - 1, int(len(lat) * 0.99))]


def info_int(c, name):
    for line in c.call('INFO', 'stats').decode().split('\r\n'):
        if line.startswith(name + ':'):
            return int(line.split(':')[1])
    raise AssertionError('no %s in INFO stats' % name)


def pipeline_all(c, cmds, chunk=1000):
    for i in range(0, len(cmds), chunk):
        rs = c.pipeline(cmds[i:i + chunk])
        bad = [r for r in rs if r not in ('OK', 1)]
        assert_eq(bad, [], 'replies to %s' % cmds[i][0])


def expiry_attempt(s, c, lead_factor):
    """One measurement; returns (baseline p99, p99 during, report), or
    None when the machine was too slow to set every expiry before the
    instant (the caller tries again with more lead)."""
    t_set = time.monotonic()
    pipeline_all(c, [('SET', 'exp:%d' % i, 'e%d' % i)
                     for i in range(EXPIRING)])
    t_set = time.monotonic() - t_set

    def key_for(n):
        if n % EXPIRING_SHARE == 0:
            return 'exp:%d' % ((n * 7919) % EXPIRING)
        return 'steady:%d' % ((n * 104729) % STEADY)

    load = OpenLoop(s.port, RATE, CONNS, key_for)
    try:
        # Baseline: the same data, the same load, nothing expiring.
        base_lo = time.monotonic() + 0.5            # past the start-up
        wait_until(lambda: time.monotonic() > base_lo + BASELINE,
                   BASELINE + 5, 'the baseline window')
        # One instant for all: the server clock is the wall clock.
        # Far enough ahead for the PEXPIREATs to land first, however
        # slow the machine is today (they cost about what the SETs did).
        lead_ms = max(6000 if SLOW else 1500,
                      int(t_set * 1000 * lead_factor) + 500)
        at_ms = int(time.time() * 1000) + lead_ms
        mono_at = time.monotonic() + (at_ms / 1000.0 - time.time())
        pipeline_all(c, [('PEXPIREAT', 'exp:%d' % i, at_ms)
                         for i in range(EXPIRING)])
        if time.monotonic() > mono_at - 0.2:
            return None             # finally: stops the load
        expired0 = info_int(c, 'expired_keys')
        wait_until(lambda: time.monotonic() > mono_at and
                   c.call('DBSIZE') == STEADY, 30,
                   'all %d keys to expire' % EXPIRING)
        done = time.monotonic()
        hi = max(done, mono_at + DURING_MIN) + EXPIRY_TAIL
        # And a baseline stretch after it.
        after_lo = hi + 0.5
        wait_until(lambda: time.monotonic() > after_lo + BASELINE_AFTER,
                   30, 'the load after the expiry')
    finally:
        load.stop()
    assert_eq(load.errors, [], 'load errors')
    base = [load.window(t, t + SLICE)
            for t in frange(base_lo, base_lo + BASELINE, SLICE)]
    base += [load.window(t, t + SLICE)
             for t in frange(after_lo, after_lo + BASELINE_AFTER, SLICE)]
    during = load.window(mono_at, hi)
    expired = info_int(c, 'expired_keys') - expired0
    # Every GET got the right answer: the value before the instant,
    # nothing after it.
    wrong = []
    for intended, lat, key, r in sum(base, []) + during:
        if key.startswith('steady:'):
            if r != ('s' + key[7:]).encode():
                wrong.append((key, r))
        elif intended + lat < mono_at - EXPIRY_SLACK:
            if r != ('e' + key[4:]).encode():
                wrong.append((key, r))
        elif intended > mono_at + EXPIRY_SLACK:
            if r is not None:
                wrong.append((key, r, 'after the instant'))
    assert_eq(wrong[:5], [], 'GET replies')
    # The load must have run, or the checks above prove little; a busy
    # machine may starve the Python client a little.
    short = [len(w) for w in base if len(w) < RATE * SLICE * 0.5]
    assert_true(not short and len(during) > RATE * DURING_MIN * 0.5,
                'the load ran at its rate (baseline slices short: %s; %d '
                'samples during)' % (short, len(during)))
    # The baseline p99 is the median over short slices of load without
    # expiry: a burst of noise from the rest of the machine (other jobs)
    # neither inflates it nor deflates it.
    slices = sorted(p99(w) for w in base)
    pb, pd = slices[len(slices) // 2], p99(during)
    report = ('baseline p99 %.2f ms (median of %d slices of %.1fs, %.2f to '
              '%.2f ms); during expiry p99 %.2f ms (%d samples over %.2fs, '
              'max %.2f ms); %d keys expired %.2fs after the instant (%d '
              'counted by the reaper)'
              % (pb * 1000, len(slices), SLICE, slices[0] * 1000,
                 slices[-1] * 1000, pd * 1000, len(during), hi - mono_at,
                 max(x[1] for x in during) * 1000, EXPIRING, done - mono_at,
                 expired))
    return pb, pd, report


def frange(lo, hi, step):
    while lo + step <= hi + 1e-9:
        yield lo
        lo += step


def test_mass_expiry_does_not_stall_gets():
    """The expiry of 50,000 keys at one instant under an open-loop GET
    load: right answers throughout, every key gone. With
    LARDER_TIMING_STRICT=1, also GET p99 during it within 3x of the p99
    without it, as the majority of up to ATTEMPTS measurements (a stall of
    the server's own making fails them all)."""
    larder_only()
    with Server(workers=2) as s, s.client() as c:
        pipeline_all(c, [('SET', 'steady:%d' % i, 's%d' % i)
                         for i in range(STEADY)])
        print('# %d GET/s open loop on %d connections, 1 in %d on an '
              'expiring key' % (RATE, CONNS, EXPIRING_SHARE))
        results = []
        need = ATTEMPTS // 2 + 1
        lead_factor = 3
        passes = 0
        for attempt in range(ATTEMPTS * 2):
            got = expiry_attempt(s, c, lead_factor)
            if got is None:
                print('# attempt %d: the machine was too slow to set the '
                      'expiries before the instant; again with more lead'
                      % (attempt + 1))
                lead_factor *= 3
                continue
            pb, pd, report = got
            ok = pd <= P99_FACTOR * pb
            print('# attempt %d (%s): %s' % (attempt + 1,
                                            'ok' if ok else 'over', report))
            results.append((pb, pd, ok))
            if not STRICT:
                return                  # the figures are reported above
            passes = sum(1 for r in results if r[2])
            if passes >= need or len(results) - passes >= need:
                break
        assert_true(results, 'no attempt could set its expiries before the '
                    'instant')
        assert_true(passes >= need,
                    'GET p99 during mass expiry above %.0fx the baseline '
                    'in %d of %d attempts: %s'
                    % (P99_FACTOR, len(results) - passes, len(results),
                       ', '.join('%.2f vs %.2f ms' % (d * 1000, b * 1000)
                                 for b, d, ok in results)))


test_mass_expiry_does_not_stall_gets.timeout = 240   # slow machines: retries


if __name__ == '__main__':
    main(globals())
