/*
 * srv_geo.c - geohash cells, their neighbours and ranges, the search
 * cover of a radius or a box, and distances (srv_geo.h).
 */
#include "server/srv_geo.h"

#include <math.h>

#define EARTH_RADIUS_M 6372797.560856
#define MERCATOR_MAX 20037726.37
#define DEG_TO_RAD (M_PI / 180.0)
#define HASH_BITS 52
#define GEOHASH_CHAR_BITS 5
#define GEOHASH_CHAR_MASK 0x1f
#define STD_LAT_MIN (-90.0)
#define STD_LAT_MAX 90.0
/* Latitudes past these get coarser cells (meridians converge). */
#define POLAR_LAT 66
#define HIGH_POLAR_LAT 80

static const char GEOHASH_ALPHABET[] = "0123456789bcdefghjkmnpqrstuvwxyz";

typedef struct range {
    double min, max;
} range;

typedef struct area {
    range lon, lat;
} area;

static const range LON_RANGE = { SRV_GEO_LONG_MIN, SRV_GEO_LONG_MAX };
static const range LAT_RANGE = { SRV_GEO_LAT_MIN, SRV_GEO_LAT_MAX };

static double deg_rad(double a) { return a * DEG_TO_RAD; }
static double rad_deg(double a) { return a / DEG_TO_RAD; }

/* Bits of `lat` at even positions, of `lon` at odd ones. */
static uint64_t interleave(uint32_t lat, uint32_t lon)
{
    uint64_t v = 0;

    for (int i = 0; i < 32; i++) {
        v |= (uint64_t)((lat >> i) & 1u) << (2 * i);
        v |= (uint64_t)((lon >> i) & 1u) << (2 * i + 1);
    }
    return v;
}

static void deinterleave(uint64_t v, uint32_t *lat, uint32_t *lon)
{
    *lat = *lon = 0;
    for (int i = 0; i < 32; i++) {
        *lat |= (uint32_t)((v >> (2 * i)) & 1u) << i;
        *lon |= (uint32_t)((v >> (2 * i + 1)) & 1u) << i;
    }
}

int srv_geo_valid(double lon, double lat)
{
    return !(lon < SRV_GEO_LONG_MIN || lon > SRV_GEO_LONG_MAX ||
             lat < SRV_GEO_LAT_MIN || lat > SRV_GEO_LAT_MAX);
}

/* The cell of (lon, lat) at `step` within the given ranges; 0 when the
 * position is outside them. */
static int encode(range lonr, range latr, double lon, double lat, int step,
                  srv_geo_cell *out)
{
    out->bits = 0;
    out->step = (uint8_t)step;
    if (!srv_geo_valid(lon, lat) || lat < latr.min || lat > latr.max ||
        lon < lonr.min || lon > lonr.max)
        return 0;
    double lat_off = (lat - latr.min) / (latr.max - latr.min);
    double lon_off = (lon - lonr.min) / (lonr.max - lonr.min);
    lat_off *= (double)(1ull << step);
    lon_off *= (double)(1ull << step);
    out->bits = interleave((uint32_t)lat_off, (uint32_t)lon_off);
    return 1;
}

static void decode_area(range lonr, range latr, srv_geo_cell c, area *a)
{
    uint32_t ilat, ilon;
    double lat_scale = latr.max - latr.min, lon_scale = lonr.max - lonr.min;
    double cells = (double)(1ull << c.step);

    deinterleave(c.bits, &ilat, &ilon);
    a->lat.min = latr.min + (ilat * 1.0 / cells) * lat_scale;
    a->lat.max = latr.min + ((ilat + 1) * 1.0 / cells) * lat_scale;
    a->lon.min = lonr.min + (ilon * 1.0 / cells) * lon_scale;
    a->lon.max = lonr.min + ((ilon + 1) * 1.0 / cells) * lon_scale;
}

uint64_t srv_geo_score(double lon, double lat)
{
    srv_geo_cell c;

    encode(LON_RANGE, LAT_RANGE, lon, lat, SRV_GEO_STEP_MAX, &c);
    return c.bits << (HASH_BITS - c.step * 2);
}

void srv_geo_decode(double score, double *xy)
{
    srv_geo_cell c = { (uint64_t)score, SRV_GEO_STEP_MAX };
    area a;

    decode_area(LON_RANGE, LAT_RANGE, c, &a);
    xy[0] = (a.lon.min + a.lon.max) / 2;
    xy[0] = xy[0] > SRV_GEO_LONG_MAX   ? SRV_GEO_LONG_MAX
            : xy[0] < SRV_GEO_LONG_MIN ? SRV_GEO_LONG_MIN
                                       : xy[0];
    xy[1] = (a.lat.min + a.lat.max) / 2;
    xy[1] = xy[1] > SRV_GEO_LAT_MAX   ? SRV_GEO_LAT_MAX
            : xy[1] < SRV_GEO_LAT_MIN ? SRV_GEO_LAT_MIN
                                      : xy[1];
}

void srv_geo_hash_string(double score, char *out)
{
    static const range std_lat = { STD_LAT_MIN, STD_LAT_MAX };
    srv_geo_cell c;
    double xy[2];

    srv_geo_decode(score, xy);
    encode(LON_RANGE, std_lat, xy[0], xy[1], SRV_GEO_STEP_MAX, &c);
    for (int i = 0; i < SRV_GEO_HASH_CHARS; i++) {
        /* 52 bits make ten characters; the eleventh is always 0. */
        unsigned idx = i == SRV_GEO_HASH_CHARS - 1
                           ? 0
                           : (unsigned)(c.bits >>
                                        (HASH_BITS -
                                         (i + 1) * GEOHASH_CHAR_BITS)) &
                                 GEOHASH_CHAR_MASK;
        out[i] = GEOHASH_ALPHABET[idx];
    }
}

double srv_geo_distance(double lon1, double lat1, double lon2, double lat2)
{
    double lat1r = deg_rad(lat1), lon1r = deg_rad(lon1);
    double lat2r = deg_rad(lat2), lon2r = deg_rad(lon2);
    double u = sin((lat2r - lat1r) / 2), v = sin((lon2r - lon1r) / 2);

    return 2.0 * EARTH_RADIUS_M *
           asin(sqrt(u * u + cos(lat1r) * cos(lat2r) * v * v));
}

/* The neighbour of `c` dlon cells east and dlat cells north, wrapping
 * around at the edges of the grid. A coordinate that does not move is
 * left as it is, also when it lies on the far edge (longitude 180, the
 * top latitude), one past the last cell, as in Redis. */
static srv_geo_cell neighbour(srv_geo_cell c, int dlon, int dlat)
{
    uint32_t lat, lon, mask = (uint32_t)((1ull << c.step) - 1);

    deinterleave(c.bits, &lat, &lon);
    if (dlon)
        lon = (uint32_t)(lon + (uint32_t)dlon) & mask;
    if (dlat)
        lat = (uint32_t)(lat + (uint32_t)dlat) & mask;
    c.bits = interleave(lat, lon);
    return c;
}

/* Cells fine enough that the search area spans about one of them. */
static int estimate_step(double meters, double lat)
{
    int step = 1;

    if (meters == 0)
        return SRV_GEO_STEP_MAX;
    while (meters < MERCATOR_MAX) {
        meters *= 2;
        step++;
    }
    step -= 2; /* the area fits in most cases */
    if (lat > POLAR_LAT || lat < -POLAR_LAT) {
        step--;
        if (lat > HIGH_POLAR_LAT || lat < -HIGH_POLAR_LAT)
            step--;
    }
    return step < 1 ? 1 : step > SRV_GEO_STEP_MAX ? SRV_GEO_STEP_MAX : step;
}

/* The latitude-longitude box around the shape: min lon, min lat, max
 * lon, max lat; longitudes widen towards the pole side of the shape. */
static void bounding_box(const srv_geo_shape *s, double *b)
{
    double lon = s->xy[0], lat = s->xy[1];
    double h = s->conversion *
               (s->type == SRV_GEO_RADIUS ? s->radius : s->height / 2);
    double w = s->conversion *
               (s->type == SRV_GEO_RADIUS ? s->radius : s->width / 2);
    double dlat = rad_deg(h / EARTH_RADIUS_M);
    double dlon_top = rad_deg(w / EARTH_RADIUS_M / cos(deg_rad(lat + dlat)));
    double dlon_bottom = rad_deg(w / EARTH_RADIUS_M / cos(deg_rad(lat - dlat)));
    int south = lat < 0;

    b[0] = south ? lon - dlon_bottom : lon - dlon_top;
    b[2] = south ? lon + dlon_bottom : lon + dlon_top;
    b[1] = lat - dlat;
    b[3] = lat + dlat;
}

enum { C_CENTRE, C_N, C_S, C_E, C_W, C_NE, C_NW, C_SE, C_SW };

static void around(srv_geo_cell centre, srv_geo_cell *cells)
{
    cells[C_CENTRE] = centre;
    cells[C_N] = neighbour(centre, 0, 1);
    cells[C_S] = neighbour(centre, 0, -1);
    cells[C_E] = neighbour(centre, 1, 0);
    cells[C_W] = neighbour(centre, -1, 0);
    cells[C_NE] = neighbour(centre, 1, 1);
    cells[C_NW] = neighbour(centre, -1, 1);
    cells[C_SE] = neighbour(centre, 1, -1);
    cells[C_SW] = neighbour(centre, -1, -1);
}

static void drop(srv_geo_cell *cells, int a, int b, int c)
{
    cells[a].bits = cells[b].bits = cells[c].bits = 0;
    cells[a].step = cells[b].step = cells[c].step = 0;
}

void srv_geo_cells(const srv_geo_shape *s, srv_geo_cell *cells)
{
    double b[4], meters;
    srv_geo_cell centre;
    area a, n, so, e, w;
    int step;

    bounding_box(s, b);
    meters = s->type == SRV_GEO_RADIUS
                 ? s->radius
                 : sqrt((s->width / 2) * (s->width / 2) +
                        (s->height / 2) * (s->height / 2));
    meters *= s->conversion;
    step = estimate_step(meters, s->xy[1]);
    encode(LON_RANGE, LAT_RANGE, s->xy[0], s->xy[1], step, &centre);
    around(centre, cells);
    decode_area(LON_RANGE, LAT_RANGE, centre, &a);
    /* A step that leaves part of the box outside the neighbours is one
     * too fine. */
    decode_area(LON_RANGE, LAT_RANGE, cells[C_N], &n);
    decode_area(LON_RANGE, LAT_RANGE, cells[C_S], &so);
    decode_area(LON_RANGE, LAT_RANGE, cells[C_E], &e);
    decode_area(LON_RANGE, LAT_RANGE, cells[C_W], &w);
    if (step > 1 && (n.lat.max < b[3] || so.lat.min > b[1] ||
                     e.lon.max < b[2] || w.lon.min > b[0])) {
        step--;
        encode(LON_RANGE, LAT_RANGE, s->xy[0], s->xy[1], step, &centre);
        around(centre, cells);
        decode_area(LON_RANGE, LAT_RANGE, centre, &a);
    }
    /* Neighbours beyond an edge of the box the centre already passes
     * hold nothing of it. */
    if (step >= 2) {
        if (a.lat.min < b[1])
            drop(cells, C_S, C_SW, C_SE);
        if (a.lat.max > b[3])
            drop(cells, C_N, C_NE, C_NW);
        if (a.lon.min < b[0])
            drop(cells, C_W, C_SW, C_NW);
        if (a.lon.max > b[2])
            drop(cells, C_E, C_SE, C_NE);
    }
}

void srv_geo_cell_range(srv_geo_cell c, uint64_t *min, uint64_t *max)
{
    *min = c.bits << (HASH_BITS - c.step * 2);
    *max = (c.bits + 1) << (HASH_BITS - c.step * 2);
}

int srv_geo_within(const srv_geo_shape *s, double lon, double lat, double *dist)
{
    if (s->type == SRV_GEO_RADIUS) {
        *dist = srv_geo_distance(s->xy[0], s->xy[1], lon, lat);
        return *dist <= s->radius * s->conversion;
    }
    double dlon = srv_geo_distance(lon, lat, s->xy[0], lat);
    double dlat = srv_geo_distance(lon, lat, lon, s->xy[1]);
    if (dlon > s->width * s->conversion / 2 ||
        dlat > s->height * s->conversion / 2)
        return 0;
    *dist = srv_geo_distance(s->xy[0], s->xy[1], lon, lat);
    return 1;
}
