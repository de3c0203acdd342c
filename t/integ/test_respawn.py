"""Checks recovery from kill -9 of single processes while serving: workers killed under write load (no lost acknowledged write, no stale cache, writes keep working) and the non-worker children (respawned; sync always and expiry keep working)."""

import os
import signal
import threading
import time

from larder_test import (Client, ConnectionClosed, Server, assert_eq,
                         assert_true, larder_only, main, proc_alive,
                         wait_until)


def serving_pid(c):
    fields = {}
    for line in c.call('INFO', 'server').decode().split('\r\n'):
        k, _, v = line.partition(':')
        fields[k] = v
    return int(fields['worker_process_id'])


def worker_pids(srv, want):
    """PIDs of want distinct workers, learnt from connections."""
    pids = set()
    end = time.time() + 10
    while len(pids) < want and time.time() < end:
        with srv.client() as c:
            pids.add(serving_pid(c))
    assert_true(len(pids) >= want, 'found %d workers: %r' % (want, pids))
    return pids


class Writer(threading.Thread):
    """SETs its own keys in a loop; remembers, per key, the last value
    acknowledged and the values in flight when a connection broke."""

    def __init__(self, port, tag, stop):
        super().__init__()
        self.port, self.tag, self.stop = port, tag, stop
        self.acked, self.maybe = {}, {}
        self.reconnects = 0
        self.error = None

    def run(self):
        n = 0
        c = None
        try:
            while not self.stop.is_set():
                if c is None:
                    c = self._connect()
                key = '%s:%d' % (self.tag, n % 50)
                val = '%s-%d' % (self.tag, n)
                try:
                    r = c.call('SET', key, val)
                except (OSError, ConnectionClosed):
                    self.maybe.setdefault(key, set()).add(val.encode())
                    c.close()
                    c = None
                    self.reconnects += 1
                    continue
                if r != 'OK':
                    self.error = 'SET %s: %r' % (key, r)
                    return
                self.acked[key] = val.encode()
                self.maybe.pop(key, None)
                n += 1
        except Exception as e:          # reported by the main thread
            self.error = repr(e)
        finally:
            if c is not None:
                c.close()

    def _connect(self):
        end = time.time() + 10
        while True:
            try:
                return Client(self.port, timeout=5)
            except OSError:
                if time.time() > end:
                    raise
                time.sleep(0.01)


def test_kill_workers_under_write_load():
    larder_only()
    with Server(workers=2) as srv:
        stop = threading.Event()
        writers = [Writer(srv.port, 'w%d' % i, stop) for i in range(4)]
        for w in writers:
            w.start()
        nchildren = len(srv.children())
        try:
            for round_ in range(5):
                wait_until(lambda: all(len(w.acked) >= 20 for w in writers),
                           10, 'writers to make progress')
                victim = sorted(worker_pids(srv, 2))[round_ % 2]
                os.kill(victim, signal.SIGKILL)
                wait_until(lambda: not proc_alive(victim), 10,
                           'worker %d to die' % victim)
                wait_until(lambda: len(srv.children()) >= nchildren and
                           victim not in srv.children(), 15,
                           'a replacement worker')
                for w in writers:
                    w.acked.clear()             # progress after this kill
        finally:
            stop.set()
            for w in writers:
                w.join(20)
        assert_eq([w.error for w in writers if w.error], [])
        assert_true(srv.alive(), 'master alive')
        # Every connection, on either worker, reads the last acknowledged
        # value (or one in flight when its connection broke).
        readers = []
        try:
            while len(set(serving_pid(c) for c in readers)) < 2:
                readers.append(srv.client())
                assert_true(len(readers) < 50, 'connections on 2 workers')
            for w in writers:
                for key, val in w.acked.items():
                    ok = {val} | w.maybe.get(key, set())
                    for c in readers:
                        got = c.call('GET', key)
                        assert_true(got in ok, '%s: read %r, acknowledged '
                                    '%r' % (key, got, val))
            assert_eq(readers[0].call('SET', 'after', 'x'), 'OK')
            assert_eq(readers[-1].call('GET', 'after'), b'x')
        finally:
            for c in readers:
                c.close()


def test_kill_each_helper_process():
    # The children that are not workers (reaper, syncer ...) are respawned,
    # and what they do keeps working: expiry, sync always.
    larder_only()
    with Server(workers=2, args=['--sync', 'always']) as srv:
        workers = worker_pids(srv, 2)
        helpers = [p for p in srv.children() if p not in workers]
        nchildren = len(srv.children())
        for victim in helpers:
            os.kill(victim, signal.SIGKILL)
            wait_until(lambda: not proc_alive(victim), 10, 'helper to die')
            wait_until(lambda: len(srv.children()) >= nchildren and
                       victim not in srv.children(), 15,
                       'helper %d to be replaced' % victim)
            with Client(srv.port, timeout=10) as c:
                # sync always: the acknowledgement needs a working syncer.
                assert_eq(c.call('SET', 'k%d' % victim, 'v'), 'OK')
                assert_eq(c.call('GET', 'k%d' % victim), b'v')
                # Active expiry needs a working reaper.
                c.pipeline([('SET', 'e%d:%d' % (victim, i), 'v', 'PX', '20')
                            for i in range(50)])
                wait_until(lambda: c.call('DBSIZE') <= len(helpers), 10,
                           'active expiry after killing %d' % victim)
        assert_true(srv.alive(), 'master alive')


if __name__ == '__main__':
    main(globals())
