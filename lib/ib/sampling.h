/*
 * libacmlbm -- Poisson-disk sampling of a triangle surface (paper Sec. 3.1,
 * physics-spec 8.1): Yuksel's weighted sample elimination (2015) over a
 * uniform-grid hash. SPDX-License-Identifier: Apache-2.0
 */
#ifndef ACMLBM_SAMPLING_H
#define ACMLBM_SAMPLING_H

#include "acm_private.h"

ACM_BEGIN_DECLS

/* Lower bound of min_distance / radius that the tests check. The measured
 * ratios lie between 1.07 and 2.2, near 1.26 for large counts (sampling.c
 * gives the cases); not a guarantee of the method, which keeps no hard
 * distance. Two samples at the packing limit are 2 radii apart. */
#define ACM_SAMPLE_MIN_DISTANCE_RATIO 1.0

/* Samples of a surface; free with acm__surface_samples_free(). */
typedef struct acm_surface_samples {
    size_t count;
    double *pos;         /* 3 per sample, in the units of the input vertices */
    double *normal;      /* 3 per sample: unit normal of the triangle it lies on */
    double area;         /* surface area per sample: total area / count */
    double radius;       /* Poisson-disk radius aimed at (docs/physics.md) */
    double min_distance; /* smallest distance between two samples, measured */
} acm_surface_samples;

/*
 * Cover triangles t (3 vertex indices each, into v: 3 coordinates per vertex)
 * with max(1, round(density * area)) Poisson-disk samples. Deterministic for a
 * given seed (independent of thread count). Fails with ACM_ERR_LIMIT when the
 * count would exceed max_samples, ACM_ERR_NO_MEMORY, or ACM_ERR_OUT_OF_RANGE
 * for a density that is not positive and finite; the message goes to msg.
 */
acm_status acm__sample_surface(const double *v, const uint32_t *t, size_t ntris, double density,
                               uint64_t seed, uint64_t max_samples, acm_surface_samples *out,
                               char *msg, size_t msg_size);

/*
 * The same samples, every elimination made through the heap alone (no
 * bands): slower, for the tests to check that both agree bit for bit.
 */
acm_status acm__sample_surface_reference(const double *v, const uint32_t *t, size_t ntris,
                                         double density, uint64_t seed, uint64_t max_samples,
                                         acm_surface_samples *out, char *msg, size_t msg_size);

void acm__surface_samples_free(acm_surface_samples *s);

ACM_END_DECLS

#endif /* ACMLBM_SAMPLING_H */
