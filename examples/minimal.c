/*
 * libacmlbm example -- the smallest complete program: a periodic box of
 * fluid at rest, pushed by a uniform body force F. Momentum grows by F per
 * step, and the reported (half-force) velocity after t steps is F (t + 1/2).
 * SPDX-License-Identifier: Apache-2.0
 */
#include <math.h>  /* fabs */
#include <stdio.h> /* printf, fprintf */

#include <acmlbm/acmlbm.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        acm_status st_ = (call);                                                           \
        if (st_ != ACM_OK) {                                                               \
            fprintf(stderr, "%s: %s: %s\n", #call, acm_status_string(st_),                 \
                    d != NULL ? acm_domain_last_error(d) : err);                           \
            acm_domain_destroy(d);                                                         \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void)
{
    char err[256] = "";
    acm_domain *d = NULL;
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT; /* every face starts periodic */
    o.nx = o.ny = o.nz = 16;
    o.viscosity = 0.05;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    CHECK(acm_domain_create(&d, &o));

    const double force[3] = {1e-5, 0.0, 0.0};
    CHECK(acm_domain_set_body_force(d, force));
    CHECK(acm_step(d, 100));

    double rho = 0.0, u[3] = {0.0, 0.0, 0.0};
    CHECK(acm_domain_probe(d, 8, 8, 8, &rho, u));
    const double expected = force[0] * (100 + 0.5);
    printf("after 100 steps: rho = %.6f, u_x = %.6e (expected %.6e)\n", rho, u[0], expected);
    acm_domain_destroy(d);
    return fabs(u[0] - expected) < 1e-3 * expected ? 0 : 1;
}
