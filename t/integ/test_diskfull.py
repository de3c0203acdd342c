"""A full disk is an error reply, never a dead process: the data directory on a small tmpfs is filled with 10 MB and then small SETs, with lmdb-writemap yes and no, until writes fail; every failure is an error reply (MISCONF with writemap), no process dies (no SIGBUS, no respawn), reads go on while full, every acknowledged write reads back after a restart, and after DEL (and the lazy freer) small writes work again."""

import os
import shutil
import subprocess
import tempfile

from larder_test import (RespError, Server, Skip, assert_eq, assert_true,
                         larder_only, main, wait_until)

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


test_full_disk_writemap.timeout = 240
test_full_disk_no_writemap.timeout = 240

if __name__ == '__main__':
    main(globals())
