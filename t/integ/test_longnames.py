"""Checks that keys of 0, 1, 511, 512, 64 KiB and 1 MiB bytes round-trip through SET GET EXISTS EXPIRE RENAME SCAN KEYS DEL."""

from larder_test import assert_eq, assert_ttl, main, wait_until

SIZES = [0, 1, 510, 511, 512, 513, 64 * 1024, 1024 * 1024]


def name(size, tag=b'k'):
    """A key of exactly size bytes, distinct per tag, with varied bytes so
    prefix-hashing schemes see real differences at the end."""
    if size == 0:
        return b''
    body = (tag + bytes(range(256))) * (size // 257 + 1)
    return body[:size - 1] + tag[:1] if size > 1 else tag[:1]


def glob_escape(pattern):
    out = bytearray()
    for b in pattern:
        if b in b'*?[]\\':
            out += b'\\'
        out.append(b)
    return bytes(out)


def scan_all(c, *opts):
    cursor, seen = b'0', []
    while True:
        cursor, keys = c.call('SCAN', cursor, *opts)
        seen.extend(keys)
        if cursor == b'0':
            return seen


def test_set_get_exists_del(s):
    with s.client() as c:
        for n in SIZES:
            k = name(n)
            assert_eq(len(k), n)
            assert_eq(c.call('SET', k, b'value-%d' % n), 'OK', 'SET %d' % n)
        for n in SIZES:
            k = name(n)
            assert_eq(c.call('GET', k), b'value-%d' % n, 'GET %d' % n)
            assert_eq(c.call('EXISTS', k), 1, 'EXISTS %d' % n)
            assert_eq(c.call('STRLEN', k), len(b'value-%d' % n))
        assert_eq(c.call('DBSIZE'), len(SIZES))
        for n in SIZES:
            assert_eq(c.call('DEL', name(n)), 1, 'DEL %d' % n)
            assert_eq(c.call('EXISTS', name(n)), 0)
        assert_eq(c.call('DBSIZE'), 0)


def test_long_names_sharing_a_prefix(s):
    # Keys equal in their first 511+ bytes and differing only at the end
    # must stay distinct (digest-bearing storage keys).
    with s.client() as c:
        for n in (511, 512, 600, 64 * 1024):
            base = b'p' * (n - 1)
            keys = [base + bytes([b]) for b in (0, 1, 255)] + [base]
            for i, k in enumerate(keys):
                c.call('SET', k, i)
            for i, k in enumerate(keys):
                assert_eq(c.call('GET', k), str(i).encode(),
                          'prefix %d variant %d' % (n, i))
            assert_eq(c.call('DEL', *keys), len(keys))
        assert_eq(c.call('DBSIZE'), 0)


def test_expire(s):
    with s.client() as c:
        for n in SIZES:
            k = name(n)
            c.call('SET', k, 'v')
            assert_eq(c.call('EXPIRE', k, '1000'), 1, 'EXPIRE %d' % n)
            assert_ttl(c, k, 1000)
            assert_eq(c.call('PERSIST', k), 1, 'PERSIST %d' % n)
            c.call('PEXPIRE', k, '20')
        for n in SIZES:
            k = name(n)
            wait_until(lambda: c.call('EXISTS', k) == 0, 5,
                       'key of %d bytes to expire' % n)
            assert_eq(c.call('TTL', k), -2)
            assert_eq(c.call('GET', k), None)


def test_rename(s):
    with s.client() as c:
        for a in SIZES:
            for b in (0, 511, 512, 1024 * 1024):
                src, dst = name(a, b'src'), name(b, b'dst')
                if src == dst:
                    continue
                c.call('SET', src, 'v%d' % a, 'EX', '500')
                assert_eq(c.call('RENAME', src, dst), 'OK',
                          'RENAME %d -> %d' % (a, b))
                assert_eq(c.call('EXISTS', src), 0)
                assert_eq(c.call('GET', dst), b'v%d' % a)
                assert_ttl(c, dst, 500)
                assert_eq(c.call('RENAMENX', dst, src), 1)
                assert_eq(c.call('GET', src), b'v%d' % a)
                assert_eq(c.call('DEL', src), 1)
        assert_eq(c.call('DBSIZE'), 0)


def test_scan_and_keys(s):
    with s.client() as c:
        keys = [name(n) for n in SIZES]
        for k in keys:
            c.call('SET', k, 'v')
        # Some neighbours so ordering-sensitive code is exercised.
        for i in range(50):
            c.call('SET', b'short%d' % i, 'v')
            c.call('SET', b'q' * 700 + b'%d' % i, 'v')
        want = set(keys) | {b'short%d' % i for i in range(50)} | \
            {b'q' * 700 + b'%d' % i for i in range(50)}
        for count in ('1', '10', '1000'):
            seen = scan_all(c, 'COUNT', count)
            assert_eq(set(seen), want, 'SCAN COUNT %s' % count)
        got = c.call('KEYS', '*')
        assert_eq(sorted(got), sorted(want))
        assert_eq(len(got), len(want), 'KEYS returns no duplicates')
        # MATCH on the long names themselves.
        long_ = name(1024 * 1024)
        assert_eq(scan_all(c, 'MATCH', glob_escape(long_)), [long_])
        assert_eq(c.call('KEYS', glob_escape(long_)), [long_])
        assert_eq(sorted(c.call('KEYS', b'q' * 700 + b'*')),
                  sorted(b'q' * 700 + b'%d' % i for i in range(50)))
        prefix = name(512)[:300]
        assert_eq(sorted(scan_all(c, 'MATCH', glob_escape(prefix) + b'*')),
                  sorted(k for k in keys if k.startswith(prefix)))
        assert_eq(c.call('KEYS', glob_escape(name(511)[:-1]) + b'?'),
                  [name(511)])


def test_long_values_with_long_names(s):
    with s.client() as c:
        k = name(1024 * 1024)
        v = bytes(range(256)) * 4096 * 2        # 2 MiB
        assert_eq(c.call('SET', k, v), 'OK')
        assert_eq(c.call('GET', k), v)
        assert_eq(c.call('APPEND', k, b'x'), len(v) + 1)
        assert_eq(c.call('GETRANGE', k, '-2', '-1'), v[-1:] + b'x')
        assert_eq(c.call('GETDEL', k), v + b'x')
        assert_eq(c.call('EXISTS', k), 0)


if __name__ == '__main__':
    main(globals())
