"""A full disk is an error reply, never a dead process: the data directory on a small tmpfs is filled with 10 MB and then small SETs, with lmdb-writemap yes and no, until writes fail; every failure is an error reply (MISCONF with writemap), no process dies (no SIGBUS, no respawn), reads go on while full, every acknowledged write reads back after a restart, and after DEL (and the lazy freer) small writes work again. Under maxdisk, groups that fail and replay over and over lose no acknowledged write and apply none twice."""

import os
import random
import shutil
import subprocess
import tempfile
import threading
import time

from larder_test import (RespError, Server, Skip, assert_eq, assert_true,
                         larder_only, main, wait_until)

REPLAY_SECONDS = float(os.environ.get('DISKFULL_REPLAY_SECONDS', '10'))

FS_SIZE = '96m'            # the tmpfs the data directory lives on
BIG = b'B' * (10 << 20)    # 10 MB values first ...
SMALL = b's' * 100         # ... then small ones
MAX_BIG = 20               # more than the filesystem holds
MAX_SMALL = 400000
WORKERS = int(os.environ.get('DISKFULL_WORKERS', '2'))
FREE_DEADLINE = 30.0       # DEL, lazy free, the pin's next flush


class Tmpfs:
    """A small tmpfs mounted for one test, or Skip when mount is refused
    (not root, no CAP_SYS_ADMIN, a container)."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix='larder-full-')
        r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=' + FS_SIZE,
                            'tmpfs', self.path], capture_output=True,
                           text=True)
        if r.returncode != 0:
            os.rmdir(self.path)
            raise Skip('cannot mount a tmpfs (%s): needs root'
                       % (r.stderr.strip() or r.returncode))

    def close(self):
        subprocess.run(['umount', '-l', self.path], capture_output=True)
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def is_disk_error(r, writemap):
    if not isinstance(r, RespError):
        return False
    if writemap == 'yes':
        return r.message == ('MISCONF Errors writing to the data file: '
                             'No space left on device')
    return (r.message.startswith('ERR storage error') or
            r.message.startswith('MISCONF') or
            r.message.startswith('ERR disk full'))


def fill(c, prefix, value, limit, writemap):
    """SET prefix0, prefix1 ... until the first failure; every reply is
    OK or the disk error. The names acknowledged."""
    done = []
    for i in range(limit):
        name = '%s%d' % (prefix, i)
        r = c.call('SET', name, value)
        if r != 'OK':
            assert_true(is_disk_error(r, writemap),
                        'SET %s answered %r' % (name, r))
            return done, r
        done.append(name)
    raise AssertionError('%d SETs of %d bytes fit in %s' %
                         (limit, len(value), FS_SIZE))


def no_deaths(s):
    log = s.log_text()
    for bad in ('killed by signal', 'dumped core', 'exited with status'):
        assert_true(bad not in log, 'a process died: ...%s'
                    % log[log.find(bad) - 200:log.find(bad) + 200])


def full_disk(writemap):
    # The log stays in the harness's directory (on a disk with room): the
    # data directory alone is on the small filesystem (a later --dir wins).
    with Tmpfs() as fs, Server(workers=WORKERS,
                               args=['--lmdb-writemap', writemap,
                                     '--dir', fs.path]) as s:
        pids = sorted([s.pid] + s.children())
        c = s.client()
        bigs, err = fill(c, 'big', BIG, MAX_BIG, writemap)
        assert_true(len(bigs) >= 1, 'not one 10 MB SET fit: %r' % err)
        smalls, err = fill(c, 'small', SMALL, MAX_SMALL, writemap)
        # Full: every kind of write fails the same way, reads go on.
        assert_true(is_disk_error(c.call('SET', 'one-more', BIG), writemap),
                    'a big SET on a full disk')
        r = c.call('RPUSH', 'l', *[SMALL] * 1000)
        assert_true(r == 1000 or is_disk_error(r, writemap),
                    'RPUSH on a full disk answered %r' % (r,))
        pushed = 1 if r == 1000 else 0
        assert_eq(c.call('GET', bigs[0]), BIG, 'GET of a 10 MB value')
        if smalls:
            assert_eq(c.call('GET', smalls[-1]), SMALL, 'GET while full')
        assert_eq(c.call('DBSIZE'), len(bigs) + len(smalls) + pushed,
                  'DBSIZE')
        assert_eq(sorted([s.pid] + s.children()), pids,
                  'the processes after filling')
        no_deaths(s)

        # Every acknowledged write reads back after a restart.
        s.restart()
        c = s.client()
        assert_eq(c.call('DBSIZE'), len(bigs) + len(smalls) + pushed,
                  'DBSIZE after a restart')
        for name in bigs:
            assert_eq(c.call('STRLEN', name), len(BIG), name)
        got = c.pipeline([('GET', n) for n in smalls])
        assert_eq(sum(1 for v in got if v == SMALL), len(smalls),
                  'small values after the restart')

        # Free space: the big values go (the lazy freer frees spans),
        # and small writes work again.
        assert_eq(c.call('DEL', *bigs), len(bigs), 'DEL')

        def writes_again():
            r = c.call('SET', 'again', SMALL)
            assert_true(r == 'OK' or is_disk_error(r, writemap),
                        'SET after DEL answered %r' % (r,))
            return r == 'OK'

        wait_until(writes_again, FREE_DEADLINE, 'a SET after DEL to work')
        # Under the durable pin freed pages come back a flush later, so a
        # write may still fail now and then: each is retried until the
        # deadline, and more must fit than before the DEL.
        want = len(smalls) + 1
        done = 0

        def write_more():
            nonlocal done
            while done < want:
                r = c.call('SET', 'after%d' % done, SMALL)
                if r != 'OK':
                    assert_true(is_disk_error(r, writemap),
                                'SET after DEL answered %r' % (r,))
                    return False
                done += 1
            return True

        wait_until(write_more, FREE_DEADLINE * 2,
                   '%d small SETs after freeing %d x 10 MB'
                   % (want, len(bigs)), interval=0.2)
        no_deaths(s)


def test_full_disk_writemap():
    larder_only()
    full_disk('yes')


def test_full_disk_no_writemap():
    larder_only()
    full_disk('no')


def test_acknowledged_writes_survive_failing_groups():
    """Four clients pipeline SETs of their own keys, INCRs of their own
    counter, DELs and writes bigger than maxdisk leaves room for, on two
    workers, for REPLAY_SECONDS: the refused writes make groups fail and
    their members replay, over and over. Every refusal is the disk-full
    error, every SET answered OK holds its value at the end, and each
    counter equals the last INCR answered (nothing acknowledged is lost,
    nothing is applied twice)."""
    larder_only()
    with Server(workers=2, args=['--maxdisk', '3mb']) as srv:
        stop = threading.Event()
        results, errors = {}, []

        def refused(reply):
            return (isinstance(reply, RespError) and
                    reply.message.startswith('ERR disk full'))

        def writer(tag):
            rnd = random.Random(tag)
            acked, last_incr, fails, r = {}, 0, 0, 0
            try:
                with srv.client() as c:
                    while not stop.is_set():
                        cmds = []
                        for j in range(rnd.randint(1, 20)):
                            x = rnd.random()
                            if x < 0.5:
                                cmds.append(('SET', '%s:%d:%d' % (tag, r, j),
                                             str(r)))
                            elif x < 0.8:
                                cmds.append(('INCR', 'ctr:' + tag))
                            elif x < 0.9:
                                cmds.append(('SET', 'big:' + tag,
                                             os.urandom(rnd.randint(1, 4)
                                                        << 20)))
                            else:
                                cmds.append(('DEL',) + tuple(
                                    '%s:%d:%d' % (tag, r - 5, k)
                                    for k in range(20)))
                        for cmd, rep in zip(cmds, c.pipeline(cmds)):
                            if cmd[0] == 'DEL':
                                for k in range(20):
                                    acked.pop('%s:%d:%d' % (tag, r - 5, k),
                                              None)
                            elif refused(rep):
                                fails += 1
                            elif cmd[0] == 'INCR' and isinstance(rep, int):
                                last_incr = rep
                            elif rep == 'OK':
                                if not cmd[1].startswith('big:'):
                                    acked[cmd[1]] = cmd[2].encode()
                            else:
                                errors.append((tag, cmd[:2], rep))
                        r += 1
            except Exception as e:      # reported below
                errors.append((tag, repr(e)))
            results[tag] = (acked, last_incr, fails, r)

        ts = [threading.Thread(target=writer, args=('w%d' % i,))
              for i in range(4)]
        for t in ts:
            t.start()
        time.sleep(REPLAY_SECONDS)
        stop.set()
        for t in ts:
            t.join(60)
        assert_eq(errors, [], 'replies other than OK, a count or disk full')
        with srv.client() as c:
            for tag, (acked, last_incr, fails, r) in sorted(results.items()):
                keys = sorted(acked)
                got = c.call('MGET', *keys) if keys else []
                lost = [k for k, v in zip(keys, got) if v != acked[k]]
                assert_eq(lost, [], '%s: acknowledged SETs not found' % tag)
                ctr = c.call('GET', 'ctr:' + tag)
                assert_eq(int(ctr or 0), last_incr, '%s: its counter' % tag)
                assert_true(fails > 0, '%s: writes were refused' % tag)
                print('# %s: %d rounds, %d acknowledged SETs, counter %d, '
                      '%d refused' % (tag, r, len(keys), last_incr, fails))


test_full_disk_writemap.timeout = 240
test_full_disk_no_writemap.timeout = 240

if __name__ == '__main__':
    main(globals())
