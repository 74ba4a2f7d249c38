/*
 * libacmlbm -- CPU reference path for one storage type: pull streaming with
 * the face rules of boundary.h, the step loop, the inlet/outlet layers and
 * the field transfers. Included twice by cpu/backend.c (ACM_R = float,
 * double; ACM_SFX names the instance). SPDX-License-Identifier: Apache-2.0
 *
 * Storage: CSoA arrays of shifted populations f - w.
 *   Two arrays: f[cur] holds the current state *after collision*, before
 *     streaming, so a step is "pull from f[cur] into registers, collide, write
 *     f[1-cur], swap". The physical state f(x, t) (what the API reports) is the
 *     pulled one.
 *   In place (the AA pattern), one array A = f[0] and a parity:
 *     parity 0: A holds the physical state. The (even) step reads A[x][i],
 *       collides, writes f*_i(x) to A[x][opp(i)] -> parity 1.
 *     parity 1: A[x][opp(i)] holds f*_i(x), so the physical state is the pull
 *       f_i(x) = A[x - c_i][opp(i)] (across a wall: A[x][i] + the wall term).
 *       The (odd) step reads that pull, collides and pushes f*_i(x) to
 *       A[x + c_i][i] (across a wall: A[x][opp(i)] + the wall term, the
 *       bounce-back done in advance) -> parity 0.
 *     Every slot a cell reads is one only that cell writes, so the cells can
 *     be visited in any order and in parallel.
 */

#define R ACM_R
#define S(name) ACM_SFX(name)

/* ---- contiguous cell ranges of one population ---------------------------- */

/* Element-wise copies, not memcpy: the runs are short (a row of cells) and a
 * library call per run and population cost as much as the collision. */
static inline void S(copy_run)(R *restrict dst, const R *restrict src, int32_t n)
{
    for (int32_t j = 0; j < n; ++j)
        dst[j] = src[j];
}

static void S(load_range)(const R *src, acm_csoa l, int64_t k, int32_t n, int i, R *dst)
{
    const int64_t alpha = (int64_t)l.alpha;
    while (n > 0) {
        int64_t off = (int64_t)acm_csoa_offset(l, (uint64_t)k);
        int32_t len = (int32_t)(alpha - off < n ? alpha - off : n);
        S(copy_run)(dst, src + acm_csoa_index(l, (uint64_t)k, (uint32_t)i), len);
        dst += len;
        k += len;
        n -= len;
    }
}

static void S(store_range)(R *dst, acm_csoa l, int64_t k, int32_t n, int i, const R *src)
{
    const int64_t alpha = (int64_t)l.alpha;
    while (n > 0) {
        int64_t off = (int64_t)acm_csoa_offset(l, (uint64_t)k);
        int32_t len = (int32_t)(alpha - off < n ? alpha - off : n);
        S(copy_run)(dst + acm_csoa_index(l, (uint64_t)k, (uint32_t)i), src, len);
        src += len;
        k += len;
        n -= len;
    }
}

/*
 * Stream one row (y, z) into out[27][nx]: out_i(x) = src_i(x - dir*c_i) with
 * the face rules. dir = +1 is the pull of a time step; dir = -1 is its exact
 * inverse, used to turn a physical state back into stored form. swap = 1
 * reads slot opp(i) where it would read i and i where opp(i) (the in-place
 * pull of parity 1).
 */
static void S(stream_row)(const acm_domain *d, const R *src, int32_t y, int32_t z, int dir,
                          int swap, R *out)
{
    const int32_t nx = d->nx, ny = d->ny, nz = d->nz;
    const bool moments = d->layout.storage == ACM_STORAGE_MOMENTS;
    const int64_t row = (int64_t)nx * (y + (int64_t)ny * z);
    for (int i = 0; i < ACM_Q; ++i) {
        const int cx = dir * acm_cx(i), cy = dir * acm_cy(i), cz = dir * acm_cz(i);
        const int pulled = swap ? acm_opp(i) : i, bounced = swap ? i : acm_opp(i);
        R *o = out + (size_t)i * (size_t)nx;
        acm_crossing cr = acm_no_crossing();
        int32_t ys = y - cy, zs = z - cz;
        acm_cross_axis(d->setup.face, 1, ny, &ys, &cr);
        acm_cross_axis(d->setup.face, 2, nz, &zs, &cr);
        if (acm_layer_pull(&cr, moments)) { /* the layer row reads its own equilibrium */
            S(load_range)(src, d->layout.csoa, row, nx, pulled, o);
            continue;
        }
        if (cr.n > 0) { /* the whole row bounces back from its own opposite population */
            S(load_range)(src, d->layout.csoa, row, nx, bounced, o);
            const R t = (R)acm_bounce_term(i, &cr);
            for (int32_t x = 0; x < nx; ++x)
                o[x] += t;
            if (cx != 0) { /* the end cell also crosses an x face */
                int32_t x = cx > 0 ? 0 : nx - 1, xs = x - cx;
                acm_crossing cx_cr = cr;
                acm_cross_axis(d->setup.face, 0, nx, &xs, &cx_cr);
                if (acm_layer_pull(&cx_cr, moments))
                    o[x] = src[acm_csoa_index(d->layout.csoa, (uint64_t)(row + x), (uint32_t)pulled)];
                else
                    o[x] += (R)(acm_bounce_term(i, &cx_cr) - acm_bounce_term(i, &cr));
            }
            continue;
        }
        const int64_t srow = (int64_t)nx * (ys + (int64_t)ny * zs);
        const int from = acm_mirror(pulled, cr.slip); /* mirrored across y or z slip faces */
        if (cx == 0) {
            S(load_range)(src, d->layout.csoa, srow, nx, from, o);
            continue;
        }
        int32_t x = cx > 0 ? 0 : nx - 1, xs = x - cx; /* the end cell */
        if (cx > 0)
            S(load_range)(src, d->layout.csoa, srow, nx - 1, from, o + 1);
        else
            S(load_range)(src, d->layout.csoa, srow + 1, nx - 1, from, o);
        acm_cross_axis(d->setup.face, 0, nx, &xs, &cr);
        if (cr.n == 0)
            o[x] = src[acm_csoa_index(d->layout.csoa, (uint64_t)(srow + xs),
                                      (uint32_t)acm_mirror(pulled, cr.slip))];
        else if (acm_layer_pull(&cr, moments))
            o[x] = src[acm_csoa_index(d->layout.csoa, (uint64_t)(row + x), (uint32_t)pulled)];
        else
            o[x] = src[acm_csoa_index(d->layout.csoa, (uint64_t)(row + x), (uint32_t)bounced)] +
                   (R)acm_bounce_term(i, &cr);
    }
}

/* In place, odd step: push the post-collision row in[27][nx] of (y, z) to
 * where the next step reads it, f*_i(x) into slot i of x + c_i, or across a
 * non-periodic face into slot opp(i) of x plus the wall term of opp(i). The
 * transpose of stream_row(..., +1, swap = 1). */
static void S(push_row)(const acm_domain *d, R *dst, int32_t y, int32_t z, const R *in)
{
    const int32_t nx = d->nx, ny = d->ny, nz = d->nz;
    const int64_t row = (int64_t)nx * (y + (int64_t)ny * z);
    for (int i = 0; i < ACM_Q; ++i) {
        const int cx = acm_cx(i), back = acm_opp(i);
        const R *o = in + (size_t)i * (size_t)nx;
        acm_crossing cr = acm_no_crossing();
        int32_t yt = y + acm_cy(i), zt = z + acm_cz(i);
        acm_cross_axis(d->setup.face, 1, ny, &yt, &cr);
        acm_cross_axis(d->setup.face, 2, nz, &zt, &cr);
        if (cr.n > 0) { /* the whole row bounces into its own opposite slots */
            for (int32_t x = 0; x < nx; ++x) {
                acm_crossing xcr = cr;
                int32_t xt = x + cx;
                acm_cross_axis(d->setup.face, 0, nx, &xt, &xcr);
                dst[acm_csoa_index(d->layout.csoa, (uint64_t)(row + x), (uint32_t)back)] =
                    o[x] + (R)acm_bounce_term(back, &xcr);
            }
            continue;
        }
        const int64_t trow = (int64_t)nx * (yt + (int64_t)ny * zt);
        const int to = acm_mirror(i, cr.slip); /* mirrored across y or z slip faces */
        if (cx == 0) {
            S(store_range)(dst, d->layout.csoa, trow, nx, to, o);
            continue;
        }
        int32_t x = cx > 0 ? nx - 1 : 0, xt = x + cx; /* the end cell */
        if (cx > 0)
            S(store_range)(dst, d->layout.csoa, trow + 1, nx - 1, to, o);
        else
            S(store_range)(dst, d->layout.csoa, trow, nx - 1, to, o + 1);
        acm_cross_axis(d->setup.face, 0, nx, &xt, &cr);
        if (cr.n == 0)
            dst[acm_csoa_index(d->layout.csoa, (uint64_t)(trow + xt),
                               (uint32_t)acm_mirror(i, cr.slip))] = o[x];
        else
            dst[acm_csoa_index(d->layout.csoa, (uint64_t)(row + x), (uint32_t)back)] =
                o[x] + (R)acm_bounce_term(back, &cr);
    }
}

/* The array that holds the state: f[0] in place, else f[cur]. */
static R *S(state)(const cpu_impl *m) { return (R *)m->f[m->in_place ? 0 : m->cur]; }

/* The physical state of row (y, z) into out[27][nx]. */
static void S(physical_row)(const acm_domain *d, const cpu_impl *m, int32_t y, int32_t z, R *out)
{
    const R *src = S(state)(m);
    if (m->in_place && m->parity == 0) {
        const int64_t row = (int64_t)d->nx * (y + (int64_t)d->ny * z);
        for (int i = 0; i < ACM_Q; ++i)
            S(load_range)(src, d->layout.csoa, row, d->nx, i, out + (size_t)i * (size_t)d->nx);
        return;
    }
    S(stream_row)(d, src, y, z, +1, m->in_place, out);
}

/* Where the collision just done left f*_i of cell c (the new state): its
 * index, and the wall term added there (the in-place push bounces in advance). */
static uint64_t S(post_slot)(const acm_domain *d, const cpu_impl *m, const int32_t c[3], int i,
                             double *term)
{
    const int32_t n[3] = {d->nx, d->ny, d->nz};
    const int state = !m->in_place ? ACM_STATE_POST
                                   : (m->parity ? ACM_STATE_AA_SWAP : ACM_STATE_AA_OWN);
    int32_t t[3];
    const int slot = acm_post_target(d->setup.face, n, state, c, i, t, term);
    const uint64_t k = (uint64_t)t[0] + (uint64_t)n[0] * ((uint64_t)t[1] + (uint64_t)n[1] * (uint64_t)t[2]);
    return acm_csoa_index(d->layout.csoa, k, (uint32_t)slot);
}

/* ---- equilibrium in public order ---------------------------------------- */

static void S(equilibrium)(R rho, const R u[3], R out[ACM_Q])
{
    R dx[3], dy[3], dz[3], px[3], py[3], pz[3], e[ACM_Q];
    S(acm_phi1d)(u[0], dx, px);
    S(acm_phi1d)(u[1], dy, py);
    S(acm_phi1d)(u[2], dz, pz);
    S(acm_equilibrium)(rho - (R)1, dx, dy, dz, e);
    for (int i = 0; i < ACM_Q; ++i)
        out[i] = e[acm_abc(i)];
}

/* Density and momentum of shifted populations at stride st. The shifted
 * values are summed first and 1 is added last, as in the collision: adding
 * each small value to a running total near 1 would round every time. */
static void S(moments)(const R *f, size_t st, double *rho, double j[3])
{
    double dr = 0.0, jx = 0.0, jy = 0.0, jz = 0.0;
    for (int i = 0; i < ACM_Q; ++i) {
        double v = (double)f[(size_t)i * st];
        dr += v;
        jx += acm_cx(i) * v;
        jy += acm_cy(i) * v;
        jz += acm_cz(i) * v;
    }
    *rho = 1.0 + dr;
    j[0] = jx;
    j[1] = jy;
    j[2] = jz;
}

/* External force density of cell k (uniform part plus the field). */
static void S(cell_force)(const acm_domain *d, const cpu_impl *m, int64_t k, double F[3])
{
    const R *pl = (const R *)m->force;
    for (int a = 0; a < 3; ++a)
        F[a] = d->setup.body_force[a] + (pl ? (double)pl[(size_t)a * (size_t)d->ncells + (size_t)k] : 0.0);
}

/* Total force density of cell k in the last step: external plus the immersed
 * boundary's (the force the reported velocity includes half of). */
static void S(cell_force_total)(const acm_domain *d, const cpu_impl *m, int64_t k, double F[3])
{
    S(cell_force)(d, m, k, F);
    const R *ib = (const R *)m->ib.force;
    if (ib != NULL)
        for (int a = 0; a < 3; ++a)
            F[a] += (double)ib[(size_t)a * (size_t)d->ncells + (size_t)k];
}

/* ---- per-face equilibrium layers (INLET / OUTLET) --------------------------- */

static void S(apply_layer)(const acm_domain *d, const cpu_impl *m, R *f, int face, int32_t z0,
                           int32_t z1)
{
    const int axis = face / 2, hi = face & 1;
    const int32_t n[3] = {d->nx, d->ny, d->nz};
    const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
    const acm_face_bc *bc = &d->setup.face[face];
    const int inward = hi ? -1 : 1;
#pragma omp parallel for schedule(static) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    for (int32_t q = 0; q < n[a2]; ++q) {
        for (int32_t p = 0; p < n[a1]; ++p) {
            int32_t c[3], a[3];
            c[axis] = hi ? n[axis] - 1 : 0;
            a[axis] = hi ? n[axis] - 2 : 1;
            c[a1] = a[a1] = p;
            c[a2] = a[a2] = q;
            if (c[2] < z0 || c[2] >= z1)
                continue;
            R fa[ACM_Q], e[ACM_Q];
            for (int i = 0; i < ACM_Q; ++i) {
                double t;
                const uint64_t s = S(post_slot)(d, m, a, i, &t);
                fa[i] = (R)((double)f[s] - t);
            }
            double rho, j[3], rho_eq, ue[3];
            S(moments)(fa, 1, &rho, j);
            acm_layer_target(bc, d->face_values[face], acm_face_index(face, n, c), rho, j, &rho_eq,
                             ue);
            R u[3] = {(R)ue[0], (R)ue[1], (R)ue[2]};
            S(equilibrium)((R)rho_eq, u, e);
            if (m->mom_bits == 16) { /* the equilibrium's moments as stored */
                R mom[ACM_MOMENTS];
                S(acm_mom_encode)(e, mom);
                S(acm_mom_quantize16)(mom);
                S(acm_mom_populations)(mom, acm_mom_closure(d->setup.coll.model), e);
            }
            for (int i = 0; i < ACM_Q; ++i) {
                double t;
                const uint64_t s = S(post_slot)(d, m, c, i, &t);
                /* moment storage keeps the equilibrium itself: every slot the
                 * neighbours pull from it is the same */
                const int from = m->mom_bits ? i : acm_layer_slot(i, axis, inward);
                f[s] = (R)((double)e[from] + t);
            }
        }
    }
}

/* ---- absorbing layers in front of a face (boundary.h acm_absorber) ---------------- */

/* Cell c (its whole coordinate x along the face's axis) relaxed towards the
 * absorber's equilibrium e: its post-collision populations read and written
 * through their slots, moment storage projected again. */
static void S(absorb_cell)(const acm_domain *d, const cpu_impl *m, R *f, double sigma,
                           const int32_t c[3], const R e[ACM_Q])
{
    R g[ACM_Q];
    uint64_t at[ACM_Q];
    double term[ACM_Q];
    for (int i = 0; i < ACM_Q; ++i) {
        at[i] = S(post_slot)(d, m, c, i, &term[i]);
        g[i] = (R)((double)f[at[i]] - term[i]);
    }
    const R s = (R)sigma;
    for (int i = 0; i < ACM_Q; ++i)
        g[i] = g[i] + s * (e[i] - g[i]);
    if (m->mom_bits)
        S(acm_mom_project)(g, m->mom_bits, acm_mom_closure(d->setup.coll.model));
    for (int i = 0; i < ACM_Q; ++i)
        f[at[i]] = (R)((double)g[i] + term[i]);
}

/* The absorber of face `face` on the cells of planes [z0, z1) (a slab's planes
 * placed in the whole domain by origin_z and whole_nz). */
static void S(apply_absorber)(const acm_domain *d, const cpu_impl *m, R *f, int face, int32_t z0,
                              int32_t z1)
{
    const acm_absorber *a = &d->setup.absorber[face];
    const int axis = face / 2;
    const int32_t whole[3] = {d->nx, d->ny, d->whole_nz > 0 ? d->whole_nz : d->nz};
    int32_t lo[3] = {0, 0, z0}, hi[3] = {d->nx, d->ny, z1};
    int32_t slo, shi;
    acm_absorber_span(a, face, whole[axis], &slo, &shi);
    const int32_t shift = axis == 2 ? d->origin_z : 0; /* whole = local + shift */
    lo[axis] = slo - shift > lo[axis] ? slo - shift : lo[axis];
    hi[axis] = shi - shift < hi[axis] ? shi - shift : hi[axis];
    R e[ACM_Q], u[3] = {(R)a->u[0], (R)a->u[1], (R)a->u[2]};
    S(equilibrium)((R)a->rho, u, e);
#pragma omp parallel for schedule(static) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    for (int32_t z = lo[2]; z < hi[2]; ++z)
        for (int32_t y = lo[1]; y < hi[1]; ++y)
            for (int32_t x = lo[0]; x < hi[0]; ++x) {
                const int32_t c[3] = {x, y, z};
                const double sigma = acm_absorber_rate(a, face, c[axis] + shift, whole[axis]);
                S(absorb_cell)(d, m, f, sigma, c, e);
            }
}

/* After the collision, with m describing the new state (cur, parity) in f:
 * the absorbers' and then the layers' cells of planes [z0, z1). */
static void S(apply_layers)(const acm_domain *d, const cpu_impl *m, R *f, int32_t z0, int32_t z1)
{
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (d->setup.absorber[face].cells > 0)
            S(apply_absorber)(d, m, f, face, z0, z1);
    for (int face = 0; face < ACM_FACE_COUNT; ++face)
        if (acm_face_is_layer(d->setup.face[face].type))
            S(apply_layer)(d, m, f, face, z0, z1);
}

/* ---- row visitor over the physical state -------------------------------- */

/* Call fn for every row of the streamed (physical) state, in parallel. */
typedef void (*S(row_fn))(const acm_domain *d, const cpu_impl *m, int32_t y, int32_t z,
                          const R *f /* [27][nx] */, void *ctx, int thread);

static void S(visit_rows)(const acm_domain *d, cpu_impl *m, S(row_fn) fn, void *ctx)
{
    const int64_t rows = (int64_t)d->ny * d->nz;
#pragma omp parallel num_threads(m->nthreads) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    {
        int t = acm_thread_id();
        R *fin = (R *)m->scratch[t];
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            int32_t y = (int32_t)(r % d->ny), z = (int32_t)(r / d->ny);
            S(physical_row)(d, m, y, z, fin);
            fn(d, m, y, z, fin, ctx, t);
        }
    }
}

/* Replace the state by the physical state held in m->f[1 - cur] (CSoA):
 * inverse-stream it into f[cur]. */
static void S(unstream_into_current)(const acm_domain *d, cpu_impl *m)
{
    const R *phys = (const R *)m->f[1 - m->cur];
    R *cur = (R *)m->f[m->cur];
    const int64_t rows = (int64_t)d->ny * d->nz;
#pragma omp parallel num_threads(m->nthreads) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    {
        R *buf = (R *)m->scratch[acm_thread_id()];
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            int32_t y = (int32_t)(r % d->ny), z = (int32_t)(r / d->ny);
            S(stream_row)(d, phys, y, z, -1, 0, buf);
            int64_t row = (int64_t)d->nx * (y + (int64_t)d->ny * z);
            for (int i = 0; i < ACM_Q; ++i)
                S(store_range)(cur, d->layout.csoa, row, d->nx, i, buf + (size_t)i * (size_t)d->nx);
        }
    }
}

/* ---- diagnostics ----------------------------------------------------------- */

static void S(diag_row)(const acm_domain *d, const cpu_impl *m, int32_t y, int32_t z,
                        const R *f, void *ctx, int thread)
{
    (void)thread;
    acm_cpu_sums *s = (acm_cpu_sums *)ctx + ((int64_t)z * d->ny + y);
    const int32_t nx = d->nx;
    const int64_t row = (int64_t)nx * (y + (int64_t)d->ny * z);
    for (int32_t x = 0; x < nx; ++x) {
        double rho, j[3], F[3];
        S(moments)(f + x, (size_t)nx, &rho, j);
        S(cell_force_total)(d, m, row + x, F);
        double u[3], u2 = 0.0, pi2 = 0.0;
        for (int a = 0; a < 3; ++a) {
            u[a] = (j[a] + 0.5 * F[a]) / rho;
            u2 += u[a] * u[a];
        }
        /* Pi = sum f c c of the full populations (sum w c c = I / 3) */
        double pxx = 1.0 / 3.0, pyy = 1.0 / 3.0, pzz = 1.0 / 3.0, pxy = 0.0, pxz = 0.0, pyz = 0.0;
        for (int i = 0; i < ACM_Q; ++i) {
            const double v = (double)f[(size_t)i * (size_t)nx + (size_t)x];
            const int cx = acm_cx(i), cy = acm_cy(i), cz = acm_cz(i);
            pxx += cx * cx * v;
            pyy += cy * cy * v;
            pzz += cz * cz * v;
            pxy += cx * cy * v;
            pxz += cx * cz * v;
            pyz += cy * cz * v;
        }
        pi2 = pxx * pxx + pyy * pyy + pzz * pzz + 2.0 * (pxy * pxy + pxz * pxz + pyz * pyz);
        s->mass += rho;
        for (int a = 0; a < 3; ++a)
            s->momentum[a] += rho * u[a];
        s->energy += 0.5 * rho * u2;
        if (u2 > s->max_u2)
            s->max_u2 = u2;
        s->sum_j += rho * sqrt(u2);
        s->sum_pi += sqrt(pi2);
    }
}

static void S(diagnose)(const acm_domain *d, cpu_impl *m, acm_cpu_sums *out)
{
    memset(m->sums, 0, (size_t)d->ny * (size_t)d->nz * sizeof *m->sums);
    S(visit_rows)(d, m, S(diag_row), m->sums);
    acm_cpu_sums_fold(d, m, out);
}

/* ---- time step ---------------------------------------------------------------- */

/* What one row's collision needs besides the populations. */
typedef struct S(row_job) {
    acm_collide_params params, face_params; /* interior cells; cells at a face */
    bool faces;                             /* face_params differ from params */
    const R *force, *force_ib;              /* per-cell force planes or NULL */
    R *tau;                                 /* ACM_LI2020 tau* or NULL */
    acm_row_fn kernel;
    double u2_limit;
    R *dst;                                 /* the array the step writes */
} S(row_job);

/* Collide cells [x0, x0 + n) of row `row` (populations fin, fout: [27][nx]). */
static void S(collide_part)(const acm_domain *d, const cpu_impl *m, const S(row_job) *job,
                            const acm_collide_params *params, int64_t row, int32_t x0,
                            int32_t n, const R *fin, R *fout, acm_row_sums *acc)
{
    if (n <= 0)
        return;
    const size_t at = (size_t)row + (size_t)x0;
    acm_row_args a;
    a.params = params;
    a.n = n;
    a.stride = d->nx;
    a.fin = fin + x0;
    a.fout = fout + x0;
    for (int b = 0; b < 3; ++b) {
        const size_t plane = (size_t)b * (size_t)d->ncells + at;
        a.force[b] = job->force ? (const void *)(job->force + plane) : m->zeros;
        a.force_ib[b] = job->force_ib ? (const void *)(job->force_ib + plane) : m->zeros;
        a.force0[b] = d->setup.body_force[b];
    }
    a.tau = job->tau ? (void *)(job->tau + at) : NULL;
    a.scratch = fout + (size_t)ACM_Q * (size_t)d->nx; /* 5 nx reals after fout */
    a.u2_limit = job->u2_limit;
    a.project = m->mom_bits;
    acm_row_diag diag;
    job->kernel(&a, &diag);
    acm_row_sums_add(acc, &diag, row + x0);
}

/* Collide row (y, z): the cells next to a non-periodic face with the face
 * parameters (acm__face_collide_params), the others with the interior ones. */
static void S(collide_row)(const acm_domain *d, const cpu_impl *m, const S(row_job) *job,
                           int32_t y, int32_t z, const R *fin, R *fout, acm_row_sums *acc)
{
    const int32_t nx = d->nx;
    const int64_t row = ((int64_t)z * d->ny + y) * nx;
    const acm_face_bc *f = d->setup.face;
    const bool at_face = (y == 0 && acm_face_takes_rule(f[ACM_FACE_Y_MIN].type)) ||
                         (y == d->ny - 1 && acm_face_takes_rule(f[ACM_FACE_Y_MAX].type)) ||
                         (z == 0 && acm_face_takes_rule(f[ACM_FACE_Z_MIN].type)) ||
                         (z == d->nz - 1 && acm_face_takes_rule(f[ACM_FACE_Z_MAX].type));
    const acm_collide_params *face = job->faces ? &job->face_params : &job->params;
    if (at_face || !job->faces) {
        S(collide_part)(d, m, job, at_face ? face : &job->params, row, 0, nx, fin, fout, acc);
        return;
    }
    const int32_t lo = acm_face_takes_rule(f[ACM_FACE_X_MIN].type) ? 1 : 0;
    const int32_t hi = acm_face_takes_rule(f[ACM_FACE_X_MAX].type) && nx - lo > 0 ? 1 : 0;
    S(collide_part)(d, m, job, face, row, 0, lo, fin, fout, acc);
    S(collide_part)(d, m, job, &job->params, row, lo, nx - lo - hi, fin, fout, acc);
    S(collide_part)(d, m, job, face, row, nx - hi, hi, fin, fout, acc);
}

/* What every row of this step collides with (the same in both parts of a
 * split step: d->prev changes only once the step is complete). */
static void S(row_job_init)(const acm_domain *d, const cpu_impl *m, S(row_job) *job)
{
    acm__domain_collide_params(d, &job->params);
    job->faces = acm__face_collide_params(&job->params, &job->face_params);
    job->dst = m->in_place ? S(state)(m) : (R *)m->f[1 - m->cur];
    job->force = (const R *)m->force;
    job->force_ib = (const R *)m->ib.force;
    job->tau = d->setup.coll.model == ACM_COLLISION_ACM_LI2020 ? (R *)m->tau : NULL;
    job->kernel = sizeof(R) == sizeof(float) ? m->kernels->collide_row_f32
                                             : m->kernels->collide_row_f64;
    job->u2_limit = d->setup.max_speed * d->setup.max_speed;
}

/* Pull-stream and collide the rows of planes [z0, z1) into job->dst, each
 * row's sums into m->row_sums. */
static void S(step_planes)(const acm_domain *d, cpu_impl *m, const S(row_job) *job, int32_t z0,
                           int32_t z1)
{
    const int32_t nx = d->nx;
    const int64_t r0 = (int64_t)z0 * d->ny, r1 = (int64_t)z1 * d->ny;
    R *dst = job->dst;
#pragma omp parallel num_threads(m->nthreads) if ((r1 - r0) * nx >= ACM_CPU_PARALLEL_MIN)
    {
        int t = acm_thread_id();
        R *fin = (R *)m->scratch[t];
        R *fout = fin + (size_t)ACM_Q * (size_t)nx;
#pragma omp for schedule(static)
        for (int64_t r = r0; r < r1; ++r) {
            int32_t y = (int32_t)(r % d->ny), z = (int32_t)(r / d->ny);
            int64_t row = r * nx;
            acm_row_sums *acc = &m->row_sums[r];
            acm_row_sums_clear(acc);
            S(physical_row)(d, m, y, z, fin);
            S(collide_row)(d, m, job, y, z, fin, fout, acc);
            if (m->in_place && m->parity == 1)
                S(push_row)(d, dst, y, z, fout);
            else
                for (int i = 0; i < ACM_Q; ++i) /* in place: into the opposite slot */
                    S(store_range)(dst, d->layout.csoa, row, nx, m->in_place ? acm_opp(i) : i,
                                   fout + (size_t)i * (size_t)nx);
        }
    }
}

/* Once every row stepped: the sums, the divergence check, the new state and
 * (unless `layered`: a split step applied them part by part) its face layers. */
static acm_status S(finish_step)(acm_domain *d, cpu_impl *m, R *dst, bool layered)
{
    acm_row_sums total;
    acm_cpu_fold_rows(d, m, m->planes, &total);
    if (m->in_place) /* the new state is in place, diverged or not */
        m->parity = 1 - m->parity;
    if (total.first_bad >= 0)
        return acm_cpu_report_divergence(d, m, &total);
    if (!m->in_place)
        m->cur = 1 - m->cur;
    if (!layered) {
        int32_t z0, z1;
        acm__stepped_planes(d, &z0, &z1);
        S(apply_layers)(d, m, dst, z0, z1);
    }
    d->step++;
    d->fallback_last = total.fallbacks;
    d->fallback_total += total.fallbacks;
    acm__prev_from_planes(&d->prev, NULL, m->planes, acm__own_planes(d),
                          (double)acm__own_planes(d) * d->nx * d->ny);
    return ACM_OK;
}

static void S(project_state)(const acm_domain *d, cpu_impl *m);

/* Moment storage whose model now takes the other closure (acm_domain_set_collision
 * between CM-MRT and another model): the state's populations projected again,
 * those the GPU rebuilds from the same moments (backend.c calls it before a
 * step and before the state is read). */
static void S(follow_closure)(const acm_domain *d, cpu_impl *m)
{
    if (m->mom_bits != 0 && m->mom_closure != acm_mom_closure(d->setup.coll.model))
        S(project_state)(d, m);
}

/* The fluid part of one step: pull-stream, collide with the external and the
 * immersed-boundary force, face layers. */
static acm_status S(advance)(acm_domain *d, cpu_impl *m)
{
    if (d->setup.coll.model == ACM_COLLISION_ACM_LI2020)
        ACM_TRY(acm_cpu_ensure_tau(d, m));
    S(row_job) job;
    S(row_job_init)(d, m, &job);
    int32_t z0, z1;
    acm__stepped_planes(d, &z0, &z1);
    S(step_planes)(d, m, &job, z0, z1);
    return S(finish_step)(d, m, job.dst, false);
}

/* A slab's step in two parts (backend.h advance_edges): the planes its
 * neighbours copy, with their layers, then f[cur] is the new state;
 * advance_rest steps the others. Whole when it cannot be split. */
static acm_status S(advance_edges)(acm_domain *d, cpu_impl *m)
{
    int32_t lo, hi, z0, z1;
    acm__edge_planes(d, &lo, &hi);
    acm__stepped_planes(d, &z0, &z1);
    m->split = !m->in_place && lo < hi;
    if (!m->split)
        return S(advance)(d, m);
    if (d->setup.coll.model == ACM_COLLISION_ACM_LI2020)
        ACM_TRY(acm_cpu_ensure_tau(d, m));
    S(row_job) job;
    S(row_job_init)(d, m, &job);
    S(step_planes)(d, m, &job, z0, lo);
    S(step_planes)(d, m, &job, hi, z1);
    S(apply_layers)(d, m, job.dst, z0, lo);
    S(apply_layers)(d, m, job.dst, hi, z1);
    m->cur = 1 - m->cur;
    return ACM_OK;
}

static acm_status S(advance_rest)(acm_domain *d, cpu_impl *m)
{
    if (!m->split)
        return ACM_OK;
    m->split = false;
    int32_t lo, hi;
    acm__edge_planes(d, &lo, &hi);
    m->cur = 1 - m->cur; /* back to the state before the step, which the rows read */
    S(row_job) job;
    S(row_job_init)(d, m, &job);
    S(step_planes)(d, m, &job, lo, hi);
    S(apply_layers)(d, m, job.dst, lo, hi);
    return S(finish_step)(d, m, job.dst, true);
}

/* ---- initialisation and fields ---------------------------------------------------- */

/* Refresh the previous-step statistics from the current state. */
static void S(refresh_prev)(acm_domain *d, cpu_impl *m)
{
    acm_cpu_sums s;
    S(diagnose)(d, m, &s);
    const int32_t n = acm__own_planes(d);
    acm__prev_from_planes(&d->prev, NULL, m->planes, n, (double)n * d->nx * d->ny);
}

/* Moment storage: every cell of the current state f[cur] replaced by the
 * populations of its moments as stored (a state set from populations keeps
 * what the storage holds of it). */
static void S(project_state)(const acm_domain *d, cpu_impl *m)
{
    if (m->mom_bits == 0)
        return;
    m->mom_closure = acm_mom_closure(d->setup.coll.model);
    R *f = S(state)(m);
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    for (int64_t k = 0; k < d->ncells; ++k) {
        R g[ACM_Q];
        for (int i = 0; i < ACM_Q; ++i)
            g[i] = f[acm_csoa_index(d->layout.csoa, (uint64_t)k, (uint32_t)i)];
        S(acm_mom_project)(g, m->mom_bits, acm_mom_closure(d->setup.coll.model));
        for (int i = 0; i < ACM_Q; ++i)
            f[acm_csoa_index(d->layout.csoa, (uint64_t)k, (uint32_t)i)] = g[i];
    }
}

/* The array to write a physical state into before S(adopt_physical). */
static R *S(physical_target)(const cpu_impl *m)
{
    return (R *)m->f[m->in_place ? 0 : 1 - m->cur];
}

/* Make the physical state written to S(physical_target) the current state:
 * in place it already is (parity 0); two arrays inverse-stream it. */
static void S(adopt_physical)(const acm_domain *d, cpu_impl *m)
{
    if (m->in_place)
        m->parity = 0;
    else
        S(unstream_into_current)(d, m);
}

static void S(init_equilibrium)(acm_domain *d, cpu_impl *m, const acm_init_source *src)
{
    R *phys = S(physical_target)(m);
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    for (int64_t k = 0; k < d->ncells; ++k) {
        R rho = (R)(src->rho ? acm__load(src->dtype, src->rho, (size_t)k) : src->rho0), u[3], e[ACM_Q];
        for (int a = 0; a < 3; ++a)
            u[a] = (R)(src->u ? acm__load(src->dtype, src->u, 3 * (size_t)k + (size_t)a) : src->u0[a]);
        S(equilibrium)(rho, u, e);
        for (int i = 0; i < ACM_Q; ++i)
            phys[acm_csoa_index(d->layout.csoa, (uint64_t)k, (uint32_t)i)] = e[i];
    }
    S(adopt_physical)(d, m);
    S(project_state)(d, m);
    if (m->tau != NULL)
        acm_cpu_reset_tau(d, m);
    S(refresh_prev)(d, m);
}

static void S(set_populations)(acm_domain *d, cpu_impl *m, acm_dtype dtype, const void *src)
{
    R *phys = S(physical_target)(m);
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    for (int64_t k = 0; k < d->ncells; ++k)
        for (int i = 0; i < ACM_Q; ++i)
            phys[acm_csoa_index(d->layout.csoa, (uint64_t)k, (uint32_t)i)] =
                (R)(acm__load(dtype, src, (size_t)k * ACM_Q + (size_t)i) - acm_weight(i));
    S(adopt_physical)(d, m);
    S(project_state)(d, m);
    S(refresh_prev)(d, m);
}

typedef struct S(field_ctx) {
    acm_field field;
    acm_dtype dtype;
    void *dst;
} S(field_ctx);

static void S(field_row)(const acm_domain *d, const cpu_impl *m, int32_t y, int32_t z,
                         const R *f, void *ctx, int thread)
{
    (void)thread;
    const S(field_ctx) *c = (const S(field_ctx) *)ctx;
    const int32_t nx = d->nx;
    const int64_t row = (int64_t)nx * (y + (int64_t)d->ny * z);
    for (int32_t x = 0; x < nx; ++x) {
        size_t k = (size_t)(row + x);
        if (c->field == ACM_FIELD_POPULATIONS) {
            for (int i = 0; i < ACM_Q; ++i)
                acm__store(c->dtype, c->dst, k * ACM_Q + (size_t)i,
                           (double)f[(size_t)i * (size_t)nx + (size_t)x] + acm_weight(i));
            continue;
        }
        double rho, j[3], F[3];
        S(moments)(f + x, (size_t)nx, &rho, j);
        if (c->field == ACM_FIELD_DENSITY) {
            acm__store(c->dtype, c->dst, k, rho);
            continue;
        }
        S(cell_force_total)(d, m, row + x, F);
        for (int a = 0; a < 3; ++a)
            acm__store(c->dtype, c->dst, 3 * k + (size_t)a, (j[a] + 0.5 * F[a]) / rho);
    }
}

static void S(get_field)(const acm_domain *d, cpu_impl *m, acm_field field, acm_dtype dtype,
                         void *dst)
{
    if (field == ACM_FIELD_FORCE) {
        for (int64_t k = 0; k < d->ncells; ++k) {
            double F[3];
            S(cell_force)(d, m, k, F);
            for (int a = 0; a < 3; ++a)
                acm__store(dtype, dst, 3 * (size_t)k + (size_t)a, F[a]);
        }
        return;
    }
    S(field_ctx) c = {field, dtype, dst};
    S(visit_rows)(d, m, S(field_row), &c);
}

static void S(set_force)(const acm_domain *d, cpu_impl *m, acm_dtype dtype, const void *src)
{
    R *pl = (R *)m->force;
    for (int64_t k = 0; k < d->ncells; ++k)
        for (int a = 0; a < 3; ++a)
            pl[(size_t)a * (size_t)d->ncells + (size_t)k] =
                (R)acm__load(dtype, src, 3 * (size_t)k + (size_t)a);
}

/* ---- state transfers (lib/engine/state.h) ------------------------------------------------- */

/* Per-cell planes of `comp` components <-> interleaved doubles. */
static void S(planes_save)(const acm_domain *d, const void *planes, int comp, double *dst)
{
    const R *p = (const R *)planes;
    const size_t n = (size_t)d->ncells;
    for (size_t k = 0; k < n; ++k)
        for (int a = 0; a < comp; ++a)
            dst[k * (size_t)comp + (size_t)a] = (double)p[(size_t)a * n + k];
}

static void S(planes_load)(const acm_domain *d, void *planes, int comp, const double *src)
{
    R *p = (R *)planes;
    const size_t n = (size_t)d->ncells;
    for (size_t k = 0; k < n; ++k)
        for (int a = 0; a < comp; ++a)
            p[(size_t)a * n + k] = (R)src[k * (size_t)comp + (size_t)a];
}

/* The stored populations in canonical order: f*_i(x) at (x, i) (two arrays,
 * or in place at parity 1 from the opposite slots), or the physical state
 * (in place at parity 0). No streaming, so nothing is rounded. */
static void S(state_save)(const acm_domain *d, const cpu_impl *m, acm_state *st)
{
    const R *src = S(state)(m);
    const int swap = m->in_place && m->parity == 1;
    st->form = m->in_place && m->parity == 0 ? ACM_FORM_PHYSICAL : ACM_FORM_POST_COLLISION;
    st->mom_bits = m->mom_bits;
    st->mom_closure = 1 + m->mom_closure;
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    for (int64_t k = 0; k < d->ncells; ++k)
        for (int i = 0; i < ACM_Q; ++i)
            st->f[(size_t)k * ACM_Q + (size_t)i] =
                (double)src[acm_csoa_index(d->layout.csoa, (uint64_t)k, (uint32_t)(swap ? acm_opp(i) : i))];
    if (st->force != NULL)
        S(planes_save)(d, m->force, 3, st->force);
    if (st->tau != NULL)
        S(planes_save)(d, m->tau, 1, st->tau);
    if (st->ib_force != NULL)
        S(planes_save)(d, m->ib.force, 3, st->ib_force);
}

/* The populations of a saved state into this layout: a post-collision state
 * into f[cur] (two arrays) or the opposite slots (in place, parity 1); a
 * physical state into f[0] (in place, parity 0) or, with two arrays, through
 * the inverse pull (exact but for the moving-wall terms it subtracts). */
static void S(state_load_populations)(acm_domain *d, cpu_impl *m, const acm_state *st)
{
    const int physical = st->form == ACM_FORM_PHYSICAL;
    const int swap = m->in_place && !physical;
    R *dst = m->in_place ? (R *)m->f[0] : physical ? S(physical_target)(m) : S(state)(m);
#pragma omp parallel for schedule(static) num_threads(m->nthreads) if (d->ncells >= ACM_CPU_PARALLEL_MIN)
    for (int64_t k = 0; k < d->ncells; ++k)
        for (int i = 0; i < ACM_Q; ++i)
            dst[acm_csoa_index(d->layout.csoa, (uint64_t)k, (uint32_t)(swap ? acm_opp(i) : i))] =
                (R)st->f[(size_t)k * ACM_Q + (size_t)i];
    if (m->in_place)
        m->parity = physical ? 0 : 1;
    else if (physical)
        S(unstream_into_current)(d, m);
    if (physical || st->mom_bits != m->mom_bits) /* else already what the storage holds */
        S(project_state)(d, m);
    else if (m->mom_bits != 0) /* a later step or read follows the model (follow_closure) */
        m->mom_closure = st->mom_closure > 0 ? st->mom_closure - 1
                                             : acm_mom_closure(d->setup.coll.model);
}

static void S(probe)(const acm_domain *d, cpu_impl *m, int32_t x, int32_t y, int32_t z,
                     double *rho, double u[3])
{
    R *fin = (R *)m->scratch[0];
    S(physical_row)(d, m, y, z, fin);
    double j[3], F[3];
    S(moments)(fin + x, (size_t)d->nx, rho, j);
    S(cell_force_total)(d, m, x + (int64_t)d->nx * (y + (int64_t)d->ny * z), F);
    for (int a = 0; a < 3; ++a)
        u[a] = (j[a] + 0.5 * F[a]) / *rho;
}

#undef R
#undef S
