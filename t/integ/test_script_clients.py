"""Checks real scripts of real client libraries against the server: redis-py's Lock (Debian's python3-redis: acquire, extend, reacquire, release are Lua scripts sent with EVALSHA and EVAL) under contention from threads on every worker; BullMQ (npm bullmq, installed into a cache directory by t/integ/bullmq/setup): all of its Lua scripts load under its own SHAs and its read calls work, and end to end (jobs added, a worker processes them, completed and failed counts and return values match) when the server has the stream commands and BZPOPMIN its job flow needs, skipped naming them otherwise."""

import os
import shutil
import subprocess
import sys
import threading

from larder_test import Skip, assert_eq, assert_true, main

WORKERS = 3
HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN_PY = '/usr/lib/python3/dist-packages'


def redis_py():
    """Debian's python3-redis, also from a Python that is not Debian's."""
    try:
        import redis
    except ImportError:
        if DEBIAN_PY not in sys.path:
            sys.path.append(DEBIAN_PY)
        import redis
    return redis


def test_redis_py_lock_contention(s):
    redis = redis_py()
    from redis.exceptions import LockError, LockNotOwnedError
    threads, rounds = 6, 40
    errors = []

    def worker(n):
        try:
            r = redis.Redis(port=s.port)
            for i in range(rounds):
                lock = r.lock('resource', timeout=5, blocking_timeout=30,
                              sleep=0.001)
                assert_true(lock.acquire(), 'acquired')
                try:
                    # a read-modify-write only the lock makes safe
                    v = int(r.get('counter') or 0)
                    if i % 7 == 0:
                        assert_true(lock.extend(2), 'extended')
                        assert_true(r.pttl('resource') > 5000, 'extend adds')
                    if i % 11 == 0:
                        assert_true(lock.reacquire(), 'reacquired')
                    r.set('counter', v + 1)
                finally:
                    lock.release()
            r.close()
        except BaseException as e:
            errors.append(repr(e))

    ts = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert_eq(errors, [])
    r = redis.Redis(port=s.port)
    assert_eq(int(r.get('counter')), threads * rounds)
    assert_eq(r.exists('resource'), 0)
    # ownership: another token can neither release nor extend
    a = r.lock('own', timeout=10)
    b = r.lock('own', timeout=10, blocking=False)
    assert_true(a.acquire(), 'a acquired')
    assert_true(not b.acquire(), 'b refused')
    b.local.token = b'not-the-owner'
    try:
        b.release()
        raise AssertionError('release by a non-owner succeeded')
    except LockNotOwnedError:
        pass
    b.local.token = b'not-the-owner'     # release forgot it
    try:
        b.extend(1)
        raise AssertionError('extend by a non-owner succeeded')
    except LockNotOwnedError:
        pass
    a.release()
    try:
        a.release()
        raise AssertionError('a second release succeeded')
    except LockError:
        pass
    # the scripts were cached once and run by SHA afterwards
    assert_true(r.script_exists(a.lua_release.sha)[0], 'release cached')
    r.close()


# What BullMQ's job flow calls that a server may lack: its Lua scripts emit
# every event with XADD (and trim, read and delete the events stream), and
# its Worker waits for jobs with BZPOPMIN.
BULLMQ_NEEDS = ['XADD', 'XTRIM', 'XDEL', 'XLEN', 'XRANGE', 'XREAD',
                'BZPOPMIN']


def bullmq(s, mode):
    """Install BullMQ (once, t/integ/bullmq/setup) and run e2e.js `mode`
    against s."""
    if not shutil.which('node') or not shutil.which('npm'):
        raise AssertionError('node and npm are needed (Debian: nodejs)')
    proc = subprocess.run([os.path.join(HERE, 'bullmq', 'setup')],
                          capture_output=True, text=True, timeout=600)
    assert_true(proc.returncode == 0, 'BullMQ setup: %s%s'
                % (proc.stdout[-2000:], proc.stderr[-2000:]))
    modules = proc.stdout.strip().splitlines()[-1]
    env = dict(os.environ, NODE_PATH=modules, LARDER_PORT=str(s.port))
    run = subprocess.run(['node', os.path.join(HERE, 'bullmq', 'e2e.js'),
                          mode], capture_output=True, text=True, timeout=240,
                         env=env)
    out = run.stdout + run.stderr
    assert_true(run.returncode == 0, 'BullMQ %s failed:\n%s'
                % (mode, out[-4000:]))
    assert_true('bullmq e2e: ok' in run.stdout, 'BullMQ said ok:\n' +
                out[-4000:])


def test_bullmq_scripts(s):
    """All of BullMQ's Lua scripts compile and load under BullMQ's SHAs;
    the queue's read calls work (what needs no missing command)."""
    bullmq(s, 'scripts')


def test_bullmq_end_to_end(s):
    with s.client() as c:
        missing = [n for n in BULLMQ_NEEDS if not c.call('COMMAND', 'INFO', n)[0]]
    if missing:
        raise Skip('BullMQ\'s job flow needs %s, which this server lacks '
                   '(streams: issue #13; BZPOPMIN: issue #11)'
                   % ' '.join(missing))
    bullmq(s, 'full')


test_bullmq_scripts.timeout = 900
test_bullmq_end_to_end.timeout = 900

if __name__ == '__main__':
    main(globals(), workers=WORKERS)
