"""powercut - rebuild a data directory's files (LMDB's data.mdb and the
durable record data.durable) as a power cut would leave them, from the
journal written by libfault.so (t/fault/fault_shim.c), and check them.

The journal is one global order of records from every process:
WRITE (offset, bytes; appended after the write returned), SYNC_BEGIN
(appended before fsync/fdatasync was called), SYNC_END (after it
returned), TRUNCATE; each names its file. All times are CLOCK_MONOTONIC,
the clock of Python's time.monotonic(), so a client's acknowledgement
times compare with them.

Durable at time P, per file: every write to it recorded before the
SYNC_BEGIN of any successful barrier on it whose SYNC_END was recorded
before P (and every write through an O_DSYNC descriptor that returned
before P). Since the SYNC_END record is written right after the flush
returns, before the server can publish it and a client can see a reply, a
write whose reply a client saw before P (under `sync always`) must be in
the image the server boots from.

Two models of the disk: ordered (what is not durable is not there: the
durable images) and reordered (the durable image plus any subset of the
pages written since, at 4 KiB granularity: the kernel writes dirty pages
back in any order; torn_images).

Used by t/integ/test_durability.py; also a command line for diagnosis:
  python3 powercut.py JOURNAL [--dump PATH/fault_dump] [--torn N]
prints the barriers and checks that the durable image at each boots and
opens; --torn N also tries N reordered images at random moments.
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
F_FILE_SHIFT = 8
KIND_MSYNC = 3
PAGE = 4096
# The journaled files by index (fault_shim.c's fault_names).
FILES = ('data.mdb', 'data.durable')
DATA, RECORD = 0, 1
# The boot id images are booted with: never the one they were written in.
BOOT_ID = 'powercut-reboot'


def rec_file(flags):
    return flags >> F_FILE_SHIFT


class JournalError(Exception):
    pass


class Barrier:
    __slots__ = ('pid', 'kind', 'file', 'begin_idx', 'begin_t', 'end_t', 'ok')

    def __init__(self, pid, kind, file, begin_idx, begin_t):
        self.pid, self.kind, self.file = pid, kind, file
        self.begin_idx, self.begin_t = begin_idx, begin_t
        self.end_t, self.ok = None, False

    def __repr__(self):
        return ('Barrier(pid=%d kind=%d file=%d idx=%d begin=%.6f end=%s '
                'ok=%s)' % (self.pid, self.kind, self.file, self.begin_idx,
                            self.begin_t, self.end_t, self.ok))


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
                b = Barrier(pid, off, rec_file(flags), idx, t)
                open_by_pid[pid, b.file] = b
                self.barriers.append(b)
            elif typ == SYNC_END:
                b = open_by_pid.pop((pid, rec_file(flags)), None)
                if b is not None:
                    b.end_t, b.ok = t, off == 0
        self.writes = sum(1 for r in self.records if r[0] == WRITE)
        self.bytes_written = sum(len(r[5]) for r in self.records
                                 if r[0] == WRITE)
        if any(b.kind == KIND_MSYNC for b in self.barriers):
            raise JournalError('msync barriers: writes through a writable '
                               'mapping (lmdb-writemap) are not journaled')

    def complete_barriers(self, file=DATA):
        """Successful barriers on `file` (None: on any file)."""
        return [b for b in self.barriers
                if b.ok and (file is None or b.file == file)]

    def durable_idx(self, p, file=DATA):
        """Records of `file` before this index are durable at time p (0:
        none)."""
        idx = 0
        for b in self.barriers:
            if (b.ok and b.file == file and b.end_t < p and
                    b.begin_idx > idx):
                idx = b.begin_idx
        return idx

    def index_at(self, p):
        """Records before this index were appended before time p."""
        lo, hi = 0, len(self.records)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.records[mid][4] < p:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def first_t(self):
        return self.records[0][4] if self.records else 0.0


class ImageBuilder:
    """Applies the journal's writes to `file` in order; image(idx) is the
    file with every write of a record before idx applied. Calls must not
    go back."""

    def __init__(self, journal, file=DATA, initial=b''):
        self.j = journal
        self.file = file
        self.buf = bytearray(initial)
        self.applied = 0
        self.touched = False        # a record of the file was applied

    def image(self, idx):
        if idx < self.applied:
            raise ValueError('ImageBuilder cannot go back')
        recs = self.j.records
        buf = self.buf
        for i in range(self.applied, idx):
            typ, flags, pid, off, t, data = recs[i]
            if rec_file(flags) != self.file:
                continue
            self.touched = True
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


class DurableImages:
    """The ordered model at increasing times: images(p) is every file as
    it is durable at p. Calls must not go back in time."""

    def __init__(self, journal):
        self.j = journal
        self.builders = [ImageBuilder(journal, f) for f in range(len(FILES))]

    def key(self, p):
        """Equal keys, equal images."""
        return tuple(self.j.durable_idx(p, f) for f in range(len(FILES)))

    def images(self, p):
        return {FILES[f]: b.image(self.j.durable_idx(p, f))
                for f, b in enumerate(self.builders)
                if self.j.durable_idx(p, f) or f == DATA}


def dump_image(images, workdir, dump_bin, boot=BOOT_ID):
    """Write images (file name -> bytes, or the bytes of data.mdb) into
    workdir, boot them as the master would after a reboot (fault_dump -b;
    boot=None: open data.mdb as it is) and walk them. Returns (ok, txnid,
    keys dict name->record bytes for db 0, error text)."""
    if isinstance(images, (bytes, bytearray)):
        images = {FILES[DATA]: images}
    for name, img in images.items():
        with open(os.path.join(workdir, name), 'wb') as f:
            f.write(img)
    argv = ([dump_bin, '-b', boot, workdir] if boot else
            [dump_bin, os.path.join(workdir, FILES[DATA])])
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
    finally:
        for name in os.listdir(workdir):
            try:
                os.unlink(os.path.join(workdir, name))
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
        elif line.startswith('durable ') and ' mismatch ' in line + ' ':
            errors.append('the durable record does not match: ' + line)
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


class TornImages:
    """The reordered model at increasing times: images(p, rng) is every
    file as a disk that does not keep write order may hold it after a
    power cut at p: its durable image plus a random half of the pages
    written to it since (writes through an O_DSYNC descriptor are durable
    on return). Returns file name -> bytes. Calls must not go back in
    time (the durable part is built incrementally)."""

    def __init__(self, journal):
        self.j = journal
        self.builders = [ImageBuilder(journal, f) for f in range(len(FILES))]

    def images(self, p, rng):
        j = self.j
        upto = j.index_at(p)
        out = {}
        for f, name in enumerate(FILES):
            base = j.durable_idx(p, f)
            buf = bytearray(self.builders[f].image(base))
            seen = self.builders[f].touched
            for i in range(base, upto):
                typ, flags, pid, off, t, data = j.records[i]
                if rec_file(flags) != f:
                    continue
                seen = True
                if typ == TRUNCATE:
                    # Sizes are file metadata: take them as they were set.
                    if off < len(buf):
                        del buf[off:]
                    else:
                        buf.extend(b'\0' * (off - len(buf)))
                    continue
                if typ != WRITE:
                    continue
                sure = flags & F_DSYNC
                for q in range(0, len(data), PAGE):
                    if sure or rng.random() < 0.5:
                        chunk = data[q:q + PAGE]
                        end = off + q + len(chunk)
                        if end > len(buf):
                            buf.extend(b'\0' * (end - len(buf)))
                        buf[off + q:end] = chunk
            if seen or f == DATA:
                out[name] = bytes(buf)
        return out


def torn_images(journal, p, rng):
    """TornImages(journal).images(p, rng), for one moment."""
    return TornImages(journal).images(p, rng)


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
    bs = j.complete_barriers(None)
    print('%d records, %d writes (%d bytes), %d barriers (%d complete)'
          % (len(j.records), j.writes, j.bytes_written, len(j.barriers),
             len(bs)))
    work = tempfile.mkdtemp(prefix='powercut-')
    bad = 0
    durable = DurableImages(j)
    for b in bs:
        ok, txnid, keys, err = dump_image(durable.images(b.end_t + 1e-9),
                                          work, a.dump)
        if not ok:
            bad += 1
            print('after the barrier at %d: does not open: %s'
                  % (b.begin_idx, err))
    print('%d durable images, %d bad' % (len(bs), bad))
    rng = random.Random(a.seed)
    tbad = 0
    for n in range(a.torn):
        p = rng.uniform(j.first_t(), j.records[-1][4])
        ok, txnid, keys, err = dump_image(torn_images(j, p, rng), work,
                                          a.dump)
        if not ok:
            tbad += 1
            print('reordered image at +%.3fs: %s' % (p - j.first_t(), err))
    if a.torn:
        print('%d reordered images, %d bad' % (a.torn, tbad))
    os.rmdir(work)
    return 1 if bad or tbad else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
