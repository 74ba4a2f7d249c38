/*
 * libacmlbm tests -- moment storage (ACM_LAYOUT_STORAGE = ACM_STORAGE_MOMENTS,
 * docs/physics.md "Moment storage"): the projection's algebra, FP16 rounding
 * as the GPU stores it, equality with the population path where the model
 * says they agree, the state through restarts, rewinds and re-layouts, and
 * the refusals. The physics suites run on moment storage as well
 * (test-physics-moments, test-decomp-moments in test/meson.build).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <unistd.h> /* rmdir */

#include "test-common.h"
#include "test-solid-common.h" /* acm_test_layout */

#include "moments.h"

/* ---- the algebra (lib/core/moments.h) -------------------------------------------------- */

/* Pseudo-random moments of a plausible cell: |u| < 0.15, |A| < 2e-3. */
static void random_moments(unsigned *seed, double m[ACM_MOMENTS])
{
    const double scale[ACM_MOMENTS] = {0.05, 0.15, 0.15, 0.15, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3, 2e-3};
    for (int n = 0; n < ACM_MOMENTS; ++n) {
        *seed = *seed * 1664525u + 1013904223u;
        m[n] = scale[n] * ((double)(*seed >> 8) / 8388608.0 - 1.0);
    }
}

/* Both closures (moments.h) give populations whose moments are m: the
 * rebuild and the encoding are a projection. */
START_TEST(encoding_inverts_the_populations)
{
    unsigned seed = 11;
    for (int closure = ACM_CLOSURE_HERMITE; closure <= ACM_CLOSURE_CENTRAL; ++closure) {
        double worst = 0.0;
        for (int trial = 0; trial < 1000; ++trial) {
            double m[ACM_MOMENTS], g[27], back[ACM_MOMENTS];
            random_moments(&seed, m);
            acm_mom_populations_f64(m, closure, g);
            acm_mom_encode_f64(g, back);
            for (int n = 0; n < ACM_MOMENTS; ++n)
                worst = fmax(worst, fabs(back[n] - m[n]));
        }
        ck_assert_msg(worst < 1e-15, "closure %d: encode(populations(m)) - m up to %g", closure,
                      worst);
    }
}
END_TEST

/* The two closures differ only above order 2, by the 1-D factor of the A
 * terms: the central one's has second central moment 0 (P = phi - H2 / 3),
 * so with A = 0 both give the equilibrium and with A != 0 they differ. */
START_TEST(closures_differ_above_order_two)
{
    unsigned seed = 29;
    double same = 0.0, apart = 0.0;
    for (int trial = 0; trial < 200; ++trial) {
        double m[ACM_MOMENTS], h[27], c[27];
        random_moments(&seed, m);
        acm_mom_populations_f64(m, ACM_CLOSURE_HERMITE, h);
        acm_mom_populations_f64(m, ACM_CLOSURE_CENTRAL, c);
        for (int i = 0; i < 27; ++i)
            apart = fmax(apart, fabs(h[i] - c[i]));
        for (int n = 4; n < ACM_MOMENTS; ++n)
            m[n] = 0.0;
        acm_mom_populations_f64(m, ACM_CLOSURE_HERMITE, h);
        acm_mom_populations_f64(m, ACM_CLOSURE_CENTRAL, c);
        for (int i = 0; i < 27; ++i)
            same = fmax(same, fabs(h[i] - c[i]));
        /* the central closure's 1-D factor: mass 1, mean u, second central moment 0 */
        for (int a = 0; a < 3; ++a) {
            double dd, p[3], h1, mass = 0.0, mean = 0.0, var = 0.0;
            for (int v = 0; v < 3; ++v) {
                acm_mom_axis_f64(m[1 + a], v, ACM_CLOSURE_CENTRAL, &dd, &p[v], &h1);
                mass += p[v];
                mean += (v - 1) * p[v];
            }
            for (int v = 0; v < 3; ++v)
                var += (v - 1 - mean) * (v - 1 - mean) * p[v];
            ck_assert_double_eq_tol(mass, 1.0, 1e-15);
            ck_assert_double_eq_tol(mean, m[1 + a], 1e-15);
            ck_assert_double_eq_tol(var, 0.0, 1e-15);
        }
    }
    printf("closures: populations differ by up to %.2e with A, %.2e without\n", apart, same);
    ck_assert_msg(same < 1e-16, "the closures differ at equilibrium by %g", same);
    ck_assert_msg(apart > 1e-4, "the closures do not differ (%g)", apart);
}
END_TEST

/* All 27 populations of moments m in abc order as the GPU's tiled step
 * builds them: the 1-D factors once, then the three slices of c_x. */
static void grouped_f32(const float m[ACM_MOMENTS], int closure, float g[27])
{
    float d[3][3], p[3][3], h[3][3];
    acm_mom_axes_f32(m, closure, d, p, h);
    for (int a = 0; a < 3; ++a)
        acm_mom_populations_a_f32(m, d, p, h, a, g + 9 * a);
}

static void grouped_f64(const double m[ACM_MOMENTS], int closure, double g[27])
{
    double d[3][3], p[3][3], h[3][3];
    acm_mom_axes_f64(m, closure, d, p, h);
    for (int a = 0; a < 3; ++a)
        acm_mom_populations_a_f64(m, d, p, h, a, g + 9 * a);
}

/* FP32 populations rebuilt from moments carry the momentum the moments say,
 * without a bias: the mean error over many cells of a flow at u_x ~ 0.05 is
 * far below its spread. Both forms: the one formula (the CPU, faces) and
 * the grouped one (the GPU's tiled step). With the rounded weights the means
 * were +3.9e-10 and +5.4e-9 a cell, a push forward every step (docs/physics.md,
 * "Moment storage: the weights' round-off"). */
START_TEST(rebuilt_populations_keep_their_momentum)
{
    unsigned seed = 7;
    const int n = 200000;
    double bias[2] = {0, 0}, spread = 0;
    for (int k = 0; k < n; ++k) {
        double md[ACM_MOMENTS];
        random_moments(&seed, md);
        md[0] *= 0.02;
        md[1] = 0.05 + 0.1 * md[1];
        float m[ACM_MOMENTS], g[27], ga[27];
        for (int q = 0; q < ACM_MOMENTS; ++q)
            m[q] = (float)md[q];
        const int closure = k & 1; /* both closures */
        acm_mom_populations_f32(m, closure, g);
        grouped_f32(m, closure, ga);
        double j[2] = {0, 0};
        for (int i = 0; i < 27; ++i) {
            j[0] += acm_cx(i) * (double)g[i];
            j[1] += (i / 9 - 1) * (double)ga[i]; /* abc order: c_x = a - 1 */
        }
        const double want = (1.0 + (double)m[0]) * (double)m[1];
        for (int f = 0; f < 2; ++f)
            bias[f] += j[f] - want;
        spread += fabs(j[0] - want);
    }
    printf("rebuilt FP32 populations: x-momentum error %+.2e (one formula), %+.2e (grouped) a cell "
           "on average, spread %.2e\n", bias[0] / n, bias[1] / n, spread / n);
    for (int f = 0; f < 2; ++f)
        ck_assert_msg(fabs(bias[f] / n) < 5e-11, "form %d: mean error %g", f, bias[f] / n);
}
END_TEST

/* The velocity moment storage keeps is the quotient (j + F) / rho rounded
 * once (rho as the populations rebuilt from it have it, 1 + drho in FP32):
 * as j times a rounded 1 / rho it came out 3e-8 too large in cells lighter
 * than 1, every step. */
START_TEST(stored_velocity_is_one_quotient)
{
    unsigned seed = 11;
    acm_collide_params p;
    memset(&p, 0, sizeof p);
    p.omega = 1.9;
    p.rate_b = p.rate_h = 1.0;
    int off = 0;
    for (int k = 0; k < 100000; ++k) {
        double sd[ACM_MOMENTS];
        random_moments(&seed, sd);
        float s[ACM_MOMENTS], m[ACM_MOMENTS], tau = 0;
        for (int q = 0; q < ACM_MOMENTS; ++q)
            s[q] = (float)(q == 0 ? 1e-3 * sd[q] : sd[q]);
        const float F[3] = {k % 2 ? 1e-5f : 0.0f, 0.0f, 0.0f};
        acm_cell_diag_f32 diag;
        acm_mom_collide_f32(&p, ACM_COLLISION_CM_MRT, s, F, &tau, m, &diag);
        for (int a = 0; a < 3; ++a)
            off += m[1 + a] != (float)((double)(s[1 + a] + F[a]) / (double)(1.0f + s[0]));
    }
    ck_assert_msg(off == 0, "%d of 300000 velocities are not the rounded quotient", off);
}
END_TEST

/* A sheared flow in a periodic FP32 box keeps its momentum on moment storage
 * (16^3, u_x = 0.05 + 0.02 sin y cos z, nu = 1e-6, 2000 steps, the default
 * model): before the two fixes above it gained 4.6e-5 of it. */
START_TEST(sheared_flow_keeps_its_momentum_in_fp32)
{
    enum { N = 16 };
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    acm_domain_options o = acm_test_options(N, N, N, 1e-6, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    const size_t cells = (size_t)N * N * N;
    double *u = acm_test_alloc(3 * cells * sizeof(double));
    for (size_t c = 0; c < cells; ++c) {
        const double y = 2 * M_PI * (double)(c / N % N) / N, z = 2 * M_PI * (double)(c / N / N) / N;
        u[3 * c] = 0.05 + 0.02 * sin(y) * cos(z);
        u[3 * c + 1] = 0.006 * cos(z);
        u[3 * c + 2] = 0;
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, cells));
    const double p0 = acm_test_stats(d).momentum[0];
    ACM_CK_OK(d, acm_step(d, 2000));
    const double drift = acm_test_stats(d).momentum[0] / p0 - 1;
    printf("sheared flow on FP32 moment storage, 2000 steps: momentum drift %+.2e\n", drift);
    ck_assert_msg(fabs(drift) < 1e-5, "momentum drift %g", drift);
    free(u);
    acm_domain_destroy(d);
}
END_TEST

/* The GPU's tiled step builds a cell's populations by axes and sums them a
 * stencil layer at a time: the same values as the one formula
 * (acm_mom_population) and the same sums as acm_mom_add, to rounding. */
START_TEST(grouped_forms_equal_the_one_formula)
{
    unsigned seed = 23;
    double worst_g = 0.0, worst_s = 0.0;
    for (int trial = 0; trial < 1000; ++trial) {
        double m[ACM_MOMENTS], g[27], ref[ACM_MOMENTS] = {0}, got[ACM_MOMENTS] = {0};
        const int closure = trial & 1; /* both closures */
        random_moments(&seed, m);
        grouped_f64(m, closure, g);
        for (int i = 0; i < 27; ++i) {
            worst_g = fmax(worst_g, fabs(g[acm_abc(i)] - acm_mom_population_f64(m, closure, i)));
            acm_mom_add_f64(ref, i, g[acm_abc(i)]);
        }
        for (int c = 0; c < 3; ++c) {
            double v[9];
            for (int ab = 0; ab < 9; ++ab)
                v[ab] = g[3 * ab + c];
            acm_mom_add_layer_f64(got, c - 1, v);
        }
        for (int n = 0; n < ACM_MOMENTS; ++n)
            worst_s = fmax(worst_s, fabs(got[n] - ref[n]));
    }
    ck_assert_msg(worst_g < 1e-16, "populations by axes differ by %g", worst_g);
    ck_assert_msg(worst_s < 1e-16, "layer sums differ by %g", worst_s);
}
END_TEST

/* Without a force, the collision moment storage runs leaves populations its
 * moments reproduce in the model's closure: the projection changes nothing
 * but round-off. The ACM models (Hermite high orders at rate 1,
 * lib/engine/pipeline.c) in the Hermite closure; CM-MRT with its monomial
 * high orders at 1 (CM(1)) in the central closure, and not in the Hermite
 * one (its fourth orders keep A^2 terms): hence a closure per model. */
START_TEST(rate_one_collision_stays_on_the_moments)
{
    unsigned seed = 3;
    acm_collide_params p;
    memset(&p, 0, sizeof p);
    p.model = ACM_COLLISION_ACM_LI2018;
    p.safety_net = 1;
    p.omega = 1.7;
    p.rate_min = p.rate_max = 1.0;
    p.hermite_high_orders = 1;
    p.floor_ratio = ACM_SAFETY_FLOOR;
    double on = 0.0, cm = 0.0, off = 0.0;
    for (int trial = 0; trial < 200; ++trial) {
        double m[ACM_MOMENTS], g[27], o[27], h[27], F[3] = {0, 0, 0}, tau = 0;
        random_moments(&seed, m);
        acm_mom_populations_f64(m, ACM_CLOSURE_HERMITE, g);
        for (int i = 0; i < 27; ++i) /* high orders out of equilibrium, as streaming leaves them */
            g[i] += 1e-4 * acm_weight(i) * sin(3.0 * i + trial);
        acm_cell_diag_f64 d;
        acm_collide_f64(&p, p.model, g, F, 1.0, &tau, o, &d);
        memcpy(h, o, sizeof h);
        acm_mom_project_f64(h, 64, acm_mom_closure(p.model));
        for (int i = 0; i < 27; ++i)
            on = fmax(on, fabs(h[i] - o[i]));
        acm_collide_params q = p;
        q.model = ACM_COLLISION_CM_MRT;
        q.rate_b = q.rate_h = 1.0;
        q.hermite_high_orders = 0;
        acm_collide_f64(&q, q.model, g, F, 1.0, &tau, o, &d);
        memcpy(h, o, sizeof h);
        acm_mom_project_f64(h, 64, acm_mom_closure(q.model));
        for (int i = 0; i < 27; ++i)
            cm = fmax(cm, fabs(h[i] - o[i]));
        memcpy(h, o, sizeof h);
        acm_mom_project_f64(h, 64, ACM_CLOSURE_HERMITE);
        for (int i = 0; i < 27; ++i)
            off = fmax(off, fabs(h[i] - o[i]));
    }
    printf("projection of a rate-1 collision: ACM, Hermite closure %.2e; CM(1), central closure "
           "%.2e, Hermite closure %.2e\n", on, cm, off);
    ck_assert_msg(on < 1e-16, "Hermite rate-1 collision moved by the projection: %g", on);
    ck_assert_msg(cm < 1e-16, "CM(1) collision moved by the central closure: %g", cm);
    ck_assert_msg(off > 1e-9, "CM(1) unexpectedly on the Hermite closure: %g", off);
}
END_TEST

/* The collision of moment storage (acm_mom_collide, from 10 sums) keeps
 * what the full 27-population collision of every model leaves at orders 0-2:
 * encode(acm_collide(f)) equals acm_mom_collide(sums(f)) with any force. */
START_TEST(moment_collision_equals_the_full_one)
{
    const acm_collision models[] = {ACM_COLLISION_BGK, ACM_COLLISION_RM_MRT, ACM_COLLISION_CM_MRT,
                                    ACM_COLLISION_ACM_LI2018};
    unsigned seed = 19;
    double worst[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; ++k) {
        acm_collide_params p;
        memset(&p, 0, sizeof p);
        p.model = models[k];
        p.omega = 1.6;
        p.rate_b = 1.2;
        p.rate_h = 1.4;
        p.safety_net = models[k] == ACM_COLLISION_ACM_LI2018;
        p.hermite_high_orders = p.safety_net;
        p.rate_min = p.rate_max = 1.0; /* what lib/engine/pipeline.c sets on moment storage */
        p.floor_ratio = ACM_SAFETY_FLOOR;
        p.li2018_nu0[0] = p.li2018_nu0[1] = p.li2018_nu0[2] = p.li2018_nu0[3] = 0.01;
        for (int trial = 0; trial < 300; ++trial) {
            double m[ACM_MOMENTS], g[27], o[27], full[ACM_MOMENTS], sums[ACM_MOMENTS], mine[ACM_MOMENTS];
            double F[3], tau = 0.0;
            random_moments(&seed, m);
            acm_mom_populations_f64(m, acm_mom_closure(p.model), g);
            for (int i = 0; i < 27; ++i)
                g[i] += 2e-4 * acm_weight(i) * sin(5.0 * i + trial);
            for (int a = 0; a < 3; ++a)
                F[a] = 1e-3 * sin(trial + 2.0 * a);
            acm_cell_diag_f64 d, dm;
            acm_collide_f64(&p, p.model, g, F, 1.0, &tau, o, &d);
            acm_mom_encode_f64(o, full);
            acm_mom_sums_f64(g, sums);
            acm_mom_collide_f64(&p, p.model, sums, F, &tau, mine, &dm);
            for (int n = 0; n < ACM_MOMENTS; ++n)
                worst[k] = fmax(worst[k], fabs(full[n] - mine[n]));
            for (int a = 0; a < 3; ++a)
                ck_assert_double_eq_tol(d.u[a], dm.u[a], 1e-15);
        }
    }
    printf("moment-space collision vs the full one: BGK %.1e RM %.1e CM %.1e ACM %.1e\n",
           worst[0], worst[1], worst[2], worst[3]);
    for (int k = 0; k < 4; ++k)
        ck_assert_msg(worst[k] < 1e-15, "model %d: %g", models[k], worst[k]);
}
END_TEST

/* The moment safety net scales A just enough: every population at or above
 * its floor after, and the smallest one on it. */
START_TEST(moment_limiter_reaches_the_floor)
{
    acm_collide_params p;
    memset(&p, 0, sizeof p);
    p.floor_ratio = ACM_SAFETY_FLOOR;
    double m[ACM_MOMENTS] = {0.01, 0.08, -0.05, 0.02, 0.09, -0.06, 0.02, 0.07, -0.04, 0.03};
    ck_assert_int_eq(acm_mom_limit_f64(&p, m), 1);
    double closest = 1.0;
    for (int i = 0; i < 27; ++i) {
        double e, d;
        acm_mom_parts_f64(m, ACM_CLOSURE_HERMITE, i, &e, &d);
        const double feq = e + acm_weight(i), f = feq + d;
        ck_assert_msg(f >= ACM_SAFETY_FLOOR * feq - 1e-15, "population %d: %g below %g", i, f,
                      ACM_SAFETY_FLOOR * feq);
        closest = fmin(closest, (f - ACM_SAFETY_FLOOR * feq) / feq);
    }
    ck_assert_msg(closest < 1e-12, "no population on its floor (%g)", closest);
    /* the bound that skips the 27 populations never skips a cell that needs them */
    unsigned seed = 23;
    int skipped = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        double r[ACM_MOMENTS];
        random_moments(&seed, r);
        for (int n = 4; n < ACM_MOMENTS; ++n)
            r[n] *= 1.0 + (trial % 40); /* A up to 0.08 */
        int needs = 0;
        for (int i = 0; i < 27; ++i) {
            double e, d;
            acm_mom_parts_f64(r, ACM_CLOSURE_HERMITE, i, &e, &d);
            needs |= (1.0 - ACM_SAFETY_FLOOR) * (e + acm_weight(i)) + d < 0; /* f < floor */
        }
        const int sure = acm_mom_surely_above_f64(r, 0.7);
        skipped += sure && trial % 40 == 0; /* |A| < 2e-3: a flow's usual cells */
        ck_assert_msg(!(sure && needs), "trial %d: the bound skipped a cell below its floor", trial);
    }
    printf("limiter bound: %d of 500 cells with |A| < 2e-3 skip the populations\n", skipped);
    ck_assert_int_gt(skipped, 450);
    double mild[ACM_MOMENTS] = {0.0, 0.01, 0.0, 0.0, 1e-4, 0, 0, 0, 0, 0};
    ck_assert_int_eq(acm_mom_limit_f64(&p, mild), 0);
    ck_assert(mild[4] == 1e-4);
}
END_TEST

/* acm_half_round against IEEE binary16 values worked out by hand: ties to
 * even, the subnormal spacing 2^-24, the largest finite 65504, overflow. */
START_TEST(half_rounding_is_ieee_binary16)
{
    const struct {
        float x, want;
    } t[] = {
        {1.0f, 1.0f},           {2049.0f, 2048.0f},          {2051.0f, 2052.0f},
        {-2049.0f, -2048.0f},   {65504.0f, 65504.0f},        {65519.0f, 65504.0f},
        {0.1f, 0.0999755859375f}, {3.0e-8f, 5.9604644775390625e-8f},
        {2.0e-8f, 0.0f},        {1.0e-5f, 1.0013580322265625e-05f},
        {6.103515625e-05f, 6.103515625e-05f}, /* the smallest normal, 2^-14 */
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; ++k)
        ck_assert_msg(acm_half_round(t[k].x) == t[k].want, "%.9g rounds to %.9g, expected %.9g",
                      (double)t[k].x, (double)acm_half_round(t[k].x), (double)t[k].want);
    ck_assert(isinf(acm_half_round(65520.0f)) && acm_half_round(65520.0f) > 0);
    ck_assert(isinf(acm_half_round(-1e6f)) && acm_half_round(-1e6f) < 0);
    ck_assert(isnan(acm_half_round(NAN)));
    ck_assert(signbit(acm_half_round(-1e-9f)));
}
END_TEST

/* The 16-bit velocity format (moments.h, acm_u16_encode): every code but the
 * NaN one decodes to a value that encodes back to it whatever the draw (the
 * largest draw, 1 - 2^-24, once carried 1 in 2^11 of them to the next code:
 * a state saved and loaded, or moved between slabs, changed), values grow with the
 * codes, the spacing is 2^-19 below 2^-7 and 2^(e - 12) in [2^e, 2^(e+1)),
 * and the edges: zero without a sign, NaN kept, |u| >= 1 and infinities
 * held at 1 - 2^-13. */
START_TEST(velocity_codes_round_trip)
{
    float last = -1.0f;
    for (unsigned c = 0; c < 0x8000u; ++c) {
        const float v = acm_u16_decode((uint16_t)c), w = acm_u16_decode((uint16_t)(c | 0x8000u));
        const float draw_max = 0x1.fffffep-1f; /* acm_mom16_dither's largest */
        ck_assert_msg(acm_u16_encode(v, 0.0f) == c && acm_u16_encode(v, 0.5f) == c &&
                          acm_u16_encode(v, draw_max) == c,
                      "code %#x: %.9g encodes to %#x, %#x with the largest draw", c, (double)v,
                      acm_u16_encode(v, 0.0f), acm_u16_encode(v, draw_max));
        if (c > 0) {
            ck_assert_msg(w == -v && acm_u16_encode(w, 0.0f) == (c | 0x8000u), "code %#x", c);
            const int e = (int)((c - 1) >> 12); /* the exponent field of the code below */
            const float step = v - last, want = e <= 1 ? 0x1p-19f : ldexpf(1.0f, e - 20);
            ck_assert_msg(step == want, "code %#x: step %g, expected %g", c, (double)step,
                          (double)want);
        }
        last = v;
    }
    ck_assert(acm_u16_decode(0x7fffu) == 1.0f - 0x1p-13f);
    ck_assert(acm_u16_encode(-0.0f, 0.5f) == 0 && acm_u16_encode(-1e-9f, 0.5f) == 0);
    ck_assert(acm_u16_encode(NAN, 0.5f) == 0x8000u && isnan(acm_u16_decode(0x8000u)));
    ck_assert(acm_u16_encode(INFINITY, 0.5f) == 0x7fffu && acm_u16_encode(-2.0f, 0.0f) == 0xffffu);
    ck_assert(acm_u16_encode(0.99999f, 0.99f) == 0x7fffu);
    /* to the nearest with r = 1/2: 0.03 lies in [2^-6, 2^-5), spacing 2^-18 */
    ck_assert(fabsf(acm_u16_decode(acm_u16_encode(0.03f, 0.5f)) - 0.03f) <= 0x1p-19f);
}
END_TEST

/* The draws make the rounding unbiased: over cells of different densities a
 * velocity keeps its mean to far below a spacing, and each cell's value is
 * one of the two codes around it. Rounded to the nearest the mean would be
 * off by up to half a spacing. */
START_TEST(velocity_rounding_is_unbiased)
{
    const float us[] = {0.0300001f, -0.07123f, 0.0031f, 0.2f + 0x1p-16f};
    for (size_t k = 0; k < sizeof us / sizeof us[0]; ++k) {
        const float u = us[k];
        const float lo = acm_u16_decode(acm_u16_encode(u, 0.0f));
        const float hi = acm_u16_decode(acm_u16_encode(u, 0.999999f));
        const double spacing = fabs((double)hi - (double)lo);
        double sum = 0;
        const int n = 200000;
        for (int i = 0; i < n; ++i) {
            const float rho1 = 1e-3f * (float)i / (float)n - 5e-4f;
            const float v = acm_u16_decode(acm_u16_encode(u, acm_mom16_dither(acm_mom16_key(rho1, 1e-4f), u, 1)));
            ck_assert(v == lo || v == hi);
            sum += v;
        }
        const double bias = sum / n - (double)u;
        printf("velocity %.7g: spacing %.3g, mean of the rounded values off by %.2g spacings\n",
               (double)u, spacing, bias / spacing);
        ck_assert_msg(spacing > 0 && fabs(bias) < 0.01 * spacing, "u %g: bias %g of %g",
                      (double)u, bias, spacing);
    }
}
END_TEST

/* ---- domains --------------------------------------------------------------------------- */

static acm_domain *moments_domain(int n, double nu, acm_collision model, acm_precision prec,
                                  acm_storage storage, double max_rate)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, storage);
    acm_domain_options o = acm_test_options(n, n - 2, n - 4, nu, model, prec);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    if (max_rate > 0.0) {
        acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
        ACM_CK_OK(d, acm_domain_get_collision(d, &c));
        c.max_high_order_rate = max_rate;
        ACM_CK_OK(d, acm_domain_set_collision(d, &c));
    }
    return d;
}

/* A lid-driven box: walls, one moving. */
static void lid_walls(acm_domain *d)
{
    const double zero[3] = {0, 0, 0}, lid[3] = {0.05, 0, 0.02};
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        ACM_CK_OK(d, acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL,
                                         f == ACM_FACE_Y_MAX ? lid : zero));
}

static double *field(acm_domain *d, acm_field f, size_t n)
{
    double *v = acm_test_alloc(n * sizeof(double));
    ACM_CK_OK(d, acm_domain_get_field(d, f, ACM_DTYPE_FLOAT64, v, n * sizeof(double)));
    return v;
}

static double max_diff(const double *a, const double *b, size_t n)
{
    double m = 0.0;
    for (size_t k = 0; k < n; ++k)
        m = fmax(m, fabs(a[k] - b[k]));
    return m;
}

/* With every high-order rate at 1 in the Hermite basis (the ACM safety net
 * with max_high_order_rate 1) and no force, population storage keeps exactly
 * what moment storage keeps: the two agree to round-off, walls and moving
 * lid included. */
START_TEST(moments_equal_populations_at_rate_one)
{
    const int n = 12;
    acm_domain *a = moments_domain(n, 0.02, ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64,
                                   ACM_STORAGE_POPULATIONS, 1.0);
    acm_domain *b = moments_domain(n, 0.02, ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64,
                                   ACM_STORAGE_MOMENTS, 0.0);
    lid_walls(a);
    lid_walls(b);
    ACM_CK_OK(a, acm_step(a, 60));
    ACM_CK_OK(b, acm_step(b, 60));
    const size_t cells = (size_t)n * (n - 2) * (n - 4);
    double *ua = field(a, ACM_FIELD_VELOCITY, 3 * cells), *ub = field(b, ACM_FIELD_VELOCITY, 3 * cells);
    double *pa = field(a, ACM_FIELD_POPULATIONS, 27 * cells);
    double *pb = field(b, ACM_FIELD_POPULATIONS, 27 * cells);
    const double du = max_diff(ua, ub, 3 * cells), dp = max_diff(pa, pb, 27 * cells);
    double umax = 0.0;
    for (size_t k = 0; k < 3 * cells; ++k)
        umax = fmax(umax, fabs(ua[k]));
    printf("lid box, 60 steps: moments vs rate-1 populations: |du| %.2e, |df| %.2e (max |u| %.3f)\n",
           du, dp, umax);
    ck_assert_msg(umax > 0.01, "the lid set nothing in motion");
    ck_assert_msg(du < 1e-13 && dp < 1e-13, "|du| %g, |df| %g", du, dp);
    free(ua);
    free(ub);
    free(pa);
    free(pb);
    acm_domain_destroy(a);
    acm_domain_destroy(b);
}
END_TEST

/* CM-MRT on moment storage (the central closure) steps as population
 * storage of CM(1), CM-MRT with every high-order rate at 1: the same to
 * round-off in FP64, walls and moving lid included. The default ACM on
 * moment storage (the Hermite closure) does not. */
START_TEST(cm_moments_equal_cm1_populations)
{
    const int n = 12;
    const size_t cells = (size_t)n * (n - 2) * (n - 4);
    acm_domain *a = moments_domain(n, 0.02, ACM_COLLISION_CM_MRT, ACM_PRECISION_FP64,
                                   ACM_STORAGE_POPULATIONS, 0.0);
    acm_test_set_cm(a, 1.0);
    double worst[2] = {0, 0}, umax = 0.0;
    for (int k = 0; k < 2; ++k) { /* CM-MRT, then the default ACM, on moment storage */
        acm_domain *b = moments_domain(n, 0.02, k == 0 ? ACM_COLLISION_CM_MRT : ACM_COLLISION_DEFAULT,
                                       ACM_PRECISION_FP64, ACM_STORAGE_MOMENTS, 0.0);
        if (k == 0)
            acm_test_set_cm(b, 1.0);
        lid_walls(b);
        ACM_CK_OK(b, acm_step(b, 60));
        if (k == 0) {
            lid_walls(a);
            ACM_CK_OK(a, acm_step(a, 60));
        }
        double *pa = field(a, ACM_FIELD_POPULATIONS, 27 * cells);
        double *pb = field(b, ACM_FIELD_POPULATIONS, 27 * cells);
        double *ua = field(a, ACM_FIELD_VELOCITY, 3 * cells);
        worst[k] = max_diff(pa, pb, 27 * cells);
        for (size_t c = 0; c < 3 * cells; ++c)
            umax = fmax(umax, fabs(ua[c]));
        free(pa);
        free(pb);
        free(ua);
        acm_domain_destroy(b);
    }
    printf("lid box, 60 steps, |df| from population storage of CM(1): CM-MRT on moments %.2e, "
           "the default ACM on moments %.2e (max |u| %.3f)\n", worst[0], worst[1], umax);
    ck_assert_msg(umax > 0.01, "the lid set nothing in motion");
    ck_assert_msg(worst[0] < 1e-13, "CM-MRT on moments: |df| %g", worst[0]);
    ck_assert_msg(worst[1] > 1e-8, "the ACM on moments equals CM(1): |df| %g", worst[1]);
    acm_domain_destroy(a);
}
END_TEST

/* A smooth initial field reads back up to what 10 moments per cell hold of
 * it: the state is the post-collision one, so fields initialised as the
 * physical state pass through the projection (second order in the grid
 * spacing: a quarter of the error at twice the resolution). */
static double read_back_error(int n)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    acm_domain_options o = acm_test_options(n, n, n, 0.02, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP64);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    const size_t cells = (size_t)n * n * n;
    double *u = acm_test_alloc(3 * cells * sizeof(double));
    const double k = 2 * M_PI / n, U = 0.05;
    for (size_t c = 0; c < cells; ++c) {
        const int x = (int)(c % n), y = (int)(c / n % n), z = (int)(c / ((size_t)n * n));
        u[3 * c] = U * sin(k * y) * cos(k * z);
        u[3 * c + 1] = U * sin(k * z) * cos(k * x);
        u[3 * c + 2] = U * sin(k * x) * cos(k * y);
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, cells));
    double *v = field(d, ACM_FIELD_VELOCITY, 3 * cells);
    const double e = max_diff(u, v, 3 * cells) / U;
    free(u);
    free(v);
    acm_domain_destroy(d);
    return e;
}

START_TEST(smooth_fields_read_back)
{
    const double e8 = read_back_error(8), e16 = read_back_error(16);
    printf("init_fields read back on moment storage: %.2e (8^3), %.2e (16^3) of U\n", e8, e16);
    ck_assert_msg(e16 < 0.02, "16^3: %g of U", e16);
    ck_assert_msg(e16 < 0.35 * e8, "not second order: %g then %g", e8, e16);
}
END_TEST

/* Save at step 20, run 15 more; the checkpoint loaded runs the same 15 to
 * the same bits, in FP64, FP32 and the CPU's image of 16-bit storage; a
 * divergence rewind restores the moments bitwise as well. */
START_TEST(restart_is_bitwise)
{
    const acm_precision precs[3] = {ACM_PRECISION_FP64, ACM_PRECISION_FP32, ACM_PRECISION_FP16};
    const acm_precision prec = precs[_i];
    char dir[64] = "/tmp/acm-moments-XXXXXX", path[128];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/run.ckpt", dir);
    acm_domain *a = moments_domain(12, 0.02, ACM_COLLISION_ACM_LI2020, prec, ACM_STORAGE_MOMENTS, 0);
    lid_walls(a);
    ACM_CK_OK(a, acm_step(a, 20));
    ACM_CK_OK(a, acm_domain_save(a, path));
    ACM_CK_OK(a, acm_step(a, 15));
    acm_domain *b = NULL;
    ck_assert_int_eq(acm_domain_load(&b, path, NULL), ACM_OK);
    acm_layout *l = acm_test_layout(ACM_LAYOUT_CSOA_GROUP, 0);
    ACM_CK_OK(b, acm_domain_get_layout(b, l));
    int64_t storage = 0;
    ck_assert_int_eq(acm_layout_get(l, ACM_LAYOUT_STORAGE, &storage), ACM_OK);
    ck_assert_int_eq(storage, ACM_STORAGE_MOMENTS);
    acm_layout_destroy(l);
    ACM_CK_OK(b, acm_step(b, 15));
    const size_t cells = 12 * 10 * 8;
    double *pa = field(a, ACM_FIELD_POPULATIONS, 27 * cells);
    double *pb = field(b, ACM_FIELD_POPULATIONS, 27 * cells);
    ck_assert_msg(memcmp(pa, pb, 27 * cells * sizeof(double)) == 0,
                  "precision %d: restarted run differs by %g", prec, max_diff(pa, pb, 27 * cells));
    free(pa);
    free(pb);
    acm_domain_destroy(a);
    acm_domain_destroy(b);
    remove(path);
    rmdir(dir);
}
END_TEST

/* Population storage -> moment storage -> population storage: the state
 * carries over (the first move keeps what the moments hold: the velocity
 * changes by the projection only; the way back is exact). */
START_TEST(relayout_between_storages)
{
    const int n = 12;
    acm_domain *d = moments_domain(n, 0.02, ACM_COLLISION_ACM_LI2018, ACM_PRECISION_FP64,
                                   ACM_STORAGE_POPULATIONS, 0);
    lid_walls(d);
    ACM_CK_OK(d, acm_step(d, 40));
    const size_t cells = (size_t)n * (n - 2) * (n - 4);
    double *u0 = field(d, ACM_FIELD_VELOCITY, 3 * cells);
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    ACM_CK_OK(d, acm_domain_set_layout(d, l));
    double *u1 = field(d, ACM_FIELD_VELOCITY, 3 * cells);
    double *p1 = field(d, ACM_FIELD_POPULATIONS, 27 * cells);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_POPULATIONS), ACM_OK);
    ACM_CK_OK(d, acm_domain_set_layout(d, l));
    double *p2 = field(d, ACM_FIELD_POPULATIONS, 27 * cells);
    const double du = max_diff(u0, u1, 3 * cells), dp = max_diff(p1, p2, 27 * cells);
    printf("re-layout populations -> moments: |du| %.2e; moments -> populations: |df| %.2e\n", du, dp);
    ck_assert_msg(du < 2e-3, "moving to moment storage changed u by %g", du);
    ck_assert_msg(dp < 1e-16, "moving back changed the populations by %g", dp);
    ACM_CK_OK(d, acm_step(d, 5));
    acm_layout_destroy(l);
    free(u0);
    free(u1);
    free(p1);
    free(p2);
    acm_domain_destroy(d);
}
END_TEST

/* 16-bit moments on the CPU (its image of the GPU's storage): the
 * Taylor-Green vortex decays at the FP32 rate within what 16 bits resolve,
 * also where a step changes the velocity by less than half its spacing. */
static double tgv_rate(acm_precision prec, double nu, double U, int steps)
{
    const int n = 32;
    const double k = 2 * M_PI / n;
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    acm_domain_options o = acm_test_options(n, n, 1, nu, ACM_COLLISION_DEFAULT, prec);
    o.layout = l;
    acm_domain *d = acm_test_domain(&o);
    acm_layout_destroy(l);
    const size_t cells = (size_t)n * n;
    double *u = acm_test_alloc(3 * cells * sizeof(double));
    for (size_t c = 0; c < cells; ++c) {
        const int x = (int)(c % n), y = (int)(c / n);
        u[3 * c] = -U * cos(k * x) * sin(k * y);
        u[3 * c + 1] = U * sin(k * x) * cos(k * y);
        u[3 * c + 2] = 0;
    }
    ACM_CK_OK(d, acm_domain_init_fields(d, ACM_DTYPE_FLOAT64, NULL, u, cells));
    double amp[2];
    for (int pass = 0; pass < 2; ++pass) {
        ACM_CK_OK(d, acm_step(d, steps));
        double *v = field(d, ACM_FIELD_VELOCITY, 3 * cells), s = 0;
        for (size_t c = 0; c < cells; ++c)
            s += v[3 * c + 1] * sin(k * (double)(c % n)) * cos(k * (double)(c / n));
        amp[pass] = s;
        free(v);
    }
    free(u);
    acm_domain_destroy(d);
    return log(amp[0] / amp[1]) / steps / (2 * nu * k * k) - 1;
}

START_TEST(fp16_moments_decay_as_fp32)
{
    const double e32 = tgv_rate(ACM_PRECISION_FP32, 0.01, 0.03, 400),
                 e16 = tgv_rate(ACM_PRECISION_FP16, 0.01, 0.03, 400);
    printf("TGV 32^2 nu=0.01 on moment storage: rate error FP32 %+.3e, FP16 %+.3e\n", e32, e16);
    ck_assert_msg(fabs(e32) < 1e-3, "FP32: %g", e32);
    ck_assert_msg(fabs(e16 - e32) < 5e-3, "FP16 %g against FP32 %g", e16, e32);
    /* slow and barely viscous: a step changes u by 2.4e-7 (a third of its
     * spacing): rounded to the nearest it stalled (-8.3e-2) */
    const double s32 = tgv_rate(ACM_PRECISION_FP32, 0.001, 0.01, 2000),
                 s16 = tgv_rate(ACM_PRECISION_FP16, 0.001, 0.01, 2000);
    printf("TGV 32^2 nu=0.001 U=0.01: rate error FP32 %+.3e, FP16 %+.3e\n", s32, s16);
    ck_assert_msg(fabs(s16 - s32) < 5e-3, "FP16 %g against FP32 %g", s16, s32);
}
END_TEST

/* What moment storage refuses, each with its message. */
START_TEST(moment_storage_refusals)
{
    acm_layout *l = acm_test_layout(ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE), ACM_OK);
    acm_domain_options o = acm_test_options(8, 8, 8, 0.02, ACM_COLLISION_DEFAULT, ACM_PRECISION_FP32);
    char err[256] = "";
    o.layout = l;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *d = NULL;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_INVALID_ARG);
    ck_assert_ptr_null(d);
    ck_assert_ptr_nonnull(strstr(err, "in_place"));
    /* population storage in FP16 stays a CUDA feature */
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, 0), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_POPULATIONS), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_PRECISION, ACM_PRECISION_FP16), ACM_OK);
    o.backend = ACM_BACKEND_CPU;
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_ERR_NOT_BUILT);
    ck_assert_ptr_nonnull(strstr(err, "FP16"));
    /* an existing domain refuses a re-layout to in place on moment storage */
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_PRECISION, 0), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STORAGE, ACM_STORAGE_MOMENTS), ACM_OK);
    ck_assert_int_eq(acm_domain_create(&d, &o), ACM_OK);
    ck_assert_int_eq(acm_layout_set(l, ACM_LAYOUT_STREAMING, ACM_STREAMING_IN_PLACE), ACM_OK);
    ck_assert_int_eq(acm_domain_set_layout(d, l), ACM_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(acm_domain_last_error(d), "in_place"));
    ACM_CK_OK(d, acm_step(d, 2));
    acm_domain_destroy(d);
    acm_layout_destroy(l);
}
END_TEST

TEST_SUITE(moments_suite)
{
    Suite *s = suite_create("moments");
    TCase *tc = acm_tcase("algebra", 30);
    tcase_add_test(tc, encoding_inverts_the_populations);
    tcase_add_test(tc, closures_differ_above_order_two);
    tcase_add_test(tc, grouped_forms_equal_the_one_formula);
    tcase_add_test(tc, rate_one_collision_stays_on_the_moments);
    tcase_add_test(tc, moment_collision_equals_the_full_one);
    tcase_add_test(tc, moment_limiter_reaches_the_floor);
    tcase_add_test(tc, half_rounding_is_ieee_binary16);
    tcase_add_test(tc, velocity_codes_round_trip);
    tcase_add_test(tc, velocity_rounding_is_unbiased);
    tcase_add_test(tc, rebuilt_populations_keep_their_momentum);
    tcase_add_test(tc, stored_velocity_is_one_quotient);
    suite_add_tcase(s, tc);
    tc = acm_tcase("domain", 300);
    tcase_add_test(tc, moments_equal_populations_at_rate_one);
    tcase_add_test(tc, cm_moments_equal_cm1_populations);
    tcase_add_test(tc, smooth_fields_read_back);
    tcase_add_loop_test(tc, restart_is_bitwise, 0, 3);
    tcase_add_test(tc, relayout_between_storages);
    tcase_add_test(tc, fp16_moments_decay_as_fp32);
    tcase_add_test(tc, sheared_flow_keeps_its_momentum_in_fp32);
    tcase_add_test(tc, moment_storage_refusals);
    suite_add_tcase(s, tc);
    return s;
}
