"""powercut - rebuild LMDB's data.mdb as a power cut would leave it, from the
journal written by libfault.so (t/fault/fault_shim.c), and check it.

The journal is one global order of records from every process:
WRITE (offset, bytes; appended after the write returned), SYNC_BEGIN
(appended before fsync/fdatasync was called), SYNC_END (after it
returned), TRUNCATE. All times are CLOCK_MONOTONIC, the clock of Python's
time.monotonic(), so a client's acknowledgement times compare with them.

Durable at time P: every write recorded before the SYNC_BEGIN of any
successful barrier whose SYNC_END was recorded before P. Since the SYNC_END
record is written right after the flush returns, before the server can
publish it and a client can see a reply, a write whose reply a client saw
before P (under `sync always`) must be in that image.

Used by t/integ/test_durability.py; also a command line for diagnosis:
  python3 powercut.py JOURNAL [--dump PATH/fault_dump] [--torn N]
prints the barriers and checks that an image at each opens; --torn N also
tries N images with a random subset of the not-yet-durable pages of the
next interval added (a disk that does not keep write order).
"""

import os
import random
import struct
import subprocess
import sys

REC = struct.Struct('<IHHIIqq')
MAGIC = 0x31544c46
WRITE, SYNC_BEGIN, SYNC_END, TRUNCATE = 1, 2, 3, 4
F_DSYNC = 1
KIND_MSYNC = 3
PAGE = 4096


class JournalError(Exception):
    pass


class Barrier:
    __slots__ = ('pid', 'kind', 'begin_idx', 'begin_t', 'end_t', 'ok')

    def __init__(self, pid, kind, begin_idx, begin_t):
        self.pid, self.kind = pid, kind
        self.begin_idx, self.begin_t = begin_idx, begin_t
        self.end_t, self.ok = None, False

    def __repr__(self):
        return ('Barrier(pid=%d kind=%d idx=%d begin=%.6f end=%s ok=%s)'
                % (self.pid, self.kind, self.begin_idx, self.begin_t,
                   self.end_t, self.ok))


class Journal:
    """A parsed journal. records[i] = (type, flags, pid, off, t, data)."""

    def __init__(self, path):
        with open(path, 'rb') as f:
            self.raw = f.read()
        self.records = []
        self.barriers = []
        open_by_pid = {}
        pos, raw = 0, self.raw
        while pos < len(raw):
            if len(raw) - pos < REC.size:
                raise JournalError('truncated record header at %d' % pos)
            magic, typ, flags, pid, ln, off, ns = REC.unpack_from(raw, pos)
            if magic != MAGIC:
                raise JournalError('bad magic at %d' % pos)
            pos += REC.size
            data = None
            if typ == WRITE:
                if len(raw) - pos < ln:
                    raise JournalError('truncated write at %d' % pos)
                data = memoryview(raw)[pos:pos + ln]
                pos += ln
            t = ns / 1e9
            idx = len(self.records)
            self.records.append((typ, flags, pid, off, t, data))
            if typ == SYNC_BEGIN:
                b = Barrier(pid, off, idx, t)
                open_by_pid[pid] = b
                self.barriers.append(b)
            elif typ == SYNC_END:
                b = open_by_pid.pop(pid, None)
                if b is not None:
                    b.end_t, b.ok = t, off == 0
        self.writes = sum(1 for r in self.records if r[0] == WRITE)
        self.bytes_written = sum(len(r[5]) for r in self.records
                                 if r[0] == WRITE)
        if any(b.kind == KIND_MSYNC for b in self.barriers):
            raise JournalError('msync barriers: writes through a writable '
                               'mapping (lmdb-writemap) are not journaled')

    def complete_barriers(self):
        return [b for b in self.barriers if b.ok]

    def durable_idx(self, p):
        """Records before this index are durable at time p (0: none)."""
        idx = 0
        for b in self.barriers:
            if b.ok and b.end_t < p and b.begin_idx > idx:
                idx = b.begin_idx
        return idx

    def first_t(self):
        return self.records[0][4] if self.records else 0.0


class ImageBuilder:
    """Applies the journal's writes in order; image(idx) is the file with
    every write of a record before idx applied. Calls must not go back."""

    def __init__(self, journal, initial=b''):
        self.j = journal
        self.buf = bytearray(initial)
        self.applied = 0

    def image(self, idx):
        if idx < self.applied:
            raise ValueError('ImageBuilder cannot go back')
        recs = self.j.records
        buf = self.buf
        for i in range(self.applied, idx):
            typ, flags, pid, off, t, data = recs[i]
            if typ == WRITE:
                end = off + len(data)
                if end > len(buf):
                    buf.extend(b'\0' * (end - len(buf)))
                buf[off:end] = data
            elif typ == TRUNCATE:
                if off < len(buf):
                    del buf[off:]
                else:
                    buf.extend(b'\0' * (off - len(buf)))
        self.applied = idx
        return bytes(buf)


def dump_image(image, workdir, dump_bin):
    """Write image to workdir/data.mdb and run fault_dump on it. Returns
    (ok, txnid, keys dict name->record bytes for db 0, error text)."""
    path = os.path.join(workdir, 'data.mdb')
    with open(path, 'wb') as f:
        f.write(image)
    try:
        p = subprocess.run([dump_bin, path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    out = p.stdout.decode(errors='replace')
    keys, txnid, errors = {}, None, []
    for line in out.splitlines():
        if line.startswith('k '):
            parts = line.split(' ')
            if len(parts) != 3:
                errors.append('unparsable line %r' % line[:100])
                continue
            try:
                k, v = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            except ValueError:          # cut short by a crash
                errors.append('unparsable line %r' % line[:100])
                continue
            if k[:2] == b'\0\0':
                keys[k[10:]] = v
        elif line.startswith('txnid '):
            txnid = int(line.split()[1])
        elif line.startswith('error'):
            errors.append(line)
    if p.returncode < 0:
        errors.append('fault_dump killed by signal %d (LMDB read a damaged '
                      'page)' % -p.returncode)
    ok = p.returncode == 0 and not errors
    return ok, txnid, keys, '\n'.join(errors) or (
        '' if ok else 'fault_dump exit %d: %s' % (p.returncode, out[-500:]))


def check_keys(keys, required):
    """required: name -> value (bytes). A key's record must end with its
    value (values in these tests are short and never compressed).
    Returns a list of problems (at most a few, with a count)."""
    missing, wrong = [], []
    for name, value in required.items():
        rec = keys.get(name)
        if rec is None:
            missing.append(name)
        elif not rec.endswith(value):
            wrong.append(name)
    out = []
    if missing:
        out.append('%d acknowledged keys missing, e.g. %r'
                   % (len(missing), sorted(missing)[:5]))
    if wrong:
        out.append('%d keys with a wrong value, e.g. %r'
                   % (len(wrong), sorted(wrong)[:5]))
    return out


def torn_image(journal, base_idx, next_idx, rng):
    """The durable image at base_idx plus a random subset of the pages
    written in [base_idx, next_idx): what a disk that reorders writes may
    hold after a power cut in that interval."""
    b = ImageBuilder(journal)
    buf = bytearray(b.image(base_idx))
    for i in range(base_idx, next_idx):
        typ, flags, pid, off, t, data = journal.records[i]
        if typ != WRITE:
            continue
        for p in range(0, len(data), PAGE):
            if rng.random() < 0.5:
                chunk = data[p:p + PAGE]
                end = off + p + len(chunk)
                if end > len(buf):
                    buf.extend(b'\0' * (end - len(buf)))
                buf[off + p:end] = chunk
    return bytes(buf)


def main(argv):
    import argparse
    import tempfile
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('journal')
    ap.add_argument('--dump', default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), 'fault_dump'))
    ap.add_argument('--torn', type=int, default=0)
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)
    j = Journal(a.journal)
    bs = j.complete_barriers()
    print('%d records, %d writes (%d bytes), %d barriers (%d complete)'
          % (len(j.records), j.writes, j.bytes_written, len(j.barriers),
             len(bs)))
    work = tempfile.mkdtemp(prefix='powercut-')
    bad = 0
    builder = ImageBuilder(j)
    for b in bs:
        ok, txnid, keys, err = dump_image(builder.image(b.begin_idx), work,
                                          a.dump)
        if not ok:
            bad += 1
            print('barrier at %d: does not open: %s' % (b.begin_idx, err))
    print('%d durable images, %d bad' % (len(bs), bad))
    rng = random.Random(a.seed)
    tbad = 0
    for n in range(a.torn):
        k = rng.randrange(len(bs) - 1)
        img = torn_image(j, bs[k].begin_idx, bs[k + 1].begin_idx, rng)
        ok, txnid, keys, err = dump_image(img, work, a.dump)
        if not ok:
            tbad += 1
            print('torn image after barrier %d: %s' % (k, err))
    if a.torn:
        print('%d torn images, %d bad' % (a.torn, tbad))
    os.rmdir(work)
    return 1 if bad or tbad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
