/*
 * libacmlbm -- the immersed-boundary phase of a step on the CPU (physics-spec
 * 3.4 K2 and 8), for one storage type; included by cpu/backend.c after
 * cpu/lbm_tmpl.h (ACM_R, ACM_SFX as there). SPDX-License-Identifier: Apache-2.0
 *
 * Per step:
 *   1. place the samples of moving solids (x_c + R r, U_b = v + w x r);
 *   2. forget last step's support: zero its force, clear its mask bits;
 *   3. mark the support of every sample in the bit mask (the "band");
 *   4. rho and u* = (j + F_ext / 2) / rho of every band cell, from the
 *      populations the collision is about to pull (so the force is this step's);
 *   5. m multi-direct-forcing iterations (spec 8.5): interpolate u* + F / 2 rho,
 *      G = alpha rho (U_b - U) (after the first, free bodies take their coupled
 *      velocity change and their samples' G follows it), spread G dV (scatter:
 *      sample by sample in storage order, which makes the CPU the deterministic
 *      oracle; or gather);
 *   6. each solid's force -sum G dV and torque about its centre of mass.
 * ib_begin does 1-4 and the first interpolation, ib_end the rest; between
 * them the free bodies' coupling sums (cpu/backend.c), which a decomposed
 * domain adds over its slabs.
 * The collision then adds the IB force planes to the external force.
 */

#define R ACM_R
#define S(name) ACM_SFX(name)

/* Step 2: zero the force of last step's band and clear its bits. */
static void S(ib_clear_band)(const acm_domain *d, cpu_ib *ib)
{
    R *F = (R *)ib->force;
    const uint64_t n = (uint64_t)d->ncells, words = (n + 31) / 32;
#pragma omp parallel for schedule(static) if (words >= 4096)
    for (int64_t w = 0; w < (int64_t)words; ++w) {
        uint32_t bits = ib->mask[w];
        while (bits != 0) {
            const uint64_t k = (uint64_t)w * 32 + (uint64_t)__builtin_ctz(bits);
            F[k] = F[n + k] = F[2 * n + k] = (R)0;
            bits &= bits - 1;
        }
        ib->mask[w] = 0;
    }
}

/* Step 3: the support of every sample. */
static void S(ib_mark_band)(const acm_domain *d, cpu_ib *ib)
{
    const acm_ib_grid g = acm__ib_grid(d);
    for (uint64_t l = 0; l < ib->n; ++l) {
        acm_ib_stencil st;
        if (!acm_ib_make_stencil(&g, ib->X + 3 * l, &st))
            continue;
        for (int c = 0; c < ACM_IB_NODES; ++c)
            if (st.w[c] > 0.0)
                ib->mask[st.cell[c] >> 5] |= 1u << (st.cell[c] & 31u);
    }
}

/* Populations of cell (x, y, z) after streaming (the pull of boundary.h for
 * one cell): f_i = src_i(x - c_i), bounced back across walls; in place at
 * parity 0 the cell's own slots, at parity 1 the pull with the slots swapped
 * (cpu/lbm_tmpl.h). */
static void S(pull_cell)(const acm_domain *d, const cpu_impl *m, int32_t x, int32_t y, int32_t z,
                         R f[ACM_Q])
{
    const R *src = S(state)(m);
    const int32_t n[3] = {d->nx, d->ny, d->nz};
    const uint64_t own = (uint64_t)x + (uint64_t)n[0] * ((uint64_t)y + (uint64_t)n[1] * (uint64_t)z);
    if (m->in_place && m->parity == 0) {
        for (int i = 0; i < ACM_Q; ++i)
            f[i] = src[acm_csoa_index(d->layout.csoa, own, (uint32_t)i)];
        return;
    }
    const int swap = m->in_place;
    for (int i = 0; i < ACM_Q; ++i) {
        const int pulled = swap ? acm_opp(i) : i, bounced = swap ? i : acm_opp(i);
        int32_t s[3] = {x - acm_cx(i), y - acm_cy(i), z - acm_cz(i)};
        acm_crossing cr = acm_no_crossing();
        for (int a = 0; a < 3; ++a)
            acm_cross_axis(d->setup.face, a, n[a], &s[a], &cr);
        if (cr.n > 0) {
            f[i] = src[acm_csoa_index(d->layout.csoa, own, (uint32_t)bounced)] + (R)acm_bounce_term(i, &cr);
            continue;
        }
        const uint64_t k = (uint64_t)s[0] + (uint64_t)n[0] * ((uint64_t)s[1] + (uint64_t)n[1] * (uint64_t)s[2]);
        f[i] = src[acm_csoa_index(d->layout.csoa, k, (uint32_t)acm_mirror(pulled, cr.slip))];
    }
}

/* Step 4: rho and u* of every band cell into the macro planes. */
static void S(ib_band_macro)(const acm_domain *d, const cpu_impl *m, cpu_ib *ib)
{
    R *M = (R *)ib->macro;
    const uint64_t n = (uint64_t)d->ncells, words = (n + 31) / 32;
#pragma omp parallel for schedule(dynamic, 64) num_threads(m->nthreads) if (words >= 4096)
    for (int64_t w = 0; w < (int64_t)words; ++w) {
        uint32_t bits = ib->mask[w];
        while (bits != 0) {
            const uint64_t k = (uint64_t)w * 32 + (uint64_t)__builtin_ctz(bits);
            bits &= bits - 1;
            const int32_t x = (int32_t)(k % (uint64_t)d->nx);
            const int32_t y = (int32_t)(k / (uint64_t)d->nx % (uint64_t)d->ny);
            const int32_t z = (int32_t)(k / ((uint64_t)d->nx * (uint64_t)d->ny));
            R f[ACM_Q];
            double rho, j[3], F[3];
            S(pull_cell)(d, m, x, y, z, f);
            S(moments)(f, 1, &rho, j);
            S(cell_force)(d, m, (int64_t)k, F);
            M[k] = (R)rho;
            for (int a = 0; a < 3; ++a)
                M[(uint64_t)(a + 1) * n + k] = (R)((j[a] + 0.5 * F[a]) / rho);
        }
    }
}

/* Step 5a: interpolate at sample l and compute its penalty force density
 * (the velocity seen is u* plus half the IB force spread so far). */
static void S(ib_penalty)(const acm_domain *d, cpu_ib *ib, const acm_ib_grid *g, uint64_t l)
{
    double *G = ib->G + 3 * l;
    acm_ib_stencil st;
    if (!acm_ib_make_stencil(g, ib->X + 3 * l, &st)) {
        G[0] = G[1] = G[2] = 0.0;
        return;
    }
    double u[3];
    const double rho = acm_ib_interpolate(&st, ib->macro, ib->force, (uint64_t)d->ncells,
                                          (int)sizeof(R), u);
    acm_ib_penalty(ib->alpha[l], rho, ib->ub + 3 * l, u, G);
    ib->rho[l] = rho;
    for (int a = 0; a < 3; ++a)
        ib->Gsum[3 * l + (uint64_t)a] += G[a];
}

/* Step 5b, scatter: every sample adds w G dV to its 8 cells, in storage order. */
static void S(ib_scatter)(const acm_domain *d, cpu_ib *ib, const acm_ib_grid *g)
{
    R *F = (R *)ib->force;
    const uint64_t n = (uint64_t)d->ncells;
    for (uint64_t l = 0; l < ib->n; ++l) {
        acm_ib_stencil st;
        if (!acm_ib_make_stencil(g, ib->X + 3 * l, &st))
            continue;
        for (int c = 0; c < ACM_IB_NODES; ++c) {
            const double s = st.w[c] * ib->dv[l];
            for (int a = 0; a < 3; ++a)
                F[(uint64_t)a * n + st.cell[c]] += (R)(s * ib->G[3 * l + (uint64_t)a]);
        }
    }
}

/* Step 5b, gather (the paper's baseline): every cell of a solid's region sums
 * the samples whose support holds it, found through a cell list. */
static acm_status S(ib_gather_solid)(acm_domain *d, cpu_ib *ib, const acm_ib_grid *g,
                                    const acm_solid *s)
{
    acm_ib_region rg = acm_ib_solid_region(g, s->body.x, s->body.r_max);
    if (acm__cpu_ib_cell_list(ib, g, &rg, s->offset, s->count) != ACM_OK)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot allocate the gather cell list of %llu cells",
                        (unsigned long long)rg.cells);
    R *F = (R *)ib->force;
    const uint64_t n = (uint64_t)d->ncells, cells = rg.cells;
#pragma omp parallel for schedule(dynamic, 64) if (cells >= 4096)
    for (int64_t r = 0; r < (int64_t)cells; ++r) {
        uint64_t node;
        uint32_t nb[ACM_IB_NODES];
        const int count = acm_ib_region_node(g, &rg, (uint64_t)r, &node, nb);
        double sum[3] = {0.0, 0.0, 0.0};
        for (int b = 0; b < count; ++b)
            for (uint32_t j = ib->cell_start[nb[b]]; j < ib->cell_start[nb[b] + 1]; ++j) {
                const uint64_t l = ib->cell_samples[j];
                acm_ib_stencil st;
                acm_ib_make_stencil(g, ib->X + 3 * l, &st);
                double w = 0.0;
                for (int c = 0; c < ACM_IB_NODES; ++c)
                    w += st.cell[c] == node ? st.w[c] : 0.0;
                for (int a = 0; a < 3; ++a)
                    sum[a] += w * ib->dv[l] * ib->G[3 * l + (uint64_t)a];
            }
        if (count > 0)
            for (int a = 0; a < 3; ++a)
                F[(uint64_t)a * n + node] += (R)sum[a];
    }
    return ACM_OK;
}

/* Steps 1-4 and the first iteration's interpolation. */
static void S(ib_begin)(acm_domain *d, cpu_impl *m)
{
    cpu_ib *ib = &m->ib;
    const acm_ib_grid g = acm__ib_grid(d);
    acm__cpu_ib_place(d, ib, false);
    S(ib_clear_band)(d, ib);
    S(ib_mark_band)(d, ib);
    S(ib_band_macro)(d, m, ib);
    memset(ib->Gsum, 0, 3 * ib->n * sizeof(double));
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (ib->n >= 4096)
    for (int64_t l = 0; l < (int64_t)ib->n; ++l)
        S(ib_penalty)(d, ib, &g, (uint64_t)l);
}

static acm_status S(ib_spread)(acm_domain *d, cpu_ib *ib, const acm_ib_grid *g)
{
    if (d->layout.ib.spread == ACM_IB_SPREAD_GATHER) {
        for (int32_t i = 0; i < d->nsolids; ++i)
            ACM_TRY(S(ib_gather_solid)(d, ib, g, d->solids[i]));
        return ACM_OK;
    }
    S(ib_scatter)(d, ib, g);
    return ACM_OK;
}

/* After the free bodies' coupling (dvdw: 6 per solid, their velocity change,
 * or NULL without free bodies): the spreads and the other iterations, then
 * the solids' forces. */
static acm_status S(ib_end)(acm_domain *d, cpu_impl *m, const double *dvdw)
{
    cpu_ib *ib = &m->ib;
    const acm_ib_grid g = acm__ib_grid(d);
    if (dvdw != NULL)
        acm__cpu_ib_couple(d, ib, dvdw);
    for (int it = 0; it < d->layout.ib.iterations; ++it) {
        if (it > 0) {
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (ib->n >= 4096)
            for (int64_t l = 0; l < (int64_t)ib->n; ++l)
                S(ib_penalty)(d, ib, &g, (uint64_t)l);
        }
        ACM_TRY(S(ib_spread)(d, ib, &g));
    }
    acm__cpu_ib_sum_forces(d, ib);
    return ACM_OK;
}

#undef S
#undef R
