/*
 * libacmlbm tests -- immersed solids against the literature: sphere drag at
 * Re = 25 and 100 (Johnson & Patel 1999), Galilean invariance of a towed
 * sphere, the Stokes torque of a spinning sphere, the terminal velocity of a
 * heavy sphere (Stokes drag with Hasimoto's periodic-array correction); the
 * cubic lid-driven cavity at Re = 1000 (Albensoeder & Kuhlmann 2005); the
 * scenes at nu = 1e-6, U = 0.1 of docs/physics.md ("Very low viscosity").
 * On the GPU (or with ACM_TEST_FULL=1) at the resolution the documentation
 * quotes; on the CPU of CI at a smaller one, with the tolerance it allows.
 * (About 3 minutes on 2 cores: CI runs it in the optimised build only.)
 * SPDX-License-Identifier: Apache-2.0
 */
#include "test-common.h"
#include "test-solid-common.h"

#include "cavity_reference.h"
#include "lowvisc_scenes.h"

/* Johnson & Patel (1999), Fig. 5, as digitised in the project's bench data. */
#define JP_CD_RE25 2.3656
#define JP_CD_RE100 1.1022

static acm_domain *box(int nx, int ny, int nz, double nu, const double u0[3])
{
    acm_domain_options o = acm_test_options(nx, ny, nz, nu, ACM_COLLISION_DEFAULT,
                                            ACM_PRECISION_FP32);
    if (u0 != NULL)
        memcpy(o.initial_velocity, u0, sizeof o.initial_velocity);
    return acm_test_domain(&o);
}

/* ---- drag of a fixed sphere in uniform flow --------------------------------------------- */

/* C_D of a sphere of diameter D at Reynolds number Re: inlet and outlet along x
 * (length `len` D, the sphere `up` D from the inlet), periodic sides of `side`
 * D. Inlet and outlet reflect sound, so the box rings with the period 4 nx / c_s
 * and the force with it: C_D is the mean over one such period, sampled every
 * D/50U steps, repeated until two periods agree to 5e-4 (at most 60 D/U). */
static double sphere_cd(int D, double Re, double len, double up, double side, double U)
{
    const int nx = (int)(len * D), ny = (int)(side * D), nz = ny;
    const double nu = U * D / Re, inflow[3] = {U, 0, 0};
    acm_domain *d = box(nx, ny, nz, nu, inflow);
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MIN, ACM_BOUNDARY_INLET, inflow));
    ACM_CK_OK(d, acm_domain_set_face(d, ACM_FACE_X_MAX, ACM_BOUNDARY_OUTLET, NULL));
    acm_test_sphere sp = acm_test_sphere_default(0.5 * D, up * D, 0.5 * (ny - 1), 0.5 * (nz - 1));
    acm_solid *s = acm_test_add_sphere(d, &sp);
    const int sample = (int)fmax(1.0, D / (50.0 * U));
    const int period = sample * (int)ceil(4.0 * nx * sqrt(3.0) / sample);
    const int most = (int)(60.0 * D / U);
    ACM_CK_OK(d, acm_step(d, (int)(10.0 * D / U)));
    int steps = (int)(10.0 * D / U);
    double cd = 0.0, last = 0.0;
    while (steps + period <= most) {
        double sum = 0.0, F[3];
        for (int t = 0; t < period; t += sample) {
            ACM_CK_OK(d, acm_step(d, sample));
            ACM_CK_OK(d, acm_solid_get_force(s, F, NULL));
            sum += F[0];
        }
        steps += period;
        cd = 2.0 * sum / (period / sample) / (U * U * M_PI * 0.25 * D * D);
        if (fabs(cd - last) < 5e-4 * cd)
            break;
        last = cd;
    }
    printf("sphere D=%d Re=%g in %dx%dx%d, U=%g: C_D = %.4f (mean over %d steps) after %d steps\n",
           D, Re, nx, ny, nz, U, cd, period, steps);
    acm_domain_destroy(d);
    return cd;
}

START_TEST(sphere_drag_re25_re100)
{
    const double re[2] = {25.0, 100.0}, ref[2] = {JP_CD_RE25, JP_CD_RE100};
    if (!acm_test_full()) {
        /* CPU: D = 8 in 12 D x 5 D x 5 D. At D = 8 the drag is about 8 % high at
         * Re = 25 (the resolution study of docs/physics.md) and the periodic sides
         * at 5 D and the inlet at 4 D add about as much, so this run checks the
         * machinery against the reference within 20 %. */
        const double cd = sphere_cd(8, re[0], 12.0, 4.0, 5.0, 0.1);
        printf("  reference %.4f, error %+.2f %% (D = 8, small box)\n", ref[0],
               100.0 * (cd / ref[0] - 1.0));
        ck_assert_msg(fabs(cd / ref[0] - 1.0) < 0.20, "C_D %g, reference %g", cd, ref[0]);
        return;
    }
    /* GPU: 25 D long with the inlet 10 D upstream, periodic sides at 12 D, at
     * the resolution where the study of docs/physics.md comes within 3 % of
     * Johnson & Patel: D = 16 at Re = 25, D = 24 at Re = 100. */
    const int diameter[2] = {16, 24};
    for (int i = 0; i < 2; ++i) {
        const double cd = sphere_cd(diameter[i], re[i], 25.0, 10.0, 12.0, 0.05);
        printf("  Re = %g, D = %d: C_D %.4f; reference %.4f, error %+.2f %%\n", re[i],
               diameter[i], cd, ref[i], 100.0 * (cd / ref[i] - 1.0));
        ck_assert_msg(fabs(cd / ref[i] - 1.0) < 0.03, "Re = %g: C_D %g, reference %g", re[i],
                      cd, ref[i]);
    }
}
END_TEST

/* ---- Galilean invariance: towed sphere vs fixed sphere --------------------------------- */

/* Mean drag over the second half of `steps` steps in a periodic box: the sphere
 * moving at +V through fluid at rest (towed) or fixed in fluid moving at -V. */
static double periodic_drag(int n, int D, double V, double nu, int steps, int towed)
{
    const double u0[3] = {towed ? 0.0 : -V, 0.0, 0.0};
    acm_domain *d = box(2 * n, n, n, nu, u0);
    acm_test_sphere sp = acm_test_sphere_default(0.5 * D, 0.5 * n, 0.5 * n - 0.3, 0.5 * n + 0.2);
    if (towed) {
        sp.motion = ACM_MOTION_PRESCRIBED;
        sp.v[0] = V;
    }
    acm_solid *s = acm_test_add_sphere(d, &sp);
    ACM_CK_OK(d, acm_step(d, steps / 2));
    double sum = 0.0, F[3];
    const int chunk = 10;
    for (int t = steps / 2; t < steps; t += chunk) {
        ACM_CK_OK(d, acm_step(d, chunk));
        ACM_CK_OK(d, acm_solid_get_force(s, F, NULL));
        sum += F[0];
    }
    acm_domain_destroy(d);
    return sum / (steps / 2 / chunk);
}

START_TEST(towed_sphere_feels_the_drag_of_a_fixed_one)
{
    const int full = acm_test_full();
    const int n = full ? 48 : 24, D = full ? 12 : 8;
    const double V = 0.05, nu = V * D / 20.0; /* Re = 20 */
    const int steps = (int)(6.0 * D / V);
    const double fixed = periodic_drag(n, D, V, nu, steps, 0), towed = periodic_drag(n, D, V, nu, steps, 1);
    printf("Galilean: mean drag fixed %.6g, towed %.6g, difference %.2f %%\n", fixed, towed,
           100.0 * (towed / fixed - 1.0));
    ck_assert_msg(fixed < 0.0 && fabs(towed / fixed - 1.0) < 0.03, "fixed %g, towed %g", fixed,
                  towed);
}
END_TEST

/* ---- Stokes torque of a spinning sphere -------------------------------------------------- */

START_TEST(spinning_sphere_stokes_torque)
{
    const int full = acm_test_full();
    const int n = full ? 64 : 40;
    const double R = full ? 10.0 : 6.0, nu = 1.0 / 6.0, Re = 0.05, Omega = Re * nu / (R * R);
    acm_domain *d = box(n, n, n, nu, NULL);
    acm_test_sphere sp = acm_test_sphere_default(R, 0.5 * n - 0.2, 0.5 * n + 0.1, 0.5 * n);
    sp.motion = ACM_MOTION_PRESCRIBED;
    sp.w[2] = Omega;
    acm_solid *s = acm_test_add_sphere(d, &sp);
    ACM_CK_OK(d, acm_step(d, (int)(8.0 * R * R / nu)));
    double T[3];
    ACM_CK_OK(d, acm_solid_get_force(s, NULL, T));
    const double stokes = -8.0 * M_PI * nu * R * R * R * Omega;
    printf("spinning sphere R=%g in %d^3: torque %.6g, Stokes %.6g, ratio %.4f\n", R, n, T[2],
           stokes, T[2] / stokes);
    /* the periodic images add about (R/L)^3 = 0.4 % (full) to 3 % (CPU) */
    ck_assert_msg(fabs(T[2] / stokes - 1.0) < 0.05, "torque %g, Stokes %g", T[2], stokes);
    acm_domain_destroy(d);
}
END_TEST

/* ---- terminal velocity of a heavy sphere ---------------------------------------------------- */

START_TEST(heavy_sphere_reaches_stokes_terminal_velocity)
{
    const int full = acm_test_full();
    const int n = full ? 64 : 32;
    const double R = full ? 8.0 : 4.0, nu = 1.0 / 6.0, ratio = 3.0;
    const double V = 4.0 / 3.0 * M_PI * R * R * R, phi = V / (n * (double)n * n);
    /* Hasimoto (1959): drag of a cubic array, F = 6 pi mu R U / K */
    const double K = 1.0 - 1.7601 * cbrt(phi) + phi - 1.5593 * phi * phi;
    const double Ut = 0.1 * nu / (2.0 * R); /* Re = 0.1 */
    const double g = 6.0 * M_PI * nu * R * Ut / K / ((ratio - 1.0) * V);
    acm_domain *d = box(n, n, n, nu, NULL);
    const double fb[3] = {0, 0, (ratio - 1.0) * V * g / (n * (double)n * n)}; /* hydrostatic */
    ACM_CK_OK(d, acm_domain_set_body_force(d, fb));
    acm_test_sphere sp = acm_test_sphere_default(R, 0.5 * n, 0.5 * n, 0.5 * n);
    sp.motion = ACM_MOTION_FREE;
    sp.density = ratio;
    sp.g[2] = -g;
    acm_solid *s = acm_test_add_sphere(d, &sp);
    ACM_CK_OK(d, acm_step(d, (int)(0.5 * n * n / nu)));
    acm_solid_state st = {ACM_SOLID_STATE_VERSION, {0}, {0}, {0}, {0}};
    ACM_CK_OK(d, acm_solid_get_state(s, &st));
    acm_domain_stats ds = acm_test_stats(d);
    const double u_fluid = ds.momentum[2] / ds.mass, rel = u_fluid - st.velocity[2];
    printf("heavy sphere R=%g in %d^3: settles at %.6g relative to the fluid, Stokes-Hasimoto "
           "%.6g, ratio %.4f\n",
           R, n, rel, Ut, rel / Ut);
    ck_assert_msg(fabs(rel / Ut - 1.0) < 0.05, "terminal velocity %g, expected %g", rel, Ut);
    acm_domain_destroy(d);
}
END_TEST

/* ---- cubic lid-driven cavity at Re = 1000 ----------------------------------------------- */

/* u/U at the n cell rows of the vertical centreline x = z = n/2: the mean of
 * the four cells around it (n even). */
static void cavity_centreline(acm_domain *d, int n, double U, double *rows)
{
    const int c[2] = {(n - 1) / 2, n / 2};
    for (int y = 0; y < n; ++y) {
        double sum = 0.0, u[3];
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
                ACM_CK_OK(d, acm_domain_probe(d, c[a], y, c[b], NULL, u));
                sum += u[0];
            }
        rows[y] = sum / 4.0 / U;
    }
}

/* Root-mean-square change between two profiles. */
static double profile_change(const double *a, const double *b, int n)
{
    double sum2 = 0.0;
    for (int y = 0; y < n; ++y)
        sum2 += (a[y] - b[y]) * (a[y] - b[y]);
    return sqrt(sum2 / n);
}

/* The steady vertical centreline profile against the spectral solution: n^3
 * cells, lid speed 0.1, run in blocks of 5 lid travel times n/U until the
 * profile changes by less than 1e-3 rms (at most 60); returns the rms
 * difference from Albensoeder & Kuhlmann. cm: CM-MRT (CM(1)), else the
 * default model (ACM_LI2018 with its safety net). */
static double cavity_rms(int n, int cm)
{
    const double U = 0.1, nu = U * n / 1000.0;
    const double lid[3] = {U, 0.0, 0.0};
    acm_domain *d = box(n, n, n, nu, NULL);
    if (cm)
        acm_test_set_cm(d, 1.0);
    for (int f = 0; f < ACM_FACE_COUNT; ++f)
        ACM_CK_OK(d, acm_domain_set_face(d, (acm_face)f, ACM_BOUNDARY_WALL,
                                         f == ACM_FACE_Y_MAX ? lid : NULL));
    const int travel = (int)(n / U);
    double *rows = acm_test_alloc((size_t)n * sizeof(double));
    double *last = acm_test_alloc((size_t)n * sizeof(double));
    ACM_CK_OK(d, acm_step(d, 10 * travel));
    cavity_centreline(d, n, U, last);
    int travels = 10;
    double change = 1.0;
    while (travels < 60 && change >= 1e-3) {
        ACM_CK_OK(d, acm_step(d, 5 * travel));
        travels += 5;
        cavity_centreline(d, n, U, rows);
        change = profile_change(rows, last, n);
        memcpy(last, rows, (size_t)n * sizeof(double));
    }
    const double rms = ak2005_rms(rows, n);
    const acm_domain_stats st = acm_test_stats(d);
    printf("cubic cavity Re=1000 %d^3, U=%g, %s: rms difference from Albensoeder & Kuhlmann "
           "%.4f after %d lid travel times (last change %.1e), %llu safety-net fallbacks\n",
           n, U, cm ? "CM(1)" : "ACM (default)", rms, travels, change,
           (unsigned long long)st.fallback_cells_total);
    ck_assert_msg(change < 1e-3, "no steady state after %d travel times (change %g)", travels,
                  change);
    free(rows);
    free(last);
    acm_domain_destroy(d);
    return rms;
}

/* Both CM(1) and the default ACM model (which diverged here at n = 32 until
 * its rates were held at 1 next to the faces). */
START_TEST(cubic_cavity_re1000_centreline)
{
    const int full = acm_test_full();
    const int n = full ? 128 : 32;
    const double cm_bound = full ? 0.006 : 0.035, acm_bound = full ? 0.006 : 0.045;
    const double cm = cavity_rms(n, 1), acm = cavity_rms(n, 0);
    ck_assert_msg(cm < cm_bound, "CM(1): rms difference %g above %g", cm, cm_bound);
    ck_assert_msg(acm < acm_bound, "ACM: rms difference %g above %g", acm, acm_bound);
}
END_TEST

/* ---- very low viscosity: nu = 1e-6, U = 0.1, FP32, the default model ------------------ */

/* A scene of examples/lowvisc_scenes.h on n^3 for `steps` steps, checked every
 * `every`: each block steps without divergence; the cavity keeps its mass; the
 * jet (periodic, no force) never gains mechanical energy (kinetic + acoustic). */
static void lowvisc_scene(lv_scene scene, acm_collision model, int n, int64_t steps,
                          int64_t every)
{
    acm_domain_options o = acm_test_options(n, n, n, 1e-6, model, ACM_PRECISION_FP32);
    acm_domain *d = acm_test_domain(&o);
    const double U = 0.1;
    ACM_CK_OK(d, lv_scene_setup(d, scene, n, U));
    const size_t cells = (size_t)n * n * n;
    double *rho = acm_test_alloc(cells * sizeof *rho);
    acm_domain_stats s = acm_test_stats(d);
    const double m0 = s.mass, eu = 0.5 * (double)cells * U * U;
    double e = (s.kinetic_energy + lv_acoustic_energy(d, rho, cells)) / eu, rise = -1;
    for (int64_t done = 0; done < steps; done += every) {
        acm_status st = acm_step(d, every);
        ck_assert_msg(st == ACM_OK, "%s %d^3: %s", lv_scene_name(scene), n,
                      acm_domain_last_error(d));
        s = acm_test_stats(d);
        const double en = (s.kinetic_energy + lv_acoustic_energy(d, rho, cells)) / eu;
        rise = fmax(rise, en - e);
        e = en;
    }
    printf("%s %d^3, nu = 1e-6, U = 0.1, %s: %lld steps, max|u|/U %.2f, %lld fallbacks, mass "
           "drift %.1e, energy (units N^3 U^2/2) %.4f, largest rise over %lld steps %.1e\n",
           lv_scene_name(scene), n, model == ACM_COLLISION_CM_MRT ? "CM(1)" : "default ACM",
           (long long)steps, s.max_speed / U,
           (long long)s.fallback_cells_total, s.mass / m0 - 1, e, (long long)every, rise);
    if (scene != LV_CHANNEL) /* closed or periodic: FP32 round-off only */
        ck_assert_msg(fabs(s.mass / m0 - 1) < 1e-6, "mass drift %g", s.mass / m0 - 1);
    if (scene == LV_JET)
        ck_assert_msg(rise <= 0, "the periodic jet gained energy: %g (of %g)", rise, e);
    free(rho);
    acm_domain_destroy(d);
}

/* Cavity and channel diverged after about 300 steps before the safety net's
 * floor (docs/physics.md); the jet's energy grew from FP32 round-off, and with
 * the default ACM late in its decay in bursts of up to 0.7 % until the safety
 * net relaxed the high orders as Hermite moments. Run 0-2: the three scenes
 * with the default ACM model; run 3: the jet with CM(1). Neither jet may ever
 * gain energy. */
START_TEST(low_viscosity_scenes_survive)
{
    const int full = acm_test_full();
    const lv_scene scene = _i < 3 ? (lv_scene)_i : LV_JET;
    const acm_collision model = _i < 3 ? ACM_COLLISION_DEFAULT : ACM_COLLISION_CM_MRT;
    lowvisc_scene(scene, model, full ? 64 : 32, full ? 100000 : 3000, full ? 5000 : 500);
}
END_TEST

TEST_SUITE(validation)
{
    Suite *s = suite_create("validation");
    TCase *tc = acm_tcase("drag", 1800);
    tcase_add_test(tc, sphere_drag_re25_re100);
    suite_add_tcase(s, tc);
    tc = acm_tcase("motion", 1800);
    tcase_add_test(tc, towed_sphere_feels_the_drag_of_a_fixed_one);
    tcase_add_test(tc, spinning_sphere_stokes_torque);
    tcase_add_test(tc, heavy_sphere_reaches_stokes_terminal_velocity);
    suite_add_tcase(s, tc);
    tc = acm_tcase("cavity", 1800);
    tcase_add_test(tc, cubic_cavity_re1000_centreline);
    suite_add_tcase(s, tc);
    tc = acm_tcase("low_viscosity", 1800);
    tcase_add_loop_test(tc, low_viscosity_scenes_survive, 0, 4);
    suite_add_tcase(s, tc);
    return s;
}
