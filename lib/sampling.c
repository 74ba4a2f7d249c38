/* temporary stub until the sampling branch is merged */
#include "sampling.h"
acm_status acm__sample_surface(const double *v, const uint32_t *t, size_t ntris, double density,
                               uint64_t seed, uint64_t max_samples, acm_surface_samples *out,
                               char *msg, size_t msg_size)
{
    (void)v; (void)t; (void)ntris; (void)density; (void)seed; (void)max_samples; (void)out;
    acm__format(msg, msg_size, "sampling not merged yet");
    return ACM_ERR_NOT_BUILT;
}
void acm__surface_samples_free(acm_surface_samples *s) { (void)s; }
