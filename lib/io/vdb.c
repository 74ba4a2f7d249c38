/*
 * libacmlbm -- OpenVDB export (acm_export.h), the C side: arguments checked
 * as by the other exporters, the values gathered (smoke density, fields),
 * the grids handed to the C++ writer module (export_vdb.h: loaded for each
 * export, never linked), and the file written as a temporary beside path
 * (acm__temp_create), synced and renamed over path only when complete.
 * Without OpenVDB every entry point answers ACM_ERR_NOT_BUILT.
 * SPDX-License-Identifier: Apache-2.0
 */
/* dladdr (where libacmlbm's own file is) is a GNU extension: glibc declares it
 * only with _GNU_SOURCE, which also keeps the POSIX 2008 interfaces that the
 * build asks for (-D_POSIX_C_SOURCE). */
#define _GNU_SOURCE
#include <dlfcn.h>  /* dlopen, dlsym, dlclose, dladdr */
#include <errno.h>  /* errno */
#include <stdio.h>  /* remove, snprintf */
#include <stdlib.h> /* malloc, free, getenv */
#include <string.h> /* memcpy, strchr, strcmp, strlen, strncmp, strrchr */
#include <unistd.h> /* fsync, close, access */

#include "alloc.h"
#include "guard.h"
#include "export.h"
#include "file.h" /* acm__temp_create, acm__temp_finish */
#include "export_vdb.h"
#include "smoke.h"
#include "vdb_config.h" /* ACM_VDB_BUILT, ACM_VDB_MODULE_*: its name and baked-in places */

/* Smoke densities at most this (particles per cell volume) stay inactive
 * (acm_export.h). */
#define VDB_DENSITY_CUTOFF 1e-6f

static const char not_built_msg[] =
    "this build of libacmlbm has no OpenVDB export: install OpenVDB (Debian: apt-get install "
    "libopenvdb-dev libboost-dev) and reconfigure with meson configure -Dopenvdb=enabled";

/* ---- the writer module ---------------------------------------------------------------- */

/* A loaded module: its handle (the loader keeps the module, RTLD_NODELETE,
 * so loading it again is cheap) and its table. */
typedef struct vdb_module {
    void *handle;
    const acm_vdb_writer *w;
} vdb_module;

/* "path: why" appended to msg, after a "; " where msg holds reasons already;
 * from says where the path came from (the environment), or is "". */
static void note(char *msg, size_t size, const char *from, const char *path, const char *why)
{
    const size_t used = strlen(msg);
    acm__format(msg + used, size - used, "%s%s%s: %s", used ? "; " : "", from, path, why);
}

/* The loader's reason without the "path: " it usually starts with (note names the path). */
static const char *loader_reason(const char *why, const char *path)
{
    if (why == NULL)
        return "cannot be loaded";
    const size_t n = strlen(path);
    return strncmp(why, path, n) == 0 && strncmp(why + n, ": ", 2) == 0 ? why + n + 2 : why;
}

/* Whether path names a file that is not there: said briefly, so that every
 * place fits the message (the loader's words for it are long). A name without
 * '/' is the loader's to search for. */
static bool absent(const char *path)
{
    return strchr(path, '/') != NULL && access(path, F_OK) != 0 && errno == ENOENT;
}

/* The module at path, if it loads and is of this library's version; else
 * false, with why appended to msg. */
static bool module_try(vdb_module *m, const char *path, const char *from, char *msg, size_t size)
{
    const bool gone = absent(path);
    void *h = gone ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (h == NULL) {
        note(msg, size, from, path, gone ? "no such file" : loader_reason(dlerror(), path));
        return false;
    }
    void *sym = dlsym(h, ACM_VDB_WRITER_ENTRY);
    acm_vdb_writer_entry entry = NULL;
    if (sym != NULL)
        memcpy(&entry, &sym, sizeof entry); /* object to function pointer, as POSIX allows */
    const acm_vdb_writer *w = entry != NULL ? entry() : NULL;
    if (w == NULL || strcmp(w->version, ACM_VERSION_STRING) != 0) {
        note(msg, size, from, path,
             w == NULL ? "no " ACM_VDB_WRITER_ENTRY : "of another version of libacmlbm");
        dlclose(h);
        return false;
    }
    m->handle = h;
    m->w = w;
    return true;
}

/* The variable that names the module's file, looked at first. */
#define VDB_MODULE_ENV "ACMLBM_VDB_MODULE"

/* Where the module is looked for, in order (acm_export.h), each path once:
 * the file ACMLBM_VDB_MODULE names; beside libacmlbm's own file, as installed
 * (<libdir>/acmlbm/) and side by side (a Python wheel's or a game's folder), so
 * that a moved tree finds its own; where meson install put it; the build tree. */
enum { VDB_PLACES = 5, VDB_PATH_SIZE = 4096 };
typedef struct vdb_places {
    const char *path[VDB_PLACES];
    const char *from[VDB_PLACES]; /* for messages: VDB_MODULE_ENV "=" or "" */
    size_t count;
    char near[2][VDB_PATH_SIZE]; /* the paths beside libacmlbm */
} vdb_places;

static void places_add(vdb_places *p, const char *path, const char *from)
{
    for (size_t k = 0; k < p->count; ++k)
        if (strcmp(p->path[k], path) == 0)
            return; /* a moved tree's path can be the baked one: tried once */
    p->path[p->count] = path;
    p->from[p->count] = from;
    p->count++;
}

/* The folder of libacmlbm's own file, with its final '/', as *dir and its length;
 * 0 where the loader does not say. dladdr is asked about an object of the
 * library: a function's address would need a function-to-object pointer
 * conversion, which ISO C does not have. */
static size_t self_dir(const char **dir)
{
    Dl_info info;
    if (dladdr(not_built_msg, &info) == 0 || info.dli_fname == NULL)
        return 0;
    const char *slash = strrchr(info.dli_fname, '/');
    *dir = info.dli_fname;
    return slash != NULL ? (size_t)(slash - info.dli_fname) + 1 : 0;
}

/* The two places beside libacmlbm; a path too long for VDB_PATH_SIZE is refused
 * and said in msg. */
static void places_near(vdb_places *p, char *msg, size_t size)
{
    const char *dir = NULL;
    const size_t n = self_dir(&dir);
    if (n == 0) {
        note(msg, size, "", "libacmlbm's own file", "its folder is unknown (dladdr)");
        return;
    }
    const char *const names[2] = {ACM_VDB_MODULE_SUBDIR "/" ACM_VDB_MODULE_NAME,
                                  ACM_VDB_MODULE_NAME};
    for (size_t k = 0; k < 2; ++k) {
        const int len = n < VDB_PATH_SIZE
            ? snprintf(p->near[k], VDB_PATH_SIZE, "%.*s%s", (int)n, dir, names[k])
            : VDB_PATH_SIZE;
        if (len > 0 && len < VDB_PATH_SIZE)
            places_add(p, p->near[k], "");
        else
            note(msg, size, "beside libacmlbm, ", names[k], "path too long");
    }
}

/* The OpenVDB writer module, from the first of its places that loads
 * (vdb_places); NOT_BUILT, with each place and why, when none does. */
static acm_status module_load(vdb_module *m, char *msg, size_t size)
{
    msg[0] = '\0';
    if (!ACM_VDB_BUILT) {
        acm__format(msg, size, "%s", not_built_msg);
        return ACM_ERR_NOT_BUILT;
    }
    vdb_places p;
    p.count = 0;
    const char *env = getenv(VDB_MODULE_ENV);
    if (env != NULL && env[0] != '\0')
        places_add(&p, env, VDB_MODULE_ENV "=");
    places_near(&p, msg, size);
    places_add(&p, ACM_VDB_MODULE_INSTALLED, "");
    places_add(&p, ACM_VDB_MODULE_BUILD, "");
    for (size_t k = 0; k < p.count; ++k)
        if (module_try(m, p.path[k], p.from[k], msg, size)) {
            msg[0] = '\0';
            return ACM_OK;
        }
    char why[ACM_ERROR_SIZE];
    acm__format(why, sizeof why, "%s", msg);
    acm__format(msg, size, "cannot load the OpenVDB writer module: %s", why);
    return ACM_ERR_NOT_BUILT;
}

ACM_API int acm_vdb_available(void)
{
    vdb_module m;
    char msg[ACM_ERROR_SIZE];
    if (module_load(&m, msg, sizeof msg) != ACM_OK)
        return 0;
    dlclose(m.handle);
    return 1;
}

/* ---- a file written whole or not at all -------------------------------------------- */

typedef struct vdb_out {
    int fd;
    const char *path;
    char tmp[4096];
    char error[ACM_ERROR_SIZE]; /* why it failed */
} vdb_out;

static acm_status out_open(vdb_out *x, const char *path)
{
    x->path = path;
    x->fd = -1;
    x->error[0] = '\0';
    x->fd = acm__temp_create(x->tmp, sizeof x->tmp, path, x->error, sizeof x->error);
    return x->fd >= 0 ? ACM_OK : ACM_ERR_IO;
}

/* Drop the temporary after a failure. */
static void out_abort(vdb_out *x)
{
    if (x->fd >= 0)
        close(x->fd);
    x->fd = -1;
    remove(x->tmp);
}

/* Complete the file: to the disk, then renamed over the path. */
static acm_status out_commit(vdb_out *x)
{
    int e = fsync(x->fd) != 0 ? errno : 0;
    if (close(x->fd) != 0 && e == 0)
        e = errno;
    x->fd = -1;
    return acm__temp_finish(x->tmp, x->path, e, x->error, sizeof x->error);
}

/* ---- an export under way: the module and the grids gathered ----------------------------- */

typedef struct vdb_job {
    vdb_module m;
    acm_vdb_file *f;
    char msg[ACM_ERROR_SIZE]; /* why it failed, where the handle has no message yet */
} vdb_job;

static acm_status job_start(vdb_job *j)
{
    j->m.handle = NULL;
    j->f = NULL;
    ACM_TRY(module_load(&j->m, j->msg, sizeof j->msg));
    return j->m.w->begin(&j->f, acm_version_string(), j->msg, sizeof j->msg);
}

static acm_status job_add(vdb_job *j, const acm_vdb_grid *g)
{
    return j->m.w->add(j->f, g, j->msg, sizeof j->msg);
}

/* The grids gathered, as the file at path, whole or not at all. */
static acm_status job_write(vdb_job *j, const char *path)
{
    vdb_out x;
    acm_status st = out_open(&x, path);
    if (st == ACM_OK) {
        st = j->m.w->write(j->f, x.fd, path, j->msg, sizeof j->msg);
        if (st != ACM_OK) {
            out_abort(&x);
            return st;
        }
        st = out_commit(&x);
    }
    if (st != ACM_OK)
        acm__format(j->msg, sizeof j->msg, "%s", x.error);
    return st;
}

static void job_end(vdb_job *j)
{
    if (j->m.handle == NULL)
        return;
    j->m.w->end(j->f);
    dlclose(j->m.handle);
}

/* ---- the smoke's density (and the fluid's velocity) ---------------------------------- */

/* The grid of one cell-centred field of the domain (3 or 1 components). */
static acm_vdb_grid cell_grid(const acm_domain *d, const char *name, const float *v, int32_t comps)
{
    const acm_vdb_grid g = {name, v, {d->nx, d->ny, d->nz}, comps, 1.0, 0.0, 0, 0.0f};
    return g;
}

/* The smoke's density grid: voxel size 1/s, voxel centres where
 * acm_smoke_density puts them. */
static acm_status add_density(acm_smoke *s, vdb_job *j, int32_t subdivisions)
{
    int32_t n[3];
    ACM_TRY(acm__smoke_grid(s, subdivisions, n));
    const size_t voxels = (size_t)n[0] * (size_t)n[1] * (size_t)n[2];
    float *v = acm__malloc(voxels * sizeof(float));
    if (v == NULL)
        return acm__smoke_fail(s, ACM_ERR_NO_MEMORY, "cannot hold %zu voxels", voxels);
    acm_status st = acm_smoke_density(s, subdivisions, v, voxels);
    if (st == ACM_OK) {
        const double h = 1.0 / subdivisions;
        const acm_vdb_grid g = {"density", v, {n[0], n[1], n[2]}, 1, h, 0.5 * h - 0.5, 1,
                                VDB_DENSITY_CUTOFF};
        st = job_add(j, &g);
    }
    acm__free(v);
    return st;
}

/* A field of the domain as FP32 (caller frees); errors recorded on the domain. */
static acm_status fetch_field(acm_domain *d, acm_field field, float **out)
{
    const size_t bytes = (size_t)d->ncells * (size_t)acm__field_components(field) * sizeof(float);
    float *v = acm__malloc(bytes);
    if (v == NULL)
        return ACM_FAIL(d, ACM_ERR_NO_MEMORY, "cannot hold a field (%.3g GB)", (double)bytes / 1e9);
    const acm_status st = acm_domain_get_field(d, field, ACM_DTYPE_FLOAT32, v, bytes);
    if (st != ACM_OK) {
        acm__free(v);
        return st;
    }
    *out = v;
    return ACM_OK;
}

/* The domain's velocity as the grid `vel`. */
static acm_status add_velocity(acm_smoke *s, vdb_job *j)
{
    float *v = NULL;
    const acm_status got = fetch_field(s->domain, ACM_FIELD_VELOCITY, &v);
    if (got != ACM_OK)
        return acm__smoke_fail(s, got, "%s", acm_domain_last_error(s->domain));
    const acm_vdb_grid g = cell_grid(s->domain, "vel", v, 3);
    const acm_status st = job_add(j, &g);
    acm__free(v);
    return st;
}

static acm_status smoke_export(acm_smoke *s, vdb_job *j, const char *path, int32_t subdivisions,
                               uint32_t flags)
{
    ACM_TRY(job_start(j));
    ACM_TRY(add_density(s, j, subdivisions));
    if (flags & ACM_VDB_VELOCITY)
        ACM_TRY(add_velocity(s, j));
    return job_write(j, path);
}

ACM_API acm_status acm_smoke_export_vdb(acm_smoke *smoke, const char *path, int32_t subdivisions,
                                        uint32_t flags)
{
    if (smoke == NULL)
        return ACM_ERR_NULL_POINTER;
    if (!ACM_VDB_BUILT)
        return acm__smoke_fail(smoke, ACM_ERR_NOT_BUILT, "%s", not_built_msg);
    if (path == NULL)
        return acm__smoke_fail(smoke, ACM_ERR_NULL_POINTER, "path is NULL");
    const uint32_t unknown = flags & ~(uint32_t)ACM_VDB_VELOCITY;
    if (unknown != 0)
        return acm__smoke_fail(smoke, ACM_ERR_BAD_ENUM, "unknown flags 0x%x", (unsigned)unknown);
    int32_t n[3];
    ACM_TRY(acm__smoke_grid(smoke, subdivisions, n)); /* before any work */
    vdb_job j;
    j.msg[0] = '\0';
    const acm_status st = smoke_export(smoke, &j, path, subdivisions, flags);
    job_end(&j);
    if (st != ACM_OK && j.msg[0] != '\0') /* else the failure is on the smoke already */
        return acm__smoke_fail(smoke, st, "%s", j.msg);
    return st;
}

/* ---- fields of a domain ---------------------------------------------------------------- */

static const char *grid_name(acm_field f)
{
    switch (f) {
    case ACM_FIELD_DENSITY: return "fluid_density";
    case ACM_FIELD_VELOCITY: return "vel";
    default: return "force";
    }
}

static acm_status check_fields(acm_domain *d, const acm_field *fields, size_t count)
{
    ACM_TRY(acm__export_check_fields(d, fields, count, grid_name));
    for (size_t k = 0; k < count; ++k)
        if (fields[k] == ACM_FIELD_POPULATIONS)
            return ACM_FAIL(d, ACM_ERR_UNSUPPORTED, "the populations (27 values a cell) have no "
                            "OpenVDB grid type; acm_domain_export_vti writes them");
    return ACM_OK;
}

/* Each field fetched, copied into the job as its grid, and freed before the
 * next; then the file. */
static acm_status fields_export(acm_domain *d, vdb_job *j, const char *path,
                                const acm_field *fields, size_t count)
{
    ACM_TRY(job_start(j));
    for (size_t k = 0; k < count; ++k) {
        float *v = NULL;
        ACM_TRY(fetch_field(d, fields[k], &v));
        const acm_vdb_grid g = cell_grid(d, grid_name(fields[k]), v,
                                         acm__field_components(fields[k]));
        const acm_status st = job_add(j, &g);
        acm__free(v);
        ACM_TRY(st);
    }
    return job_write(j, path);
}

static acm_status domain_export_vdb_unguarded(acm_domain *domain, const char *path,
                                              const acm_field *fields, size_t count)
{
    if (!ACM_VDB_BUILT)
        return ACM_FAIL(domain, ACM_ERR_NOT_BUILT, "%s", not_built_msg);
    if (path == NULL || fields == NULL)
        return ACM_FAIL(domain, ACM_ERR_NULL_POINTER, "%s is NULL", path == NULL ? "path" : "fields");
    ACM_TRY(check_fields(domain, fields, count));
    vdb_job j;
    j.msg[0] = '\0';
    const acm_status st = fields_export(domain, &j, path, fields, count);
    job_end(&j);
    if (st != ACM_OK && j.msg[0] != '\0') /* else the failure is on the domain already */
        return ACM_FAIL(domain, st, "%s", j.msg);
    return st;
}

/* One thread at a time (lib/base/guard.h, the call guard). */
ACM_API acm_status acm_domain_export_vdb(acm_domain *domain, const char *path,
                                         const acm_field *fields, size_t count)
{
    ACM_GUARDED(domain, domain_export_vdb_unguarded(domain, path, fields, count));
}
