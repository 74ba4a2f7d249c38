/*
 * libacmlbm examples -- the run loop, frames and video of the smoke scenes (smoke_scene.h).
 * SPDX-License-Identifier: Apache-2.0
 */
#include "smoke_scene.h"

#include <errno.h>     /* errno, EEXIST */
#include <math.h>      /* sqrt */
#include <stdio.h>     /* printf, fprintf, snprintf */
#include <stdlib.h>    /* malloc, free, getenv */
#include <string.h>    /* strcmp, strerror, memcpy, memset, strlen */
#include <sys/stat.h>  /* mkdir, stat */
#include <sys/types.h> /* pid_t */
#include <sys/wait.h>  /* waitpid */
#include <unistd.h>    /* access, fork, execvp, _exit */

#include "png_writer.h"

#define SS_FPS "24"

/* ---- command line -------------------------------------------------------------------- */

int ss_parse(const char *prog, int argc, char **argv, const sc_option *opts, size_t nopts,
             ss_args *a)
{
    char **rest = malloc(((size_t)argc + 1) * sizeof *rest);
    if (rest == NULL) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return 2;
    }
    int n = 0;
    a->video = 0;
    for (int k = 0; k < argc; ++k) { /* the flag has no value: take it out first */
        if (k > 0 && strcmp(argv[k], "--video") == 0)
            a->video = 1;
        else
            rest[n++] = argv[k];
    }
    rest[n] = NULL;
    int rc = sc_parse_args(prog, "[options] [--video]", n, rest, opts, nopts, NULL);
    free(rest);
    if (rc == 1)
        printf("  %-22s %s\n", "--video",
               "after the frames, make DIR/NAME.mp4 with ffmpeg (libx264) if it is on PATH");
    return rc;
}

/* ---- library calls ------------------------------------------------------------------- */

acm_domain *ss_domain_create(const char *prog, const ss_args *a, double viscosity,
                             const double velocity[3])
{
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT;
    o.nx = a->size[0];
    o.ny = a->size[1];
    o.nz = a->size[2];
    o.viscosity = viscosity;
    o.backend = (acm_backend)a->backend;
    if (velocity != NULL)
        memcpy(o.initial_velocity, velocity, sizeof o.initial_velocity);
    acm_domain *d = sc_domain_create(prog, &o);
    if (d != NULL && sc_print_domain(prog, d) != 0) {
        acm_domain_destroy(d);
        return NULL;
    }
    return d;
}

int ss_set_face(const char *prog, acm_domain *d, acm_face face, acm_boundary type,
                const double velocity[3])
{
    acm_status st = acm_domain_set_face(d, face, type, velocity);
    return sc_failed(prog, st, "acm_domain_set_face", acm_domain_last_error(d)) ? -1 : 0;
}

int ss_add_mesh_solid(const char *prog, acm_domain *d, shapes_mesh *mesh, acm_solid_options *so,
                      acm_solid **out)
{
    char err[512] = "";
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    acm_mesh *m = NULL;
    acm_status st = acm_mesh_create(&m, mesh->v, mesh->nv, mesh->t, mesh->nt, &mo);
    shapes_free(mesh);
    if (sc_failed(prog, st, "acm_mesh_create", err))
        return -1;
    so->mesh = m;
    acm_solid_info info;
    const int rc = sc_add_solid(prog, d, so, out, &info);
    so->mesh = NULL;
    acm_mesh_destroy(m);
    if (rc == 0)
        printf("solid: %llu surface samples, area %.0f cells^2\n",
               (unsigned long long)info.sample_count, info.area);
    return rc;
}

int ss_add_emitter(const char *prog, acm_smoke *smoke, const acm_emitter *e, acm_status *status)
{
    acm_status st = acm_smoke_add_emitter(smoke, e);
    if (status != NULL)
        *status = st;
    return sc_failed(prog, st, "acm_smoke_add_emitter", acm_smoke_last_error(smoke)) ? -1 : 0;
}

double ss_random(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- one frame ----------------------------------------------------------------------- */

/* Buffers of one frame, refilled for each. */
typedef struct frame_data {
    float *density;
    size_t cells;
    double *samples[SS_MAX_SOLIDS];
    size_t nsamples[SS_MAX_SOLIDS];
    uint8_t *rgb;
} frame_data;

static void frame_data_free(frame_data *fd)
{
    free(fd->density);
    for (size_t k = 0; k < SS_MAX_SOLIDS; ++k)
        free(fd->samples[k]);
    free(fd->rgb);
    memset(fd, 0, sizeof *fd);
}

static int read_density(const char *prog, const ss_scene *s, frame_data *fd)
{
    const int64_t k = s->args->sub;
    fd->cells = (size_t)(s->args->size[0] * k) * (size_t)(s->args->size[1] * k) *
                (size_t)(s->args->size[2] * k);
    if (fd->density == NULL && (fd->density = malloc(fd->cells * sizeof *fd->density)) == NULL) {
        fprintf(stderr, "%s: out of memory for a density grid of %zu voxels\n", prog, fd->cells);
        return -1;
    }
    acm_status st = acm_smoke_density(s->smoke, (int32_t)k, fd->density, fd->cells);
    return sc_failed(prog, st, "acm_smoke_density", acm_smoke_last_error(s->smoke)) ? -1 : 0;
}

static int read_samples(const char *prog, const ss_scene *s, frame_data *fd)
{
    for (size_t k = 0; k < s->nsolids; ++k) {
        acm_solid_info info;
        memset(&info, 0, sizeof info);
        info.version = ACM_SOLID_INFO_VERSION;
        acm_status st = acm_solid_get_info(s->solids[k], &info);
        if (sc_failed(prog, st, "acm_solid_get_info", acm_solid_last_error(s->solids[k])))
            return -1;
        if (fd->samples[k] == NULL || fd->nsamples[k] != info.sample_count) {
            free(fd->samples[k]);
            fd->nsamples[k] = (size_t)info.sample_count;
            if ((fd->samples[k] = malloc(3 * fd->nsamples[k] * sizeof(double) + 1)) == NULL) {
                fprintf(stderr, "%s: out of memory for %zu samples\n", prog, fd->nsamples[k]);
                return -1;
            }
        }
        st = acm_solid_get_samples(s->solids[k], fd->samples[k], fd->nsamples[k]);
        if (sc_failed(prog, st, "acm_solid_get_samples", acm_solid_last_error(s->solids[k])))
            return -1;
    }
    return 0;
}

/* The splat radius: 1.5 times the mean spacing of the samples (16 per cell^2: 0.25), so
 * that the discs close the surface; also the radius of the neighbourhood that gives
 * each sample its normal (about 7 neighbours). */
static double splat_radius(const ss_scene *s, size_t k)
{
    acm_solid_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_SOLID_INFO_VERSION;
    if (acm_solid_get_info(s->solids[k], &info) != ACM_OK || info.sample_count == 0)
        return 0.5;
    const double spacing = sqrt(info.area / (double)info.sample_count);
    return 1.5 * spacing;
}

static int render_frame(const char *prog, ss_scene *s, frame_data *fd, const char *path)
{
    if (read_density(prog, s, fd) != 0 || read_samples(prog, s, fd) != 0)
        return -1;
    const double k = (double)s->args->sub;
    const vr_volume vol = {fd->density,
                           {(int32_t)(s->args->size[0] * s->args->sub),
                            (int32_t)(s->args->size[1] * s->args->sub),
                            (int32_t)(s->args->size[2] * s->args->sub)},
                           1.0 / k,
                           {0.5 / k - 0.5, 0.5 / k - 0.5, 0.5 / k - 0.5}};
    vr_splats splats[SS_MAX_SOLIDS];
    for (size_t j = 0; j < s->nsolids; ++j) {
        splats[j].xyz = fd->samples[j];
        splats[j].count = fd->nsamples[j];
        splats[j].radius = splat_radius(s, j);
        memcpy(splats[j].albedo, s->albedo[j], sizeof splats[j].albedo);
    }
    const size_t bytes = 3 * (size_t)s->view.width * s->view.height;
    if (fd->rgb == NULL && (fd->rgb = malloc(bytes)) == NULL) {
        fprintf(stderr, "%s: out of memory for the image\n", prog);
        return -1;
    }
    char err[512];
    if (vr_render(fd->rgb, &s->view, &vol, splats, s->nsolids, err, sizeof err) != 0 ||
        pngw_write_rgb(path, s->view.width, s->view.height, fd->rgb, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return -1;
    }
    return 0;
}

/* ---- output directory and video ------------------------------------------------------ */

static int make_dir(const char *prog, const char *dir)
{
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
            return 0;
        fprintf(stderr, "%s: --out %s: exists and is not a directory\n", prog, dir);
        return -1;
    }
    fprintf(stderr, "%s: cannot make the directory %s: %s\n", prog, dir, strerror(errno));
    return -1;
}

/* Whether an executable `name` is in one of the directories of PATH. */
static int on_path(const char *name)
{
    const char *path = getenv("PATH");
    char buf[4096];
    while (path != NULL && *path != '\0') {
        const char *end = strchr(path, ':');
        const size_t len = end != NULL ? (size_t)(end - path) : strlen(path);
        const int n = snprintf(buf, sizeof buf, "%.*s/%s", (int)len, len > 0 ? path : ".", name);
        if (n > 0 && (size_t)n < sizeof buf && access(buf, X_OK) == 0)
            return 1;
        path = end != NULL ? end + 1 : NULL;
    }
    return 0;
}

/* ffmpeg -framerate 24 -i DIR/NAME-%04d.png -c:v libx264 -pix_fmt yuv420p DIR/NAME.mp4; a
 * missing or failing ffmpeg is reported, never an error of the run. */
static void make_video(const char *prog, const ss_scene *s)
{
    char pattern[4096], video[4096];
    snprintf(pattern, sizeof pattern, "%s/%s-%%04d.png", s->args->out, s->name);
    snprintf(video, sizeof video, "%s/%s.mp4", s->args->out, s->name);
    if (!on_path("ffmpeg")) {
        fprintf(stderr,
                "%s: ffmpeg was not found on PATH, so no video; install it (Debian/Ubuntu: "
                "sudo apt-get install ffmpeg; Fedora: sudo dnf install ffmpeg; macOS: brew "
                "install ffmpeg) and run:\n  ffmpeg -framerate " SS_FPS " -i '%s' -c:v libx264 "
                "-pix_fmt yuv420p '%s'\n",
                prog, pattern, video);
        return;
    }
    char *const argv[] = {"ffmpeg", "-y", "-loglevel", "error", "-framerate", SS_FPS, "-i",
                          pattern, "-c:v", "libx264", "-pix_fmt", "yuv420p", "-vf",
                          "pad=ceil(iw/2)*2:ceil(ih/2)*2", video, NULL};
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        execvp("ffmpeg", argv);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s: ffmpeg failed (exit status %d); the frames are in %s\n", prog,
                WIFEXITED(status) ? WEXITSTATUS(status) : -1, s->args->out);
        return;
    }
    printf("wrote %s\n", video);
}

/* ---- the run ------------------------------------------------------------------------- */

static int64_t frame_step(const ss_args *a, int64_t k)
{
    return (int64_t)((double)(k + 1) * (double)a->steps / (double)a->frames + 0.5);
}

static uint64_t alive(const ss_scene *s)
{
    acm_smoke_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_SMOKE_INFO_VERSION;
    return acm_smoke_get_info(s->smoke, &info) == ACM_OK ? info.alive : 0;
}

int ss_run(ss_scene *s)
{
    const char *prog = s->name;
    const ss_args *a = s->args;
    s->view.width = (uint32_t)a->width;
    s->view.height = (uint32_t)(2 * (int64_t)(0.5 * (double)a->width / s->aspect + 0.5));
    if (s->view.height < 2)
        s->view.height = 2;
    if (make_dir(prog, a->out) != 0)
        return -1;
    frame_data fd;
    memset(&fd, 0, sizeof fd);
    int64_t done = 0;
    double t_step = 0.0, t_render = 0.0;
    int rc = 0;
    for (int64_t k = 0; k < a->frames && rc == 0; ++k) {
        const int64_t target = frame_step(a, k);
        double busy = 0.0;
        if (target > done && (rc = sc_step(prog, s->domain, target - done, &busy)) != 0)
            break;
        t_step += busy;
        const int64_t nsteps = target - done;
        done = target;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s-%04lld.png", a->out, s->name, (long long)k) >=
            (int)sizeof path) {
            fprintf(stderr, "%s: --out %s: the path is too long\n", prog, a->out);
            rc = -1;
            break;
        }
        const double t0 = sc_now();
        if ((rc = render_frame(prog, s, &fd, path)) != 0)
            break;
        const double dt = sc_now() - t0;
        t_render += dt;
        fprintf(stderr, "%s: frame %lld/%lld: step %lld/%lld, %llu particles, %.2f s for %lld "
                        "steps, %.2f s to render\n",
                prog, (long long)k + 1, (long long)a->frames, (long long)(s->steps_before + done),
                (long long)(s->steps_before + a->steps),
                (unsigned long long)alive(s), busy, (long long)nsteps, dt);
        printf("wrote %s\n", path);
        fflush(stdout);
    }
    frame_data_free(&fd);
    if (rc != 0)
        return -1;
    printf("%lld steps in %.1f s (%.2f ms/step), %lld frames of %ux%u rendered in %.1f s "
           "(%.0f ms/frame)\n",
           (long long)a->steps, t_step, a->steps > 0 ? 1e3 * t_step / (double)a->steps : 0.0,
           (long long)a->frames,
           s->view.width, s->view.height, t_render, 1e3 * t_render / (double)a->frames);
    if (a->video)
        make_video(prog, s);
    return 0;
}
