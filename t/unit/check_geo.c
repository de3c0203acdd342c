/*
 * check_geo: unit tests of the geohash arithmetic (server/srv_geo.h):
 * the documented Palermo/Catania figures (scores, geohashes, distance),
 * decode landing in the encoded cell, the limits, the cells a search
 * walks (centre first, edge neighbours dropped, wrap at the
 * antimeridian) and the shape tests.
 */
#include "server/srv_geo.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_S 30
#define PALERMO_LON 13.361389
#define PALERMO_LAT 38.115556
#define CATANIA_LON 15.087269
#define CATANIA_LAT 37.502669
#define PALERMO_SCORE 3479099956230698ull /* Redis's ZSCORE after GEOADD */
#define PALERMO_CATANIA_M 166274.1516     /* GEODIST, 4 decimals */
#define CELL_TOLERANCE 1e-5               /* degrees: a 26-bit cell */
#define ROUND_TRIPS 10000

START_TEST(test_documented_values)
{
    char hash[SRV_GEO_HASH_CHARS];
    double d;

    ck_assert_uint_eq(srv_geo_score(PALERMO_LON, PALERMO_LAT), PALERMO_SCORE);
    srv_geo_hash_string((double)srv_geo_score(PALERMO_LON, PALERMO_LAT), hash);
    ck_assert_mem_eq(hash, "sqc8b49rny0", SRV_GEO_HASH_CHARS);
    srv_geo_hash_string((double)srv_geo_score(CATANIA_LON, CATANIA_LAT), hash);
    ck_assert_mem_eq(hash, "sqdtr74hyu0", SRV_GEO_HASH_CHARS);
    {
        double a[2], b[2];
        srv_geo_decode((double)srv_geo_score(PALERMO_LON, PALERMO_LAT), a);
        srv_geo_decode((double)srv_geo_score(CATANIA_LON, CATANIA_LAT), b);
        d = srv_geo_distance(a[0], a[1], b[0], b[1]);
    }
    ck_assert_double_eq_tol(d, PALERMO_CATANIA_M, 0.00005);
}
END_TEST

START_TEST(test_round_trip_and_limits)
{
    unsigned x = 7;

    for (int i = 0; i < ROUND_TRIPS; i++) {
        x = x * 1103515245u + 12345u;
        double lon = -180.0 + 360.0 * (x >> 8) / (double)(1u << 24);
        x = x * 1103515245u + 12345u;
        double lat = SRV_GEO_LAT_MIN + (SRV_GEO_LAT_MAX - SRV_GEO_LAT_MIN) *
                                           (x >> 8) / (double)(1u << 24);
        double xy[2];
        srv_geo_decode((double)srv_geo_score(lon, lat), xy);
        ck_assert_double_eq_tol(xy[0], lon, CELL_TOLERANCE);
        ck_assert_double_eq_tol(xy[1], lat, CELL_TOLERANCE);
    }
    ck_assert(srv_geo_valid(180, SRV_GEO_LAT_MAX));
    ck_assert(srv_geo_valid(-180, SRV_GEO_LAT_MIN));
    ck_assert(!srv_geo_valid(180.000001, 0));
    ck_assert(!srv_geo_valid(0, 85.06));
}
END_TEST

START_TEST(test_cells)
{
    srv_geo_shape s = { .type = SRV_GEO_RADIUS,
                        .xy = { 10, 10 },
                        .conversion = 1000,
                        .radius = 100 };
    srv_geo_cell cells[SRV_GEO_CELLS];
    uint64_t min, max, score = srv_geo_score(10, 10);

    srv_geo_cells(&s, cells);
    /* The centre cell holds the centre's own score. */
    srv_geo_cell_range(cells[0], &min, &max);
    ck_assert(min <= score && score < max);
    ck_assert_uint_gt(cells[0].step, 0);
    /* A zero radius searches only the centre's finest cell. */
    s.radius = 0;
    srv_geo_cells(&s, cells);
    ck_assert_uint_eq(cells[0].step, SRV_GEO_STEP_MAX);
    for (int i = 1; i < SRV_GEO_CELLS; i++)
        ck_assert(cells[i].step == 0 && cells[i].bits == 0);
    /* At the antimeridian the east neighbour wraps to longitude -180. */
    s.xy[0] = 179.99;
    s.radius = 50;
    srv_geo_cells(&s, cells);
    {
        int wrapped = 0;
        for (int i = 1; i < SRV_GEO_CELLS; i++) {
            if (!cells[i].step)
                continue;
            srv_geo_cell_range(cells[i], &min, &max);
            double xy[2];
            srv_geo_decode((double)min, xy);
            wrapped |= xy[0] < 0;
        }
        ck_assert(wrapped);
    }
}
END_TEST

START_TEST(test_within)
{
    srv_geo_shape r = {
        .type = SRV_GEO_RADIUS, .xy = { 0, 0 }, .conversion = 1, .radius = 1000
    };
    srv_geo_shape b = { .type = SRV_GEO_BOX,
                        .xy = { 0, 0 },
                        .conversion = 1000,
                        .width = 2,
                        .height = 4 };
    double d;

    ck_assert(srv_geo_within(&r, 0, 0.0089, &d)); /* ~990 m north */
    ck_assert(!srv_geo_within(&r, 0, 0.0091, &d));
    ck_assert(srv_geo_within(&b, 0.0089, 0.0179, &d)); /* 990 m E, 1990 m N */
    ck_assert(!srv_geo_within(&b, 0.0091, 0, &d));
    ck_assert(!srv_geo_within(&b, 0, 0.0181, &d));
}
END_TEST

static Suite *geo_suite(void)
{
    Suite *s = suite_create("geo");
    TCase *tc = tcase_create("core");

    tcase_set_timeout(tc, TIMEOUT_S);
    tcase_add_test(tc, test_documented_values);
    tcase_add_test(tc, test_round_trip_and_limits);
    tcase_add_test(tc, test_cells);
    tcase_add_test(tc, test_within);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(geo_suite());
    int failed;

    srunner_run_all(sr, CK_ENV);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
