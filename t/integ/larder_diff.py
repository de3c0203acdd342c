"""larder_diff - differential testing helpers: a larder-server and a
redis-server side by side, every command sent to both and the replies
compared, RESP2 or RESP3.

    from larder_diff import Pair, diff_main
    def test_x(p):                  # p: the file's Pair, flushed
        p.call('SET', 'k', 'v')     # fails unless both reply the same
        p.calls([['GET', 'k'], ...])
    diff_main(globals())

A test taking one argument gets the file's pair (both servers started
once, FLUSHALL on both before each test, stopped at the end of the file
also when tests fail); the tests are skipped against redis-server alone
(LARDER_TEST_AGAINST=redis) and when redis-server is not installed.
"""

import shutil

import larder_test
from larder_test import (Client, RespError, Server, Skip, assert_true,
                         larder_only, short)


class RedisPeer(Server):
    """redis-server as the reference, whatever LARDER_TEST_AGAINST says."""

    def command_line(self):
        return ['redis-server', '--port', str(self.port), '--save', '',
                '--appendonly', 'no', '--dir', self.dir,
                '--logfile', self.logfile] + [str(a) for a in self.extra]


def fmt(args):
    out = []
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif not isinstance(a, bytes):
            a = str(a).encode()
        if len(a) > 40:
            a = a[:16] + b'...(%d bytes)' % len(a)
        out.append(repr(a)[1:])
    return ' '.join(out)


class Pair:
    """A larder and a redis-server; `l` and `r` are clients of each."""

    def __init__(self, larder_args=(), redis_args=(), workers=2):
        larder_only()
        if not shutil.which('redis-server'):
            raise Skip('redis-server not installed')
        self.larder = Server(workers=workers, args=list(larder_args))
        self.redis = None
        try:
            self.redis = RedisPeer(args=list(redis_args))
        except BaseException:
            self.larder.cleanup()
            raise
        self.l = self.r = None
        self.connect(2)

    def connect(self, proto):
        """(Re)connect both clients in protocol `proto`."""
        for c in (self.l, self.r):
            if c is not None:
                c.close()
        self.l = self.larder.client()
        self.r = self.redis.client()
        self.proto = proto
        if proto == 3:
            assert_true(not isinstance(self.l.hello(3), RespError), 'HELLO')
            assert_true(not isinstance(self.r.hello(3), RespError), 'HELLO')

    def flush(self):
        if not self.larder.alive():
            raise AssertionError('larder-server died')
        self.connect(2)
        for c in (self.l, self.r):
            c.call('FLUSHALL')

    def call(self, *args, same=None):
        """Send to both; the replies must be equal (or same(l, r) true).
        Returns larder's reply."""
        a = self.l.call(*args)
        b = self.r.call(*args)
        ok = same(a, b) if same else a == b
        if not ok:
            raise AssertionError('%s (RESP%d)\n       larder: %s\n'
                                 '       redis:  %s'
                                 % (fmt(args), self.proto, short(a, 400),
                                    short(b, 400)))
        return a

    def calls(self, cmds, same=None):
        """call() each command in order; returns larder's replies."""
        return [self.call(*c, same=same) for c in cmds]

    def both(self, *args):
        """Send to both without comparing: (larder's, redis's) replies."""
        return self.l.call(*args), self.r.call(*args)

    def close(self):
        for c in (self.l, self.r):
            if c is not None:
                c.close()
        try:
            self.larder.cleanup()
        finally:
            if self.redis is not None:
                self.redis.cleanup()


class _SharedPair:
    """Stands in for larder_test's Shared: the runner asks it for the
    argument of one-argument tests."""

    def __init__(self, kw):
        self.kw = kw
        self.pair = None
        self.server = None      # what the runner scans for crashes

    def get(self):
        if self.pair is None:
            self.pair = Pair(**self.kw)
            self.server = self.pair.larder
        self.pair.flush()
        return self.pair

    def close(self):
        if self.pair is not None:
            self.pair.close()
            self.pair = None
            self.server = None


def diff_main(namespace, **pair_kw):
    """larder_test.main, with the file's Pair for one-argument tests."""
    orig = larder_test.Shared
    larder_test.Shared = lambda **kw: _SharedPair(pair_kw)
    try:
        larder_test.main(namespace)
    finally:
        larder_test.Shared = orig


def numeric_edges():
    """The bad and edge values every numeric argument is tried with."""
    return ['0', '-1', '1', '2147483647', '2147483648', '-2147483648',
            '-2147483649', '4294967295', '4294967296',
            '9223372036854775807', '9223372036854775808',
            '-9223372036854775808', '-9223372036854775809',
            '18446744073709551616', 'nan', 'inf', '-inf', '+inf', '1.5',
            '1e3', 'abc', '', ' 1', '0x10', '00', '-0']
