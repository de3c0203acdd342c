/*
 * srv_geo.h - the geohash arithmetic of Redis's geo commands: positions
 * are interleaved 26+26-bit cells of longitude [-180, 180] and latitude
 * [-85.05112878, 85.05112878] (latitude bits at even positions), stored
 * as 52-bit zset scores; a search covers its shape with a centre cell and
 * its eight neighbours at a step chosen from the radius, skipping those
 * that cannot matter, and filters members by great-circle distance on a
 * sphere of Redis's radius. The steps, boxes and distances follow Redis's
 * so that the same members come back in the same order.
 *
 * Pure functions, no allocation.
 */
#ifndef SRV_GEO_H
#define SRV_GEO_H

#include <stdint.h>

#define SRV_GEO_STEP_MAX 26
#define SRV_GEO_LAT_MIN (-85.05112878)
#define SRV_GEO_LAT_MAX 85.05112878
#define SRV_GEO_LONG_MIN (-180.0)
#define SRV_GEO_LONG_MAX 180.0
#define SRV_GEO_HASH_CHARS 11
/* The centre cell and its eight neighbours, in the order they are
 * searched: centre, N, S, E, W, NE, NW, SE, SW. */
#define SRV_GEO_CELLS 9

typedef struct srv_geo_cell {
    uint64_t bits; /* 0 with step 0: not to be searched */
    uint8_t step;
} srv_geo_cell;

enum srv_geo_shape_type { SRV_GEO_RADIUS, SRV_GEO_BOX };

typedef struct srv_geo_shape {
    int type;
    double xy[2];         /* centre: longitude, latitude */
    double conversion;    /* metres per unit */
    double radius;        /* SRV_GEO_RADIUS, in units */
    double width, height; /* SRV_GEO_BOX, in units */
} srv_geo_shape;

/* 1 if (lon, lat) may be indexed (within the limits above). */
int srv_geo_valid(double lon, double lat);

/* The 52-bit score of (lon, lat); the position must be valid. */
uint64_t srv_geo_score(double lon, double lat);

/* The centre of the cell a score stands for: xy[0] longitude, xy[1]
 * latitude (the score is truncated to an integer as Redis does). */
void srv_geo_decode(double score, double *xy);

/* GEOHASH's 11-character standard geohash of a score into out (no NUL). */
void srv_geo_hash_string(double score, char *out);

/* Great-circle distance in metres. */
double srv_geo_distance(double lon1, double lat1, double lon2, double lat2);

/*
 * The cells a search of `shape` walks, in order (zeroed ones skipped by
 * the caller): Redis's step estimate and its exclusions.
 */
void srv_geo_cells(const srv_geo_shape *shape, srv_geo_cell *cells);

/* The score range [*min, *max) of the members inside `cell`. */
void srv_geo_cell_range(srv_geo_cell cell, uint64_t *min, uint64_t *max);

/* 1 and *dist (metres) if the point is inside `shape`, else 0. */
int srv_geo_within(const srv_geo_shape *shape, double lon, double lat,
                   double *dist);

#endif
