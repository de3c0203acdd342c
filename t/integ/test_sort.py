"""Checks SORT and SORT_RO (BY with patterns, nosort and hash fields, LIMIT, GET # / patterns / fields, ASC|DESC, ALPHA, STORE), LCS (LEN, IDX, MINMATCHLEN, WITHMATCHLEN, empty and missing strings, the memory limit) and ZINTERCARD and SINTERCARD against redis-server reply by reply, RESP2 and RESP3, with every numeric argument's bad values."""

import random

from larder_diff import diff_main, numeric_edges


def dataset(p, r):
    """L: a list with duplicates, floats and negatives; S: a small set of
    integers (Redis's intset: its own order is ascending); T: a set of
    strings; Z: a sorted set; weights w_* (numeric, some missing), ws_*
    (distinct strings, none missing), wm_* (strings, some missing and
    equal), hashes h_* with fields f and g."""
    vals = ['3', '1', '2', '10', '-5', '2.5', '1e2', '0', '007', '3',
            '-0', '  4', 'inf']
    p.call('RPUSH', 'L', *vals)
    ints = ['%d' % r.randint(-50, 50) for _ in range(12)]
    p.call('SADD', 'S', *ints)
    p.call('SADD', 'T', 'apple', 'Banana', 'cherry', 'date', 'éclair',
           'fig', 'a\x00b', '')
    p.call('ZADD', 'Z', *sum((['%d' % r.randint(0, 5), 'z%d' % i]
                              for i in range(10)), []))
    members = set(vals) | set(['apple', 'Banana', 'cherry', 'date', 'fig',
                               'éclair', 'a\x00b', ''])
    members |= set('z%d' % i for i in range(10)) | set(ints)
    for i, m in enumerate(sorted(members)):
        if r.random() < 0.8:
            p.call('SET', 'w_' + m, r.choice(['%d' % r.randint(-9, 9),
                                              '%.2f' % r.uniform(-9, 9)]))
        p.call('SET', 'ws_' + m, 'k%03d%s' % (r.randint(0, 999), i))
        if r.random() < 0.7:
            p.call('SET', 'wm_' + m, r.choice(['x', 'y', 'Z']))
        if r.random() < 0.7:
            p.call('HSET', 'h_' + m, 'f', '%d' % r.randint(0, 9), 'g', m)
    p.call('SET', 'w_bad', 'notanumber')
    p.call('SET', 'str', 'x')


def sort_cmd(r, ro=False):
    key = r.choice(['L', 'S', 'T', 'Z', 'nokey'])
    args = ['SORT_RO' if ro else 'SORT', key]
    by = r.choice([None, None, 'w_*', 'ws_*', 'wm_*', 'nosort', 'h_*->f',
                   'h_*->', '*_x', 'h_*->g'])
    alpha = r.random() < 0.4
    limit = r.random() < 0.4
    store = not ro and r.random() < 0.3
    if key == 'T' and not alpha and by in (None, 'w_*', 'h_*->f'):
        alpha = r.random() < 0.7    # else the conversion error
    # ALPHA with a BY pattern may weigh elements equally (or not at all):
    # then the order is the sort's input order, which Redis keeps for a
    # list (a stable sort) but not under LIMIT (a partial quicksort) and
    # not for sets and sorted sets (hash table order). Only the distinct
    # weights of ws_* there.
    if alpha and by not in (None, 'nosort', 'ws_*') and (limit or
                                                         key != 'L'):
        by = 'ws_*'
    if by == 'nosort' and key == 'T' and not store:
        by = None                   # a string set has no order of its own
    if by:
        args += ['BY', by]
    if limit:
        args += ['LIMIT', str(r.choice([0, 1, 2, -1, 5, 20])),
                 str(r.choice([0, 1, 3, -1, 100]))]
    for _ in range(r.choice([0, 0, 1, 2])):
        args += ['GET', r.choice(['#', 'w_*', 'h_*->f', 'h_*->g', 'const',
                                  'ws_*'])]
    if r.random() < 0.5:
        args.append(r.choice(['ASC', 'DESC', 'desc']))
    if alpha:
        args.append('ALPHA')
    if store:
        args += ['STORE', r.choice(['dst', 'L'])]
    return args


def stream(p, seed, n):
    r = random.Random(seed)
    dataset(p, r)
    for _ in range(n):
        cmd = sort_cmd(r, r.random() < 0.3)
        p.call(*cmd)
        if 'STORE' in cmd:
            dst = cmd[cmd.index('STORE') + 1]
            p.call('LRANGE', dst, '0', '-1')
            p.call('EXISTS', dst)
            p.call('DEL', 'L')
            p.call('RPUSH', 'L', '3', '1', '2', '10', '-5', '2.5', '1e2',
                   '0', '007', '3', '-0', '  4', 'inf')


def test_sort_random(p):
    stream(p, 1, 600)


def test_sort_random_resp3(p):
    p.connect(3)
    stream(p, 2, 200)


def test_sort_fixed(p):
    p.call('RPUSH', 'n', '3', '1', '2')
    p.call('SET', 'str', 'x')
    for cmd in (['SORT', 'str'], ['SORT', 'nokey'], ['SORT', 'nokey', 'STORE',
                                                      'd'],
                ['SORT', 'n', 'STORE'], ['SORT', 'n', 'LIMIT', '1'],
                ['SORT', 'n', 'BY'], ['SORT', 'n', 'GET'],
                ['SORT', 'n', 'FOO'], ['SORT_RO', 'n', 'STORE', 'd'],
                ['SORT', 'n', 'BY', 'w_*', 'LIMIT', 'x', '1'],
                ['SORT', 'n', 'STORE', 'n'], ['LRANGE', 'n', '0', '-1'],
                ['SORT', 'n', 'LIMIT', '0', '0', 'STORE', 'e'],
                ['EXISTS', 'e'], ['SORT', 'n', 'BY', 'x', 'GET', '#'],
                ['SORT', 'n', 'GET', '#', 'GET', '#', 'LIMIT', '1', '5'],
                ['SORT', 'n', 'BY', 'no*', 'DESC', 'LIMIT', '-3', '-1']):
        p.call(*cmd)
    p.call('SET', 'e', 'x')
    p.call('EXPIRE', 'e', '100')
    p.call('SORT', 'n', 'STORE', 'e')
    p.call('TTL', 'e')
    p.call('TYPE', 'e')
    # LIMIT's numbers: starts with a small count, counts from 0.
    for v in numeric_edges():
        p.call('SORT', 'n', 'LIMIT', v, '2')
        p.call('SORT', 'n', 'LIMIT', '0', v)


def test_lcs(p):
    r = random.Random(3)
    for _ in range(300):
        a = ''.join(r.choice('abc') for _ in range(r.randint(0, 40)))
        b = ''.join(r.choice('abcd') for _ in range(r.randint(0, 40)))
        p.call('MSET', 'a', a, 'b', b)
        p.call('LCS', 'a', 'b')
        p.call('LCS', 'b', 'a', 'LEN')
        p.call('LCS', 'a', 'b', 'IDX')
        p.call('LCS', 'a', 'b', 'IDX', 'WITHMATCHLEN',
               'MINMATCHLEN', str(r.randint(0, 4)))
    p.call('SET', 'e', '')
    p.call('RPUSH', 'l', 'x')
    for cmd in (['LCS', 'e', 'a'], ['LCS', 'e', 'e', 'IDX'],
                ['LCS', 'nokey', 'a', 'LEN'], ['LCS', 'nokey', 'nokey2'],
                ['LCS', 'l', 'a'], ['LCS', 'a', 'l', 'LEN'],
                ['LCS', 'a', 'b', 'LEN', 'IDX'], ['LCS', 'a', 'b', 'FOO'],
                ['LCS', 'a', 'b', 'MINMATCHLEN'],
                ['LCS', 'a', 'b', 'IDX', 'MINMATCHLEN', '-5']):
        p.call(*cmd)
    for v in numeric_edges():
        p.call('LCS', 'a', 'b', 'IDX', 'MINMATCHLEN', v)
    # The table of two 12k strings passes proto-max-bulk-len.
    p.call('SET', 'big1', 'x' * 12000)
    p.call('SET', 'big2', 'y' * 12000)
    p.call('LCS', 'big1', 'big2')
    p.call('SET', 'big3', 'ab' * 20000)
    p.call('LCS', 'big3', 'e', 'LEN')
    p.call('LCS', 'big3', 'nokey')


def test_lcs_resp3(p):
    p.connect(3)
    p.call('MSET', 'a', 'ohmytext', 'b', 'mynewtext', 'e', '')
    p.call('LCS', 'a', 'b', 'IDX')
    p.call('LCS', 'a', 'b', 'IDX', 'MINMATCHLEN', '4', 'WITHMATCHLEN')
    p.call('LCS', 'a', 'e', 'IDX')
    p.call('LCS', 'a', 'b', 'LEN')
    p.call('LCS', 'a', 'b')


def intercard(p, cmd, mine, other):
    """CMD (ZINTERCARD or SINTERCARD) over random keys of its own type,
    the other type (sets count as zsets of score 1 to ZINTERCARD; zsets
    are WRONGTYPE to SINTERCARD) and missing keys, then its errors and
    every bad numeric argument."""
    r = random.Random(4)
    for i in range(6):
        p.call('ZADD', 'z%d' % i, *sum((['1', 'm%d' % r.randint(0, 30)]
                                        for _ in range(20)), []))
        p.call('SADD', 's%d' % i, *['m%d' % r.randint(0, 30)
                                    for _ in range(20)])
    p.call('SET', 'str', 'x')
    m = [mine + str(i) for i in range(4)]
    for _ in range(150):
        keys = [r.choice(m + [other + '0', other + '1', 'nokey'])
                for _ in range(r.randint(1, 4))]
        args = [cmd, str(len(keys))] + keys
        if r.random() < 0.5:
            args += ['LIMIT', str(r.choice([0, 1, 2, 5, 100]))]
        p.call(*args)
    for args in (['0', m[0]], ['-1', m[0]], ['3', m[0], m[1]],
                 ['2', m[0], 'str'], ['1', m[0], 'LIMIT'],
                 ['1', m[0], 'FOO', '1'],
                 ['1', m[0], 'LIMIT', '1', 'LIMIT', '3'], ['1'], []):
        p.call(cmd, *args)
    for v in numeric_edges():
        p.call(cmd, v, m[0], m[1])
        p.call(cmd, '2', m[0], m[1], 'LIMIT', v)


def test_zintercard(p):
    intercard(p, 'ZINTERCARD', 'z', 's')


def test_sintercard(p):
    intercard(p, 'SINTERCARD', 's', 'z')


if __name__ == '__main__':
    diff_main(globals())
