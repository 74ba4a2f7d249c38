/*
 * libacmlbm -- domain-face rules shared by every backend (docs/physics.md,
 * "Domain faces"). SPDX-License-Identifier: Apache-2.0
 *
 * Pull streaming asks, for population i of cell x, for the post-collision
 * value at x - c_i. When that source lies outside the grid:
 *   - across a PERIODIC face: wrap around;
 *   - across a WALL face (half-way bounce-back, spec 7.2):
 *         f_i(x) = f*_opp(i)(x) + 6 w_i (c_i . u_w)        (rho_w = 1)
 *     If the source lies across several non-periodic faces at once (an edge
 *     or corner), u_w is the mean velocity of those faces;
 *   - across a SLIP face (free-slip, specular reflection half a cell outside
 *     the face): the population that left the same plane the other way,
 *         f_i(x) = f*_i'(x - c_i with that axis's component taken back to x's)
 *     with i' = c_i mirrored in the face (acm_mirror). A pull across a slip face
 *     and a WALL, INLET or OUTLET face at once (an edge or corner) bounces
 *     back as across the others alone;
 *   - across an INLET or OUTLET face: only the face's own layer of
 *     equilibrium cells pulls from there; those cells are overwritten after
 *     the collision, so their pull just bounces back like a resting wall
 *     (keeps their values finite). With moment storage (lib/core/moments.h)
 *     a layer cell holds one equilibrium, which cannot serve both its inner
 *     neighbours and its own bounce-back: a pull across a layer face reads
 *     the cell's own population i instead (acm_layer_pull), so that it sees
 *     its equilibrium in every inward direction, as the mirrored slots of
 *     population storage give it.
 * After the collision, the cells of each INLET/OUTLET face layer are set to
 * the equilibrium f^eq (spec 7.3, 7.4):
 *   INLET:  rho of the adjacent inner cell, the prescribed velocity;
 *   OUTLET: rho = 1, velocity j/rho of the adjacent inner cell.
 * Slots of populations pointing into the domain (and along the face) get
 * f^eq_i: the inner cells pull them. Slots pointing out of the domain are
 * pulled only by the layer cell itself, through the bounce-back above, for
 * its own opposite (inward) population: they get f^eq_opp(i). So after
 * streaming a layer cell holds f^eq in every inward direction and what left
 * the interior in every outward one, and uniform flow stays exactly uniform.
 * Faces are processed in the order x-min, x-max, y-min, y-max, z-min, z-max;
 * a cell on two layers gets the later face's value.
 */
#ifndef ACMLBM_BOUNDARY_H
#define ACMLBM_BOUNDARY_H

#include <stdbool.h> /* bool */

#include "acmlbm/acm_common.h" /* acm_boundary */
#include "lattice.h"           /* ACM_HD, acm_c, acm_weight */

/* Condition of one face. */
typedef struct acm_face_bc {
    acm_boundary type;
    double u[3]; /* wall or inlet velocity */
} acm_face_bc;

/* Non-periodic faces crossed by one pull. */
typedef struct acm_crossing {
    int n;       /* number of WALL, INLET and OUTLET faces crossed */
    int layers;  /* how many of them are INLET or OUTLET faces */
    int slip;    /* the axes (bit a: axis a) crossed through a SLIP face */
    double u[3]; /* sum of their wall velocities (0 for inlet/outlet faces) */
} acm_crossing;

ACM_HD acm_crossing acm_no_crossing(void)
{
    acm_crossing cr = {0, 0, 0, {0.0, 0.0, 0.0}};
    return cr;
}

/* Record the crossing of non-periodic face f. */
ACM_HD void acm_cross_face(const acm_face_bc *f, acm_crossing *cr)
{
    cr->n++;
    cr->layers += f->type == ACM_BOUNDARY_INLET || f->type == ACM_BOUNDARY_OUTLET;
    if (f->type == ACM_BOUNDARY_WALL) {
        cr->u[0] += f->u[0];
        cr->u[1] += f->u[1];
        cr->u[2] += f->u[2];
    }
}

/* Resolve coordinate *coord (one step outside at most) on an axis of size n:
 * wrap it across a periodic face, take it back into the face's plane across a
 * slip face (the axis recorded in cr->slip), or record any other face in *cr
 * (coord is then unchanged). */
ACM_HD void acm_cross_axis(const acm_face_bc *faces, int axis, int32_t n, int32_t *coord,
                           acm_crossing *cr)
{
    if (*coord >= 0 && *coord < n)
        return;
    const acm_face_bc *f = &faces[2 * axis + (*coord < 0 ? 0 : 1)];
    if (f->type == ACM_BOUNDARY_PERIODIC) {
        *coord = *coord < 0 ? *coord + n : *coord - n;
        return;
    }
    if (f->type == ACM_BOUNDARY_SLIP) {
        *coord = *coord < 0 ? 0 : n - 1;
        cr->slip |= 1 << axis;
        return;
    }
    acm_cross_face(f, cr);
}

/* Moment storage: whether a pull with crossing cr reads the cell's own slot
 * i, unbounced (it crosses an INLET or OUTLET face), rather than bouncing back. */
ACM_HD bool acm_layer_pull(const acm_crossing *cr, bool moments)
{
    return moments && cr->layers > 0;
}

/* Moving-wall term 6 w_i (c_i . u_mean) of a bounced population. */
ACM_HD double acm_bounce_term(int i, const acm_crossing *cr)
{
    if (cr->n == 0)
        return 0.0;
    double cu = acm_cx(i) * cr->u[0] + acm_cy(i) * cr->u[1] + acm_cz(i) * cr->u[2];
    return 6.0 * acm_weight(i) * cu / cr->n;
}

/* Which equilibrium population goes into slot i of a layer cell whose face
 * has its inward normal along +axis (inward = 1) or -axis (inward = -1). */
ACM_HD int acm_layer_slot(int i, int axis, int inward)
{
    return acm_c(i, axis) * inward >= 0 ? i : acm_opp(i);
}

/* Whether the cells next to a face of this type collide with the face
 * parameters of the safety net (lib/engine/pipeline.c acm__face_collide_params):
 * walls, inlets and outlets; not a slip wall, a mirror plane of the flow,
 * whose cells are interior cells of the mirrored problem. */
ACM_HD bool acm_face_takes_rule(acm_boundary type)
{
    return type != ACM_BOUNDARY_PERIODIC && type != ACM_BOUNDARY_SLIP;
}

ACM_HD bool acm_face_is_layer(acm_boundary type)
{
    return type == ACM_BOUNDARY_INLET || type == ACM_BOUNDARY_OUTLET;
}

/* The two axes of face f's cells, the lower first (acm_domain_set_face_values). */
ACM_HD void acm_face_axes(int face, int *lo, int *hi)
{
    const int axis = face / 2;
    *lo = axis == 0 ? 1 : 0;
    *hi = axis == 2 ? 1 : 2;
}

/* Values a cell of a layer face holds: an inlet's velocity, an outlet's density. */
ACM_HD int acm_face_value_count(acm_boundary type) { return type == ACM_BOUNDARY_INLET ? 3 : 1; }

/* The index of cell c among face f's cells (grid n): its lower axis fastest. */
ACM_HD uint64_t acm_face_index(int face, const int32_t n[3], const int32_t c[3])
{
    int lo, hi;
    acm_face_axes(face, &lo, &hi);
    return (uint64_t)c[lo] + (uint64_t)n[lo] * (uint64_t)c[hi];
}

/* What the equilibrium of an inlet or outlet layer cell takes (spec 7.3, 7.4;
 * acm_domain_set_face_values): an inlet the inner cell's density rho and its
 * velocity (vals at cell k, or bc->u); an outlet the density (vals at k, or 1)
 * and the inner cell's velocity j / rho. */
ACM_HD void acm_layer_target(const acm_face_bc *bc, const double *vals, uint64_t k, double rho,
                             const double j[3], double *rho_eq, double u[3])
{
    const bool inlet = bc->type == ACM_BOUNDARY_INLET;
    *rho_eq = inlet ? rho : (vals != NULL ? vals[k] : 1.0);
    for (int b = 0; b < 3; ++b)
        u[b] = inlet ? (vals != NULL ? vals[3 * k + (uint64_t)b] : bc->u[b]) : j[b] / rho;
}

/* An absorbing layer in front of an INLET or OUTLET face (acm_domain_set_face_absorber;
 * docs/physics.md, "The absorbing layer"): the `cells` cells next to the face's layer
 * relax their post-collision populations towards the equilibrium of a reference state,
 *     f*_i <- f*_i + sigma (f^eq_i(rho_ref, u_ref) - f*_i),
 * sigma = strength ((cells + 1 - d) / cells)^2 at distance d = 1 .. cells from the
 * layer: strongest next to it, fading into the interior. Applied after the collision,
 * before the layers, face by face in face order. cells = 0: none. */
typedef struct acm_absorber {
    int32_t cells;
    double strength; /* sigma next to the layer, in (0, 1] */
    double rho;      /* reference density */
    double u[3];     /* reference velocity */
} acm_absorber;

/* Distance from face f's layer of a cell at coordinate x on the face's axis of
 * whole size n (the layer at 0 or n - 1), and the absorber's rate there: 0 outside it. */
ACM_HD double acm_absorber_rate(const acm_absorber *a, int face, int32_t x, int32_t n)
{
    const int32_t d = (face & 1) ? n - 1 - x : x;
    if (d < 1 || d > a->cells)
        return 0.0;
    const double s = (double)(a->cells + 1 - d) / (double)a->cells;
    return a->strength * s * s;
}

/* The planes (along face f's axis, whole coordinates) the absorber covers: [*lo, *hi). */
ACM_HD void acm_absorber_span(const acm_absorber *a, int face, int32_t n, int32_t *lo,
                              int32_t *hi)
{
    *lo = (face & 1) ? n - 1 - a->cells : 1;
    *hi = (face & 1) ? n - 1 : 1 + a->cells;
}

/* What a population array holds between steps (lib/cpu/lbm_tmpl.h has the
 * scheme; both backends use these states). */
enum acm_array_state {
    ACM_STATE_POST = 0,    /* two arrays: the post-collision state; the physical one is its pull */
    ACM_STATE_AA_OWN = 1,  /* in place, parity 0: the physical state in the cells' own slots */
    ACM_STATE_AA_SWAP = 2  /* in place, parity 1: f*_i(x) in slot opp(i) of x; the physical
                              state is the pull with the slots swapped */
};

/* The state of the array after a collision step from state s. */
ACM_HD int acm_state_after(int s)
{
    return s == ACM_STATE_POST ? ACM_STATE_POST
                               : (s == ACM_STATE_AA_OWN ? ACM_STATE_AA_SWAP : ACM_STATE_AA_OWN);
}

/* Where f*_i of cell c goes when a step leaves the array (n[0] x n[1] x n[2]
 * cells) in state `after`: the cell t (c itself or its neighbour) and the
 * slot returned. The in-place odd step pushes f*_i to x + c_i; across a
 * wall, inlet or outlet face it bounces in advance, into slot opp(i) of c with
 * the wall term of opp(i) in *term (0 otherwise); across slip faces alone it
 * goes to the mirrored slot of the cell in the face's plane. */
ACM_HD int acm_post_target(const acm_face_bc *faces, const int32_t n[3], int after,
                           const int32_t c[3], int i, int32_t t[3], double *term)
{
    *term = 0.0;
    t[0] = c[0];
    t[1] = c[1];
    t[2] = c[2];
    if (after == ACM_STATE_POST)
        return i;
    if (after == ACM_STATE_AA_SWAP)
        return acm_opp(i);
    int32_t s[3] = {c[0] + acm_cx(i), c[1] + acm_cy(i), c[2] + acm_cz(i)};
    acm_crossing cr = acm_no_crossing();
    for (int a = 0; a < 3; ++a)
        acm_cross_axis(faces, a, n[a], &s[a], &cr);
    if (cr.n > 0) {
        *term = acm_bounce_term(acm_opp(i), &cr);
        return acm_opp(i);
    }
    t[0] = s[0];
    t[1] = s[1];
    t[2] = s[2];
    return acm_mirror(i, cr.slip); /* across slip faces: the mirrored slot of the same plane */
}

#endif /* ACMLBM_BOUNDARY_H */
