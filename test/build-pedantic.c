/*
 * libacmlbm tests -- the public headers compile as strict C99
 * (-std=c99 -pedantic -Werror -Wall -Wextra; style guide R2). Building this
 * file is the test; running it also checks that the static initialisers and
 * a few calls link.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <acmlbm/acmlbm.h>

#include <stdio.h> /* printf */

int main(void)
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
    acm_domain *d = NULL;
    acm_status st;
    double rho = 0.0;

    o.nx = o.ny = o.nz = 3;
    o.viscosity = 0.05;
    o.backend = ACM_BACKEND_CPU;
    st = acm_domain_create(&d, &o);
    if (st != ACM_OK) {
        printf("acm_domain_create: %s\n", acm_status_string(st));
        return 1;
    }
    c.model = ACM_COLLISION_BGK;
    if (acm_domain_set_collision(d, &c) != ACM_OK || acm_step(d, 2) != ACM_OK ||
        acm_domain_probe(d, 1, 1, 1, &rho, NULL) != ACM_OK || rho < 0.999 || rho > 1.001) {
        printf("failed: %s\n", acm_domain_last_error(d));
        acm_domain_destroy(d);
        return 1;
    }
    acm_domain_destroy(d);
    {
        static const double v[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
        static const uint32_t t[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
        acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
        acm_mesh_info info;
        acm_mesh *m = NULL;
        info.version = ACM_MESH_INFO_VERSION;
        if (acm_mesh_create(&m, v, 4, t, 4, &mo) != ACM_OK ||
            acm_mesh_get_info(m, &info) != ACM_OK || info.closed != 1) {
            printf("mesh failed\n");
            acm_mesh_destroy(m);
            return 1;
        }
        acm_mesh_destroy(m);
    }
    printf("C99 build of libacmlbm %s headers: ok\n", acm_version_string());
    return 0;
}
