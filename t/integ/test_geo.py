"""Checks GEOADD GEOPOS GEODIST GEOHASH GEOSEARCH GEOSEARCHSTORE GEORADIUS(_RO) GEORADIUSBYMEMBER(_RO) against redis-server reply by reply (RESP2 and RESP3): the same members in the same order with the same float text, at the poles' latitude limits, across the antimeridian, for tiny and huge radii and boxes, every option and every bad argument."""

import random

from larder_diff import diff_main, numeric_edges

LAT_MAX = 85.05112878


def places(r, n):
    """n positions: anywhere, near the limits, near a hot spot, on the
    antimeridian and the prime meridian."""
    out = []
    for i in range(n):
        k = r.random()
        if k < 0.3:
            lon, lat = r.uniform(-180, 180), r.uniform(-LAT_MAX, LAT_MAX)
        elif k < 0.45:
            lon, lat = r.uniform(-180, 180), r.choice([1, -1]) * r.uniform(
                80, LAT_MAX)
        elif k < 0.6:
            lon = r.choice([180, -180, 179.9999, -179.9999]) + r.uniform(
                -0.5, 0.5)
            lon = max(-180, min(180, lon))
            lat = r.uniform(-60, 60)
        elif k < 0.85:
            lon, lat = 13.36 + r.gauss(0, 0.3), 38.11 + r.gauss(0, 0.3)
        else:
            lon, lat = r.uniform(-0.01, 0.01), r.uniform(-0.01, 0.01)
        out.append(('%.6f' % lon, '%.6f' % lat, 'm%d' % i))
    return out


def load(p, key, pts):
    args = []
    for lon, lat, m in pts:
        args += [lon, lat, m]
    p.call('GEOADD', key, *args)


def centre(r):
    return r.choice([
        ['FROMLONLAT', '13.36', '38.11'],
        ['FROMLONLAT', '180', '0'], ['FROMLONLAT', '-180', '10'],
        ['FROMLONLAT', '0', str(LAT_MAX)], ['FROMLONLAT', '0', str(-LAT_MAX)],
        ['FROMLONLAT', '%.4f' % r.uniform(-180, 180),
         '%.4f' % r.uniform(-LAT_MAX, LAT_MAX)],
        ['FROMMEMBER', 'm%d' % r.randint(0, 60)],
        ['FROMMEMBER', 'm0'], ['FROMMEMBER', 'nosuch']])


def shape(r):
    unit = r.choice(['m', 'km', 'ft', 'mi', 'KM', 'M'])
    if r.random() < 0.55:
        return ['BYRADIUS', r.choice(['0', '0.0001', '1', '50', '1000',
                                      '200', '5000', '20000', '40000',
                                      '%.3f' % r.uniform(0, 3000)]), unit]
    return ['BYBOX', r.choice(['0', '1', '400', '2000', '%.2f' % r.uniform(
        0, 5000)]), r.choice(['0', '2', '300', '4000', '%.2f' % r.uniform(
            0, 5000)]), unit]


def options(r, store=False):
    out = []
    for _ in range(r.randint(0, 4)):
        o = r.random()
        if o < 0.2 and not store:
            out.append(r.choice(['WITHCOORD', 'WITHDIST', 'WITHHASH']))
        elif o < 0.45:
            out.append(r.choice(['ASC', 'DESC']))
        elif o < 0.7:
            out += ['COUNT', str(r.choice([1, 2, 3, 5, 1000]))]
            if r.random() < 0.3:
                out.append('ANY')
    return out


def test_add_and_read(p):
    r = random.Random(1)
    pts = places(r, 80)
    load(p, 'g', pts)
    for lon, lat, m in pts[:40]:
        p.call('GEOPOS', 'g', m, 'nosuch')
        p.call('GEOHASH', 'g', m, 'nosuch')
    for _ in range(100):
        a, b = r.choice(pts)[2], r.choice(pts)[2]
        p.call('GEODIST', 'g', a, b, *r.choice([[], ['m'], ['km'], ['ft'],
                                               ['mi'], ['MI'], ['yd']]))
    p.call('GEODIST', 'g', 'm1', 'nosuch')
    p.call('GEODIST', 'nokey', 'm1', 'm2')
    p.call('GEODIST', 'g', 'm1', 'm2', 'km', 'x')
    p.call('GEOPOS', 'nokey', 'a')
    p.call('GEOHASH', 'nokey', 'a')
    p.call('GEOPOS', 'g')
    p.call('GEOHASH', 'g')
    p.call('ZRANGE', 'g', '0', '-1', 'WITHSCORES')
    # Options of GEOADD (they are ZADD's).
    for opts in ([], ['NX'], ['XX'], ['CH'], ['NX', 'CH'], ['CH', 'XX'],
                 ['xx', 'nx'], ['CH', 'CH'], ['GT'], ['INCR']):
        p.call('GEOADD', 'g', *opts, '1', '2', 'm1', '3', '4', 'new%d' %
               len(opts))
    p.call('GEOADD', 'g', 'CH')
    p.call('GEOADD', 'g', 'NX', 'CH', '1')
    p.call('GEOADD', 'g', '1', '2')
    p.call('GEOADD', 'g', '181', '0', 'x')
    p.call('GEOADD', 'g', '0', '86', 'x', '1', '1', 'y')
    p.call('GEOADD', 'g', '1', '1', 'y', '0', '-85.06', 'x')
    p.call('GEOADD', 'g', '180', str(LAT_MAX), 'corner', '-180',
           str(-LAT_MAX), 'corner2')
    p.call('GEOPOS', 'g', 'corner', 'corner2')
    p.call('GEOHASH', 'g', 'corner', 'corner2')
    p.call('SET', 's', 'x')
    p.call('GEOADD', 's', '1', '1', 'a')
    p.call('GEOADD', 's', '1', 'x', 'a')
    p.call('GEOPOS', 's', 'a')
    p.call('ZADD', 'z', '-5', 'neg', '9007199254740992', 'huge', '0.5',
           'frac')
    p.call('GEOPOS', 'z', 'neg', 'huge', 'frac')
    p.call('GEOHASH', 'z', 'neg', 'huge', 'frac')


def searches(p, r, n, key='g'):
    for _ in range(n):
        p.call('GEOSEARCH', key, *centre(r), *shape(r), *options(r))


def test_search_random(p):
    r = random.Random(2)
    load(p, 'g', places(r, 300))
    searches(p, r, 400)


def test_search_resp3(p):
    p.connect(3)
    r = random.Random(3)
    load(p, 'g', places(r, 100))
    searches(p, r, 100)


def test_search_ties(p):
    """Members at the same positions: sorted (stably) the same way."""
    for i in range(20):
        p.call('GEOADD', 't', '10', '10', 'same%d' % i)
        p.call('GEOADD', 't', '10.001', '10', 'near%d' % i)
    for opts in ([], ['ASC'], ['DESC'], ['COUNT', '50'], ['WITHDIST'],
                 ['COUNT', '5', 'ANY']):
        p.call('GEOSEARCH', 't', 'FROMLONLAT', '10', '10', 'BYRADIUS',
               '1', 'km', *opts)


def test_radius_commands(p):
    r = random.Random(4)
    load(p, 'g', places(r, 200))
    for _ in range(150):
        sh = shape(r)
        if sh[0] != 'BYRADIUS':
            continue
        lon, lat = r.choice([('13.36', '38.11'), ('180', '0'),
                             ('-179.9', '-84'), ('0', '0')])
        opts = options(r)
        p.call(r.choice(['GEORADIUS', 'GEORADIUS_RO']), 'g', lon, lat,
               sh[1], sh[2], *opts)
        p.call(r.choice(['GEORADIUSBYMEMBER', 'GEORADIUSBYMEMBER_RO']), 'g',
               'm%d' % r.randint(0, 199), sh[1], sh[2], *opts)


def test_store(p):
    r = random.Random(5)
    load(p, 'g', places(r, 150))
    p.call('SET', 'dst', 'overwritten')
    p.call('EXPIRE', 'dst', '1000')
    for _ in range(60):
        sh = shape(r)
        opts = options(r, store=True)
        p.call('GEOSEARCHSTORE', 'dst', 'g', *centre(r), *sh, *opts,
               *r.choice([[], ['STOREDIST']]))
        p.call('ZRANGE', 'dst', '0', '-1', 'WITHSCORES')
        p.call('TTL', 'dst')
        p.call('GEORADIUS', 'g', '13.36', '38.11', '300', 'km', *opts,
               r.choice(['STORE', 'STOREDIST']), 'dst2')
        p.call('ZRANGE', 'dst2', '0', '-1', 'WITHSCORES')
        p.call('GEORADIUSBYMEMBER', 'g', 'm3', '500', 'km', *opts,
               r.choice(['STORE', 'STOREDIST']), 'dst3')
        p.call('ZRANGE', 'dst3', '0', '-1', 'WITHSCORES')
    p.call('GEOSEARCHSTORE', 'dst', 'nokey', 'FROMLONLAT', '0', '0',
           'BYRADIUS', '1', 'km')
    p.call('EXISTS', 'dst')
    p.call('GEORADIUS', 'nokey', '0', '0', '1', 'km', 'STORE', 'dst2')
    p.call('EXISTS', 'dst2')
    p.call('GEOSEARCHSTORE', 'dst', 'g', 'FROMLONLAT', '0', '0', 'BYRADIUS',
           '1', 'm')
    p.call('EXISTS', 'dst')


def test_errors(p):
    p.call('GEOADD', 'g', '13.36', '38.11', 'a', '15.08', '37.50', 'b')
    p.call('SET', 's', 'x')
    base = ['GEOSEARCH', 'g', 'FROMLONLAT', '13', '38', 'BYRADIUS', '200',
            'km']
    for cmd in (
            base + ['WITHDIST', 'STORE', 'x'],
            base + ['STOREDIST'],
            base + ['COUNT'], base + ['COUNT', '0'], base + ['COUNT', '-3'],
            base + ['ANY'], base + ['COUNT', '1', 'ANY', 'ANY'],
            base + ['FROMMEMBER', 'a'], base + ['BYBOX', '1', '1', 'km'],
            base + ['FOO'],
            ['GEOSEARCH', 'g', 'BYRADIUS', '1', 'km', 'ASC'],
            ['GEOSEARCH', 'g', 'FROMLONLAT', '1', '1', 'ASC'],
            ['geosearch', 'g', 'FROMLONLAT', '1', '1', 'ASC'],
            ['GEOSEARCH', 'g', 'FROMMEMBER', 'nosuch', 'BYRADIUS', '1', 'km'],
            ['GEOSEARCH', 'nokey', 'FROMMEMBER', 'nosuch', 'BYRADIUS', '1',
             'km'],
            ['GEOSEARCH', 'g', 'FROMLONLAT', '200', '1', 'BYRADIUS', '1',
             'km'],
            ['GEOSEARCH', 'g', 'FROMLONLAT', '1', '1', 'BYRADIUS', '-1',
             'km'],
            ['GEOSEARCH', 'g', 'FROMLONLAT', '1', '1', 'BYRADIUS', '1', 'yd'],
            ['GEOSEARCH', 'g', 'FROMLONLAT', '1', '1', 'BYBOX', '1', '-1',
             'km'],
            ['GEOSEARCH', 'g', 'FROMLONLAT', '1', '1', 'BYBOX', 'x', '1',
             'km'],
            ['GEOSEARCH', 'g', 'FROMLONLAT', '1', '1', 'BYBOX', '1', 'x',
             'km'],
            ['GEOSEARCH', 's', 'FROMLONLAT', '1', '1', 'BYBOX', '1', '1',
             'km'],
            ['GEOSEARCHSTORE', 'd', 'g', 'FROMLONLAT', '1', '1', 'BYRADIUS',
             '1', 'km', 'WITHCOORD'],
            ['GEOSEARCHSTORE', 'd', 'g', 'FROMLONLAT', '1', '1', 'BYRADIUS',
             '1', 'km', 'STORE', 'x'],
            ['GEORADIUS', 'g', '13', '38', '200', 'km', 'WITHHASH', 'STORE',
             'x'],
            ['GEORADIUS_RO', 'g', '13', '38', '200', 'km', 'STORE', 'x'],
            ['GEORADIUS', 'g', '13', '38', 'abc', 'km'],
            ['GEORADIUS', 'g', '13', '38', '100', 'parsec'],
            ['GEORADIUS', 'g', 'x', '38', '100', 'km'],
            ['GEORADIUS', 'nokey', '13', '38', '100', 'km', 'ASC'],
            ['GEORADIUSBYMEMBER', 'g', 'nosuch', '100', 'km'],
            ['GEORADIUSBYMEMBER', 'nokey', 'nosuch', 'abc', 'km'],
            ['GEORADIUSBYMEMBER', 'g', 'a', 'abc', 'km'],
            ['GEORADIUSBYMEMBER', 'g', 'a', '100', 'km', 'FROMLONLAT', '1',
             '1'],
            ['GEORADIUSBYMEMBER', 'g', 'a', '100', 'km', 'COUNT', '2', 'ANY',
             'WITHDIST', 'DESC'],
            ['GEORADIUS', 's', '13', '38', '100', 'km']):
        p.call(*cmd)
    for v in numeric_edges() + ['1e400', '-1e400', '1e-400']:
        p.call('GEOADD', 'g', v, '1', 'x')
        p.call('GEOADD', 'g', '1', v, 'x')
        p.call('GEOSEARCH', 'g', 'FROMLONLAT', v, '1', 'BYRADIUS', '1', 'km')
        p.call('GEOSEARCH', 'g', 'FROMLONLAT', '13', '38', 'BYRADIUS', v,
               'km')
        p.call('GEOSEARCH', 'g', 'FROMLONLAT', '13', '38', 'BYBOX', v, '1',
               'km')
        p.call('GEOSEARCH', 'g', 'FROMLONLAT', '13', '38', 'BYBOX', '1', v,
               'km')
        p.call('GEOSEARCH', 'g', 'FROMLONLAT', '13', '38', 'BYRADIUS', '900',
               'km', 'COUNT', v)
        p.call('GEORADIUS', 'g', '13', v, '100', 'km')
        p.call('GEORADIUSBYMEMBER', 'g', 'a', v, 'km')
    p.call('ZRANGE', 'g', '0', '-1', 'WITHSCORES')


if __name__ == '__main__':
    diff_main(globals())
