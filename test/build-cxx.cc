/*
 * libacmlbm tests -- the public headers compile as C++ (-Wall -Wextra
 * -Werror -pedantic; style guide R2) and the API is usable from it: the
 * extern "C" guards give C linkage, the static initialisers are valid
 * aggregate initialisers.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <acmlbm/acmlbm.h>

#include <cstdio>
#include <vector>

namespace {

struct domain_guard {
    acm_domain *d;
    explicit domain_guard(acm_domain *p) : d(p) {}
    ~domain_guard() { acm_domain_destroy(d); }
    domain_guard(const domain_guard &) = delete;
    domain_guard &operator=(const domain_guard &) = delete;
};

} // namespace

int main()
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = 4;
    o.ny = 3;
    o.nz = 3;
    o.viscosity = 0.05;
    o.backend = ACM_BACKEND_CPU;
    o.precision = ACM_PRECISION_FP64;
    char err[128] = "";
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_domain *raw = nullptr;
    acm_status st = acm_domain_create(&raw, &o);
    if (st != ACM_OK) {
        std::printf("acm_domain_create: %s: %s\n", acm_status_string(st), err);
        return 1;
    }
    domain_guard d(raw);

    acm_collision_options c = ACM_COLLISION_OPTIONS_INIT;
    c.model = ACM_COLLISION_CM_MRT;
    const double lid[3] = {0.02, 0.0, 0.0};
    size_t bytes = 0;
    if (acm_domain_set_collision(d.d, &c) != ACM_OK ||
        acm_domain_set_face(d.d, ACM_FACE_Y_MAX, ACM_BOUNDARY_WALL, lid) != ACM_OK ||
        acm_domain_set_face(d.d, ACM_FACE_Y_MIN, ACM_BOUNDARY_WALL, nullptr) != ACM_OK ||
        acm_step(d.d, 3) != ACM_OK ||
        acm_domain_field_size(d.d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, &bytes) != ACM_OK) {
        std::printf("failed: %s\n", acm_domain_last_error(d.d));
        return 1;
    }
    std::vector<double> rho(bytes / sizeof(double));
    if (acm_domain_get_field(d.d, ACM_FIELD_DENSITY, ACM_DTYPE_FLOAT64, rho.data(), bytes) !=
        ACM_OK) {
        std::printf("get_field: %s\n", acm_domain_last_error(d.d));
        return 1;
    }
    double mass = 0.0;
    for (double r : rho)
        mass += r;
    if (rho.size() != 36 || mass < 35.99 || mass > 36.01) {
        std::printf("unexpected density field: %zu cells, mass %g\n", rho.size(), mass);
        return 1;
    }
    static const double v[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    static const uint32_t t[12] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3};
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    acm_mesh *m = nullptr;
    acm_mesh_info info = acm_mesh_info();
    info.version = ACM_MESH_INFO_VERSION;
    if (acm_mesh_create(&m, v, 4, t, 4, &mo) != ACM_OK || acm_mesh_get_info(m, &info) != ACM_OK ||
        info.closed != 1) {
        std::printf("mesh: %s\n", err);
        acm_mesh_destroy(m);
        return 1;
    }
    acm_mesh_destroy(m);
    std::printf("C++ build of libacmlbm %s headers: ok\n", acm_version_string());
    return 0;
}
