/*
 * libacmlbm example -- the solver inside a game loop.
 * SPDX-License-Identifier: Apache-2.0
 *
 * What a game embedding the solver does each frame, at a fixed time step:
 * 60 frames per second of game time, each frame advancing the air by a fixed
 * number of lattice steps (--steps-per-frame). The level is a closed hall of
 * still air. The player is a ball (an immersed solid, ACM_MOTION_PRESCRIBED)
 * driven by scripted key presses -- accelerate, turn left, turn right, brake
 * -- and bouncing off the walls; the game sets its pose and velocity every
 * frame with acm_solid_set_state(). Its wake is the wind that the rest of the
 * level feels: three flags on poles and three leaves carried by the air read
 * the wind at their positions once a frame (six points: no field is ever
 * copied): by default the read is queued with the frame's steps
 * (acm_domain_sample_velocity_begin, at the leaves' places before the frame's
 * drift) and collected at the sync point (_end); --wind-read now reads after
 * the sync point instead (acm_domain_sample_velocity, where the leaves are then). With --smoke the ball trails smoke
 * (an emitter on its surface, ACM_EMITTER_SOLID). With --crates N, N loose
 * balls three times as dense as the air (ACM_MOTION_FREE) float along the
 * player's path and are pushed by its wake; the game reads their state once
 * a frame, after the sync point, to draw them. The solver has no contact
 * between solids: like a game's physics engine, the game keeps the crates
 * apart from each other, the player and the walls (CRATE_GAP cells between
 * surfaces, so that no two solids share a cell of their forces) and hands
 * the states it changed back before the next frame's steps.
 *
 * A frame:
 *   1. input: the script says which keys are down;
 *   2. update: the game moves the player (and keeps the crates apart) and
 *      hands the states to the solver;
 *   3. enqueue the frame's steps: acm_cuda_step_async() on the game's own CUDA
 *      stream, or acm_step() on the CPU (synchronous: it takes the time), and
 *      the read of the wind behind them;
 *   4. game work on the CPU while the GPU steps (leaves, AI, animation:
 *      --game-ms of it), using the wind read in the previous frame;
 *   5. sync point: wait for the steps, then collect the wind at the probes.
 * The simulation's share of the frame is what the game waits for: the time
 * of 3 (with the state handed over in 2), of the wait in 5 and of the wind
 * read. Every --every frames a line shows the keys down, the player, these
 * times (enq, wait, read, their sum "sim ms" -- marked '!' when over the 16.7
 * ms of a 60 Hz frame -- and the whole frame with the game's work), the wind
 * at the flags (m/s @ degrees in the horizontal x-z plane, 0 = +x, 90 = -z)
 * and where the leaves are; the run ends with the statistics of the times.
 *
 * Units: lattice units inside the solver (cells, steps); the game's world has
 * 0.25 m cells and 1/60 s frames, so a speed of u cells per step is
 * u * K * 60 * 0.25 m/s with K steps per frame.
 */
#include <errno.h>  /* errno */
#include <math.h>   /* sqrt, cos, sin, atan2, ceil */
#include <stdio.h>  /* printf, fprintf */
#include <stdlib.h> /* strtol, strtod, malloc, free, qsort, getenv */
#include <string.h> /* strcmp, memset, memcpy */
#include <sys/resource.h> /* getrusage: the context switches of a frame */
#include <time.h>   /* clock_gettime */

#include <acmlbm/acmlbm.h>
#if ACM_HAVE_CUDA
#include <acmlbm/acm_cuda.h> /* acm_cuda_step_async, acm_cuda_domain_set_stream */
#endif

#include "cli.h"      /* cli_long, cli_real, cli_dims, cli_backend */
#include "timeline.h" /* RANGE_BEGIN, RANGE_END: the frame's parts in a timeline */
#include "shapes.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const char *const prog = "game_loop";

#define FRAME_HZ 60.0             /* game frames per second */
#define BUDGET_MS (1e3 / FRAME_HZ) /* 16.7 ms */
#define CELL_M 0.25               /* metres per cell in the game's world */
#define MAX_SPEED 0.06            /* player's top speed, cells per step (Mach 0.1) */
#define CRATE_GAP 3.0             /* cells kept between a crate's surface and another's */
#define CRATE_BOUNCE 0.5          /* restitution of a crate's contacts */
#define N_FLAGS 3
#define N_LEAVES 3
#define N_PROBES (N_FLAGS + N_LEAVES)
#define MAX_CRATES 8

/* ---- command line ------------------------------------------------------------------------ */

typedef struct game_config {
    acm_backend backend;
    int32_t size[3];     /* 0: chosen for the backend */
    long frames;         /* frames to run */
    long steps_per_frame;
    long every;          /* a line every this many frames */
    double game_ms;      /* CPU work of the game per frame */
    long threads;        /* solver's CPU threads; 0: the OpenMP default */
    int smoke;           /* trail smoke behind the player */
    int prepare;         /* record the steps' graphs at level load (acm_cuda_step_prepare) */
    long crates;         /* loose balls the wake pushes (free bodies) */
    int read_now;        /* --wind-read now: the wind read after the sync point */
} game_config;

static void usage(FILE *fp)
{
    fprintf(fp,
            "usage: %s [options]\n"
            "  --backend cpu|cuda|auto  solver backend (default auto: CUDA if a GPU is usable)\n"
            "  --size N|NXxNYxNZ        hall in cells, each in [16, 1024] (default 192x96x96 "
            "on a GPU, 96x48x48 on the CPU)\n"
            "  --frames N               frames to run, 60 per second of game time (default 600)\n"
            "  --steps-per-frame K      lattice steps per frame, in [1, 64] (default 4)\n"
            "  --every N                print a line every N frames (default 30)\n"
            "  --game-ms MS             CPU work of the game per frame, in [0, 100] (default 2)\n"
            "  --threads T              the solver's CPU threads, in [0, 256] (default 0: "
            "OpenMP's choice; a game leaves cores to its own threads)\n"
            "  --smoke                  trail smoke behind the player\n"
            "  --crates N               N loose balls (free bodies) in the player's path, in "
            "[0, %d] (default 0)\n"
            "  --no-prepare             leave the recording of the steps' CUDA graphs to the "
            "first frame (default: at level load, acm_cuda_step_prepare)\n"
            "  --wind-read queued|now   queue the wind's read with the frame's steps and collect "
            "it at the sync point (default), or read it after the sync point\n"
            "  --help                   print this and exit\n",
            prog, MAX_CRATES);
}

/* One option and its value; -1 after a message. */
static int parse_option(const char *name, const char *value, game_config *c)
{
    if (strcmp(name, "--backend") == 0)
        return cli_backend(prog, name, value, &c->backend);
    if (strcmp(name, "--size") == 0)
        return cli_dims(prog, name, value, 'x', 16, 1024, c->size);
    if (strcmp(name, "--frames") == 0)
        return cli_long(prog, name, value, 1, 10000000, &c->frames);
    if (strcmp(name, "--steps-per-frame") == 0)
        return cli_long(prog, name, value, 1, 64, &c->steps_per_frame);
    if (strcmp(name, "--every") == 0)
        return cli_long(prog, name, value, 1, 10000000, &c->every);
    if (strcmp(name, "--game-ms") == 0)
        return cli_real(prog, name, value, 0.0, 100.0, &c->game_ms);
    if (strcmp(name, "--threads") == 0)
        return cli_long(prog, name, value, 0, 256, &c->threads);
    if (strcmp(name, "--crates") == 0)
        return cli_long(prog, name, value, 0, MAX_CRATES, &c->crates);
    if (strcmp(name, "--wind-read") == 0) {
        c->read_now = strcmp(value, "now") == 0;
        if (c->read_now || strcmp(value, "queued") == 0)
            return 0;
        fprintf(stderr, "%s: --wind-read takes queued or now, not '%s'\n", prog, value);
        return -1;
    }
    fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, name);
    return -1;
}

/* Whether the run will use the GPU (AUTO: as the library decides). */
static int runs_on_gpu(acm_backend backend)
{
    if (backend != ACM_BACKEND_AUTO)
        return backend == ACM_BACKEND_CUDA;
    const char *env = getenv("ACMLBM_BACKEND"); /* overrides AUTO in the library too */
    if (env != NULL && strcmp(env, "cpu") == 0)
        return 0;
    return acm_backend_available(ACM_BACKEND_CUDA);
}

/* 0 to run, 1 after --help, 2 after a usage error. */
static int parse_args(int argc, char **argv, game_config *c)
{
    const game_config defaults = {ACM_BACKEND_AUTO, {0, 0, 0}, 600, 4, 30, 2.0, 0, 0, 1, 0, 0};
    *c = defaults;
    for (int k = 1; k < argc; ++k) {
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(argv[k], "--smoke") == 0) {
            c->smoke = 1;
            continue;
        }
        if (strcmp(argv[k], "--no-prepare") == 0) {
            c->prepare = 0;
            continue;
        }
        if (k + 1 >= argc) {
            fprintf(stderr, "%s: %s needs a value (see --help)\n", prog, argv[k]);
            return 2;
        }
        if (parse_option(argv[k], argv[k + 1], c) != 0) {
            usage(stderr);
            return 2;
        }
        ++k;
    }
    if (c->size[0] == 0) {
        const int32_t gpu[3] = {192, 96, 96}, cpu[3] = {96, 48, 48};
        memcpy(c->size, runs_on_gpu(c->backend) ? gpu : cpu, sizeof c->size);
    }
    return 0;
}

/* ---- timing ------------------------------------------------------------------------------- */

static double clock_ms(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return 1e3 * (double)t.tv_sec + 1e-6 * (double)t.tv_nsec;
}

static double now_ms(void) { return clock_ms(CLOCK_MONOTONIC); }

/* The CPU time this thread has had: beside the wall time it tells whether a
 * slow frame was work done slowly or the thread taken off its CPU. */
static double thread_cpu_ms(void) { return clock_ms(CLOCK_THREAD_CPUTIME_ID); }

/* The process's involuntary context switches so far (-1: not known). */
static long involuntary_switches(void)
{
    struct rusage r;
    return getrusage(RUSAGE_SELF, &r) == 0 ? r.ru_nivcsw : -1;
}

/* Where the wall time of a frame went, ms. */
typedef struct frame_times {
    double enqueue; /* state handed over + steps enqueued (the whole step on the CPU) */
    double state;   /* of which the states handed over (acm_solid_set_state): the
                       player's, and the crates' the game's contacts changed */
    double game;    /* the game's own CPU work */
    double wait;    /* waiting at the sync point */
    double read;    /* the wind at the probes and the crates' states */
    double cpu;     /* the thread's CPU time in enqueue, wait and read */
    long switched;  /* involuntary context switches of the process in the frame */
} frame_times;

/* What the simulation costs the frame: everything but the game's own work. */
static double sim_ms(const frame_times *t)
{
    return t->enqueue + t->wait + t->read;
}

/* ---- the game: input script, player, flags and leaves -------------------------------------- */

enum { KEY_FORWARD = 1, KEY_LEFT = 2, KEY_RIGHT = 4, KEY_BRAKE = 8 };

/* A key going down or up at a fraction of the run, so that the whole script
 * plays however many frames there are. */
typedef struct key_event {
    double at;
    unsigned key;
    int down;
} key_event;

static const key_event script[] = {
    {0.05, KEY_FORWARD, 1}, {0.30, KEY_LEFT, 1},    {0.45, KEY_LEFT, 0}, {0.55, KEY_RIGHT, 1},
    {0.70, KEY_RIGHT, 0},   {0.75, KEY_FORWARD, 0}, {0.75, KEY_BRAKE, 1}, {0.90, KEY_BRAKE, 0},
};

/* The keys down in frame `frame` of `frames`. */
static unsigned poll_input(long frame, long frames)
{
    const double t = (double)frame / (double)frames;
    unsigned keys = 0;
    for (size_t k = 0; k < sizeof script / sizeof script[0] && script[k].at <= t; ++k)
        keys = script[k].down ? keys | script[k].key : keys & ~script[k].key;
    return keys;
}

static void keys_text(unsigned keys, char out[5])
{
    out[0] = keys & KEY_FORWARD ? 'W' : '-';
    out[1] = keys & KEY_LEFT ? 'A' : '-';
    out[2] = keys & KEY_BRAKE ? 'S' : '-';
    out[3] = keys & KEY_RIGHT ? 'D' : '-';
    out[4] = '\0';
}

typedef struct player {
    double pos[3];   /* centre, cells */
    double heading;  /* radians in the x-z plane, 0 = +x */
    double speed;    /* cells per step */
    double vel[3];   /* of this frame, cells per step */
    double radius;   /* cells */
    double lo[3], hi[3]; /* where its centre may go */
} player;

typedef struct world {
    long steps_per_frame;
    int32_t n[3];
    player p;
    double probes[N_PROBES][3]; /* the flags' poles, then the leaves */
    double wind[N_PROBES][3];   /* read at the end of the last frame, cells per step */
} world;

static void world_init(world *w, const game_config *c)
{
    memset(w, 0, sizeof *w);
    w->steps_per_frame = c->steps_per_frame;
    memcpy(w->n, c->size, sizeof w->n);
    const double nx = c->size[0] - 1, ny = c->size[1] - 1, nz = c->size[2] - 1;
    player *p = &w->p;
    p->radius = 0.1 * ny < 2.0 ? 2.0 : 0.1 * ny;
    const double margin = p->radius + 3.0;
    for (int a = 0; a < 3; ++a) {
        p->lo[a] = margin;
        p->hi[a] = (c->size[a] - 1) - margin;
    }
    const double start[3] = {0.2 * nx, 0.5 * ny, 0.5 * nz};
    memcpy(p->pos, start, sizeof start);
    /* flags on poles around the hall, leaves lying in the air near the middle */
    const double at[N_PROBES][3] = {{0.50, 0.5, 0.30}, {0.75, 0.5, 0.65}, {0.30, 0.5, 0.75},
                                    {0.60, 0.5, 0.50}, {0.40, 0.5, 0.40}, {0.85, 0.5, 0.40}};
    for (int k = 0; k < N_PROBES; ++k) {
        w->probes[k][0] = at[k][0] * nx;
        w->probes[k][1] = at[k][1] * ny;
        w->probes[k][2] = at[k][2] * nz;
    }
}

/* Steer the player for one frame of game time: speed up to MAX_SPEED in 1 s,
 * turn at 120 degrees per second, brake to a stop in 0.4 s, coast otherwise;
 * bounce off the walls. Sets p->vel for this frame. */
static void player_update(player *p, unsigned keys, long steps_per_frame)
{
    const double dt = 1.0 / FRAME_HZ;
    if (keys & KEY_FORWARD)
        p->speed += MAX_SPEED * dt / 1.0;
    else if (keys & KEY_BRAKE)
        p->speed -= MAX_SPEED * dt / 0.4;
    else
        p->speed *= 1.0 - 0.3 * dt;
    p->speed = p->speed < 0.0 ? 0.0 : p->speed > MAX_SPEED ? MAX_SPEED : p->speed;
    const double turn = 2.0 * M_PI / 3.0 * dt;
    if (keys & KEY_LEFT)
        p->heading += turn;
    if (keys & KEY_RIGHT)
        p->heading -= turn;
    double v[3] = {p->speed * cos(p->heading), 0.0, -p->speed * sin(p->heading)};
    int bounced = 0;
    for (int a = 0; a < 3; a += 2) { /* a wall ahead within this frame: bounce */
        const double next = p->pos[a] + v[a] * (double)steps_per_frame;
        if ((next < p->lo[a] && v[a] < 0.0) || (next > p->hi[a] && v[a] > 0.0)) {
            v[a] = -v[a];
            bounced = 1;
        }
    }
    if (bounced)
        p->heading = atan2(-v[2], v[0]);
    memcpy(p->vel, v, sizeof v);
}

/* After the frame's steps: the solver moved the ball by K v, and so does the game. */
static void player_advance(player *p, long steps_per_frame)
{
    for (int a = 0; a < 3; ++a)
        p->pos[a] += p->vel[a] * (double)steps_per_frame;
}

/* Leaves drift with the wind of the last frame, kept inside the hall. */
static void move_leaves(world *w)
{
    for (int k = N_FLAGS; k < N_PROBES; ++k)
        for (int a = 0; a < 3; ++a) {
            double x = w->probes[k][a] + w->wind[k][a] * (double)w->steps_per_frame;
            const double top = (double)(w->n[a] - 1);
            w->probes[k][a] = x < 0.0 ? 0.0 : x > top ? top : x;
        }
}

/* The rest of the game's frame (AI, animation, audio...): here a busy loop
 * of `ms` milliseconds, so that the overlap with the GPU shows. */
static void other_game_work(double ms)
{
    const double until = now_ms() + ms;
    volatile double sink = 0.0;
    while (now_ms() < until)
        for (int k = 0; k < 1000; ++k)
            sink += 1e-9 * k;
    (void)sink;
}

static double m_per_s(const world *w, double cells_per_step)
{
    return cells_per_step * (double)w->steps_per_frame * FRAME_HZ * CELL_M;
}

/* ---- the simulation: init, per frame begin/end, shutdown ------------------------------------ */

typedef struct sim_state {
    acm_domain *d;
    acm_solid *ball;
    acm_solid *crate[MAX_CRATES]; /* free bodies the wake pushes */
    long ncrates;
    double crate_r;                  /* their radius, cells */
    acm_solid_state crate_state[MAX_CRATES]; /* read after the last frame's steps */
    acm_smoke *smoke;
    int gpu;
    int read_now;      /* the wind read after the sync point (else queued with the steps) */
    double prepare_ms; /* the level load's acm_cuda_step_prepare; < 0: not called */
    int64_t graphs_at_load; /* CUDA graphs of steps recorded by then (acm_cuda_graphs_recorded) */
#if ACM_HAVE_CUDA
    cudaStream_t stream; /* the game's stream, on which the solver runs */
    float *smoke_grid;   /* device memory: the smoke's density for the renderer */
    size_t smoke_grid_count;
#endif
} sim_state;

static int create_domain(sim_state *s, const game_config *c)
{
    char err[512] = "";
    acm_domain_options o = ACM_DOMAIN_OPTIONS_INIT; /* air at rest */
    o.nx = c->size[0];
    o.ny = c->size[1];
    o.nz = c->size[2];
    o.viscosity = 0.005;
    o.backend = c->backend;
    o.error_buffer = err;
    o.error_buffer_size = sizeof err;
    acm_status st = acm_domain_create(&s->d, &o);
    if (cli_failed(prog, st, "acm_domain_create", err))
        return -1;
    for (int f = 0; f < ACM_FACE_COUNT && st == ACM_OK; ++f)
        st = acm_domain_set_face(s->d, (acm_face)f, ACM_BOUNDARY_WALL, NULL);
    if (cli_failed(prog, st, "acm_domain_set_face", acm_domain_last_error(s->d)))
        return -1;
    st = acm_domain_set_param(s->d, ACM_PARAM_THREADS, c->threads);
    if (cli_failed(prog, st, "acm_domain_set_param(ACM_PARAM_THREADS)",
                   acm_domain_last_error(s->d)))
        return -1;
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    if (cli_failed(prog, acm_domain_get_info(s->d, &info), "acm_domain_get_info",
                   acm_domain_last_error(s->d)))
        return -1;
    s->gpu = info.backend == ACM_BACKEND_CUDA;
    return 0;
}

/* A closed sphere mesh of radius r, NULL after a message. */
static acm_mesh *sphere_mesh(double r)
{
    shapes_mesh sm;
    if (shapes_sphere(&sm, shapes_sphere_subdivisions(r, 0.75), r) != 0) {
        fprintf(stderr, "%s: cannot build the sphere mesh\n", prog);
        return NULL;
    }
    char err[512] = "";
    acm_mesh_options mo = ACM_MESH_OPTIONS_INIT;
    mo.error_buffer = err;
    mo.error_buffer_size = sizeof err;
    acm_mesh *mesh = NULL;
    acm_status st = acm_mesh_create(&mesh, sm.v, sm.nv, sm.t, sm.nt, &mo);
    shapes_free(&sm);
    return cli_failed(prog, st, "acm_mesh_create", err) ? NULL : mesh;
}

static int create_ball(sim_state *s, const player *p)
{
    acm_mesh *mesh = sphere_mesh(p->radius);
    if (mesh == NULL)
        return -1;
    acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
    so.mesh = mesh;
    so.motion = ACM_MOTION_PRESCRIBED;
    memcpy(so.position, p->pos, sizeof p->pos);
    const acm_status st = acm_solid_create(&s->ball, s->d, &so);
    acm_mesh_destroy(mesh);
    return cli_failed(prog, st, "acm_solid_create", acm_domain_last_error(s->d)) ? -1 : 0;
}

/* Where crate k of radius r starts: on a grid in front of the player,
 * CRATE_GAP cells clear of it, of each other and of the walls, row by row
 * from the player's line outwards. 0, or -1 when the hall holds fewer. */
static int crate_start(const game_config *c, const player *p, double r, long k, double at[3])
{
    const double step = 2.0 * r + CRATE_GAP + 1.0;
    const double x0 = p->pos[0] + p->radius + r + CRATE_GAP + 1.0;
    const double lo = r + CRATE_GAP, xhi = (c->size[0] - 1) - lo, zhi = (c->size[2] - 1) - lo;
    const long columns = x0 > xhi ? 0 : 1 + (long)((xhi - x0) / step);
    long first = 0; /* the first crate of the row */
    for (long m = 0; columns > 0; ++m) { /* rows at the player's z, then m steps either side */
        const double z[2] = {p->pos[2] - (double)m * step, p->pos[2] + (double)m * step};
        int rows = 0;
        for (int side = m == 0 ? 1 : 0; side < 2; ++side) {
            if (z[side] < lo || z[side] > zhi)
                continue;
            ++rows;
            if (k < first + columns) {
                at[0] = x0 + (double)(k - first) * step;
                at[1] = 0.5 * (c->size[1] - 1);
                at[2] = z[side];
                return 0;
            }
            first += columns;
        }
        if (rows == 0)
            return -1;
    }
    return -1;
}

/* Balls of radius r, three times as dense as the air, at rest along the
 * player's path (their mass and inertia from the closed mesh). */
static int create_crates(sim_state *s, const game_config *c, const player *p, double r)
{
    double at[MAX_CRATES][3];
    for (long k = 0; k < c->crates; ++k)
        if (crate_start(c, p, r, k, at[k]) != 0) {
            fprintf(stderr, "%s: --crates %ld: only %ld crates of radius %.1f cells fit in a "
                            "%dx%dx%d hall\n",
                    prog, c->crates, k, r, c->size[0], c->size[1], c->size[2]);
            return -1;
        }
    acm_mesh *mesh = sphere_mesh(r);
    if (mesh == NULL)
        return -1;
    acm_status st = ACM_OK;
    s->ncrates = c->crates;
    s->crate_r = r;
    for (long k = 0; k < c->crates && st == ACM_OK; ++k) {
        acm_solid_options so = ACM_SOLID_OPTIONS_INIT;
        so.mesh = mesh;
        so.motion = ACM_MOTION_FREE;
        so.density = 3.0;
        memcpy(so.position, at[k], sizeof so.position);
        const acm_solid_state rest = {ACM_SOLID_STATE_VERSION, {0, 0, 0}, {1, 0, 0, 0},
                                      {0, 0, 0}, {0, 0, 0}};
        s->crate_state[k] = rest;
        memcpy(s->crate_state[k].position, at[k], sizeof at[k]);
        st = acm_solid_create(&s->crate[k], s->d, &so);
    }
    acm_mesh_destroy(mesh);
    return cli_failed(prog, st, "acm_solid_create (crate)", acm_domain_last_error(s->d)) ? -1 : 0;
}

/* Where the crates are now, for the renderer and the contacts: after the
 * sync point their state comes from the device with no further wait. */
static int read_crates(sim_state *s)
{
    for (long k = 0; k < s->ncrates; ++k) {
        acm_status rc = acm_solid_get_state(s->crate[k], &s->crate_state[k]);
        if (cli_failed(prog, rc, "acm_solid_get_state (crate)", acm_solid_last_error(s->crate[k])))
            return -1;
    }
    return 0;
}

/* A contact along the unit normal n (from a to b): b's velocity relative to
 * a's along n, when they close in, reversed with CRATE_BOUNCE; wa, wb: the
 * shares of the change each takes (0 for the player, which the keys move). */
static void bounce(double *va, double *vb, const double n[3], double wa, double wb)
{
    double closing = 0.0;
    for (int a = 0; a < 3; ++a)
        closing += (vb[a] - (va != NULL ? va[a] : 0.0)) * n[a];
    if (closing >= 0.0)
        return;
    const double j = (1.0 + CRATE_BOUNCE) * closing;
    for (int a = 0; a < 3; ++a) {
        if (va != NULL)
            va[a] += wa * j * n[a];
        vb[a] -= wb * j * n[a];
    }
}

/* Push b out of a to `dist` along the line of centres (n: its unit normal,
 * from a to b); 1 when they were closer. */
static int separate(const double *xa, const double *xb, double dist, double n[3], double *depth)
{
    double d2 = 0.0;
    for (int a = 0; a < 3; ++a) {
        n[a] = xb[a] - xa[a];
        d2 += n[a] * n[a];
    }
    const double d = sqrt(d2);
    if (d >= dist)
        return 0;
    for (int a = 0; a < 3; ++a)
        n[a] = d > 1e-12 ? n[a] / d : (a == 0 ? 1.0 : 0.0);
    *depth = dist - d;
    return 1;
}

/* The game's contacts of the crates (the solver has none): with the walls,
 * the player (which the keys move: the crate takes the whole change) and
 * each other (equal masses), CRATE_GAP cells between surfaces; the states
 * it changed handed to the solver. */
static int crate_contacts(sim_state *s, const world *w)
{
    const double r = s->crate_r, lo = r + CRATE_GAP;
    int changed[MAX_CRATES] = {0};
    for (long k = 0; k < s->ncrates; ++k) {
        acm_solid_state *c = &s->crate_state[k];
        for (int a = 0; a < 3; ++a) {
            const double hi = (double)(w->n[a] - 1) - lo;
            if (c->position[a] < lo || c->position[a] > hi) {
                const double side = c->position[a] < lo ? 1.0 : -1.0; /* inwards */
                c->position[a] = side > 0.0 ? lo : hi;
                if (c->velocity[a] * side < 0.0)
                    c->velocity[a] = -CRATE_BOUNCE * c->velocity[a];
                changed[k] = 1;
            }
        }
        double n[3], depth = 0.0;
        if (separate(w->p.pos, c->position, w->p.radius + r + CRATE_GAP, n, &depth)) {
            for (int a = 0; a < 3; ++a) {
                c->position[a] += depth * n[a];
                c->velocity[a] -= w->p.vel[a];
            }
            bounce(NULL, c->velocity, n, 0.0, 1.0);
            for (int a = 0; a < 3; ++a)
                c->velocity[a] += w->p.vel[a];
            changed[k] = 1;
        }
        for (long l = 0; l < k; ++l) {
            acm_solid_state *b = &s->crate_state[l];
            if (!separate(b->position, c->position, 2.0 * r + CRATE_GAP, n, &depth))
                continue;
            for (int a = 0; a < 3; ++a) {
                b->position[a] -= 0.5 * depth * n[a];
                c->position[a] += 0.5 * depth * n[a];
            }
            bounce(b->velocity, c->velocity, n, 0.5, 0.5);
            changed[k] = changed[l] = 1;
        }
    }
    for (long k = 0; k < s->ncrates; ++k) {
        if (!changed[k])
            continue;
        acm_status rc = acm_solid_set_state(s->crate[k], &s->crate_state[k]);
        if (cli_failed(prog, rc, "acm_solid_set_state (crate)", acm_solid_last_error(s->crate[k])))
            return -1;
    }
    return 0;
}

/* Smoke from the ball's surface, a cell out, living two seconds of game time. */
static int create_smoke(sim_state *s, long steps_per_frame)
{
    const double rate = 20.0;
    const int64_t lifetime = (int64_t)(2.0 * FRAME_HZ) * steps_per_frame;
    acm_smoke_options so = ACM_SMOKE_OPTIONS_INIT;
    so.capacity = (uint64_t)(rate * (double)lifetime) + 64;
    acm_status st = acm_smoke_create(&s->smoke, s->d, &so);
    if (cli_failed(prog, st, "acm_smoke_create", acm_domain_last_error(s->d)))
        return -1;
    acm_emitter e = ACM_EMITTER_INIT;
    e.shape = ACM_EMITTER_SOLID;
    e.solid = s->ball;
    e.offset = 1.0;
    e.rate = rate;
    e.lifetime = lifetime;
    st = acm_smoke_add_emitter(s->smoke, &e);
    return cli_failed(prog, st, "acm_smoke_add_emitter", acm_smoke_last_error(s->smoke)) ? -1 : 0;
}

#if ACM_HAVE_CUDA
/* The solver runs on the game's stream; the smoke's density grid lives on the device. */
static int attach_stream(sim_state *s)
{
    if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "%s: cannot create a CUDA stream\n", prog);
        s->stream = NULL;
        return -1;
    }
    acm_status st = acm_cuda_domain_set_stream(s->d, s->stream);
    if (cli_failed(prog, st, "acm_cuda_domain_set_stream", acm_domain_last_error(s->d)))
        return -1;
    if (s->smoke == NULL)
        return 0;
    acm_domain_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_DOMAIN_INFO_VERSION;
    acm_domain_get_info(s->d, &info);
    s->smoke_grid_count = (size_t)info.nx * (size_t)info.ny * (size_t)info.nz;
    if (cudaMalloc((void **)&s->smoke_grid, s->smoke_grid_count * sizeof(float)) != cudaSuccess) {
        fprintf(stderr, "%s: cannot allocate the smoke grid on the device\n", prog);
        s->smoke_grid = NULL;
        return -1;
    }
    return 0;
}
#endif /* ACM_HAVE_CUDA */

static int sim_init(sim_state *s, const game_config *c, const world *w)
{
    memset(s, 0, sizeof *s);
    if (create_domain(s, c) != 0 || create_ball(s, &w->p) != 0)
        return -1;
    if (c->crates > 0 && create_crates(s, c, &w->p, 0.6 * w->p.radius) != 0)
        return -1;
    if (c->smoke && create_smoke(s, c->steps_per_frame) != 0)
        return -1;
    s->prepare_ms = -1.0;
    s->read_now = c->read_now;
#if ACM_HAVE_CUDA
    if (s->gpu && attach_stream(s) != 0)
        return -1;
    if (s->gpu && c->prepare) { /* at level load, what the first frame would record */
        const double t0 = now_ms();
        acm_status st = acm_cuda_step_prepare(s->d, c->steps_per_frame);
        if (cli_failed(prog, st, "acm_cuda_step_prepare", acm_domain_last_error(s->d)))
            return -1;
        s->prepare_ms = now_ms() - t0;
    }
    if (s->gpu) {
        acm_status st = acm_cuda_graphs_recorded(s->d, &s->graphs_at_load);
        if (cli_failed(prog, st, "acm_cuda_graphs_recorded", acm_domain_last_error(s->d)))
            return -1;
    }
#endif
    return 0;
}

/* How many CUDA graphs of steps the frames recorded after the level load
 * (each one a stall of its frame): none, once acm_cuda_step_prepare ran. */
static void print_recordings(const sim_state *s)
{
#if ACM_HAVE_CUDA
    int64_t now = 0;
    if (s->gpu && acm_cuda_graphs_recorded(s->d, &now) == ACM_OK)
        printf("CUDA graphs of steps recorded: %lld at the level load, %lld during play\n",
               (long long)s->graphs_at_load, (long long)(now - s->graphs_at_load));
#else
    (void)s;
#endif
}

/* The wind's read at the probes, queued behind the steps just enqueued. */
static int begin_read(sim_state *s, const world *w)
{
    if (s->read_now)
        return 0;
    const acm_status rc = acm_domain_sample_velocity_begin(s->d, &w->probes[0][0], N_PROBES);
    return cli_failed(prog, rc, "acm_domain_sample_velocity_begin",
                      acm_domain_last_error(s->d)) ? -1 : 0;
}

/* Hand the player's state (and the crates' after their contacts) to the
 * solver, start the frame's steps and the read of the wind after them. */
static int sim_begin_frame(sim_state *s, const world *w, long steps, frame_times *t)
{
    const double t0 = now_ms();
    const player *p = &w->p;
    if (crate_contacts(s, w) != 0)
        return -1;
    acm_solid_state st = {ACM_SOLID_STATE_VERSION, {0, 0, 0}, {1, 0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    memcpy(st.position, p->pos, sizeof p->pos);
    memcpy(st.velocity, p->vel, sizeof p->vel);
    acm_status rc = acm_solid_set_state(s->ball, &st);
    if (cli_failed(prog, rc, "acm_solid_set_state", acm_solid_last_error(s->ball)))
        return -1;
    t->state = now_ms() - t0;
#if ACM_HAVE_CUDA
    if (s->gpu) {
        rc = acm_cuda_step_async(s->d, steps);
        if (cli_failed(prog, rc, "acm_cuda_step_async", acm_domain_last_error(s->d)))
            return -1;
        if (s->smoke != NULL) { /* the smoke's density for the renderer, same stream */
            rc = acm_cuda_smoke_density(s->smoke, 1, s->smoke_grid, s->smoke_grid_count);
            if (cli_failed(prog, rc, "acm_cuda_smoke_density", acm_smoke_last_error(s->smoke)))
                return -1;
        }
        const int begun = begin_read(s, w);
        t->enqueue = now_ms() - t0;
        return begun;
    }
#endif
    rc = acm_step(s->d, steps);
    const int begun = cli_failed(prog, rc, "acm_step", acm_domain_last_error(s->d)) ? -1
                                                                                     : begin_read(s, w);
    t->enqueue = now_ms() - t0;
    return begun;
}

/* The sync point: wait for the steps, then the wind at the probes. */
static int sim_end_frame(sim_state *s, world *w, frame_times *t)
{
    double t0 = now_ms();
    acm_status rc = ACM_OK;
#if ACM_HAVE_CUDA
    if (s->gpu)
        rc = acm_cuda_domain_synchronize(s->d);
#endif
    t->wait = now_ms() - t0;
    if (cli_failed(prog, rc, "acm_cuda_domain_synchronize", acm_domain_last_error(s->d)))
        return -1;
    t0 = now_ms();
    if (s->read_now)
        rc = acm_domain_sample_velocity(s->d, &w->probes[0][0], N_PROBES, &w->wind[0][0]);
    else
        rc = acm_domain_sample_velocity_end(s->d, &w->wind[0][0], N_PROBES);
    if (cli_failed(prog, rc, s->read_now ? "acm_domain_sample_velocity"
                                         : "acm_domain_sample_velocity_end",
                   acm_domain_last_error(s->d)))
        return -1;
    const int crates = read_crates(s);
    t->read = now_ms() - t0;
    return crates;
}

static void sim_shutdown(sim_state *s)
{
    acm_domain_destroy(s->d); /* its solid and smoke with it */
#if ACM_HAVE_CUDA
    if (s->smoke_grid != NULL)
        cudaFree(s->smoke_grid);
    if (s->stream != NULL) /* the domain, which ran on it, is gone */
        cudaStreamDestroy(s->stream);
#endif
    memset(s, 0, sizeof *s);
}

/* ---- output ----------------------------------------------------------------------------- */

static void print_header(const game_config *c, const sim_state *s, const world *w)
{
    char threads[32] = "OpenMP's threads";
    if (c->threads > 0)
        snprintf(threads, sizeof threads, "%ld thread%s", c->threads, c->threads > 1 ? "s" : "");
    printf("game loop: %dx%dx%d hall of still air (%.0f x %.0f x %.0f m), backend %s%s\n",
           (int)c->size[0], (int)c->size[1], (int)c->size[2], c->size[0] * CELL_M,
           c->size[1] * CELL_M, c->size[2] * CELL_M, s->gpu ? "cuda" : "cpu",
           s->gpu ? " (on the game's own stream)" : "");
    if (!s->gpu)
        printf("acm_step is synchronous on the CPU: it takes the frame's steps on %s, "
               "nothing overlaps\n", threads);
    printf("%ld frames at %.0f Hz, %ld steps per frame, budget %.1f ms; player ball of radius "
           "%.1f cells, top speed %.2f m/s; %.1f ms of other game work per frame%s; %ld loose "
           "crate%s\n",
           c->frames, FRAME_HZ, c->steps_per_frame, BUDGET_MS, w->p.radius,
           m_per_s(w, MAX_SPEED), c->game_ms, c->smoke ? "; smoke on" : "", c->crates,
           c->crates == 1 ? "" : "s");
    printf("the wind %s\n", c->read_now ? "read after the sync point (--wind-read now)"
                                        : "read queued behind the frame's steps, collected at "
                                          "the sync point");
    if (s->prepare_ms >= 0.0)
        printf("level load: acm_cuda_step_prepare(%ld) recorded the steps' graphs in %.2f ms\n",
               c->steps_per_frame, s->prepare_ms);
    printf("%6s %6s %4s %13s %5s | %6s %6s %5s %6s %6s | %-29s | %s\n", "frame", "t s", "keys",
           "player x,z m", "m/s", "enq", "wait", "read", "sim ms", "frame", "flags: wind m/s @ deg",
           "leaves x,y,z m");
}

static void print_frame(long frame, unsigned keys, const world *w, const frame_times *t,
                        uint64_t particles, int with_smoke, const double *crate)
{
    char k[5];
    keys_text(keys, k);
    const double sim = sim_ms(t), frame_total = sim + t->game;
    printf("%6ld %6.2f %4s (%5.1f,%5.1f) %5.2f | %6.2f %6.2f %5.2f %6.2f %6.2f%s|", frame,
           (double)(frame + 1) / FRAME_HZ, k, w->p.pos[0] * CELL_M, w->p.pos[2] * CELL_M,
           m_per_s(w, w->p.speed), t->enqueue, t->wait, t->read, sim, frame_total,
           sim > BUDGET_MS ? "!" : " ");
    for (int f = 0; f < N_FLAGS; ++f) {
        const double *u = w->wind[f];
        const double deg = atan2(-u[2], u[0]) * 180.0 / M_PI;
        printf(" %4.2f@%4.0f", m_per_s(w, sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])), deg);
    }
    printf(" |");
    for (int l = N_FLAGS; l < N_PROBES; ++l)
        printf(" (%4.1f,%4.1f,%4.1f)", w->probes[l][0] * CELL_M, w->probes[l][1] * CELL_M,
               w->probes[l][2] * CELL_M);
    if (with_smoke)
        printf(" smoke %llu", (unsigned long long)particles);
    if (crate != NULL)
        printf(" crate 0 (%4.1f,%4.1f,%4.1f)", crate[0] * CELL_M, crate[1] * CELL_M,
               crate[2] * CELL_M);
    printf("\n");
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean, median, 95th percentile, max (and its frame), the max of the frames
 * after the first, and frames over budget of `n` times. */
static void print_stats(const char *what, double *ms, long n)
{
    double sum = 0.0, rest = 0.0;
    long over = 0, worst = 0;
    for (long k = 0; k < n; ++k) {
        sum += ms[k];
        over += ms[k] > BUDGET_MS;
        worst = ms[k] > ms[worst] ? k : worst;
        rest = k > 0 && ms[k] > rest ? ms[k] : rest;
    }
    qsort(ms, (size_t)n, sizeof *ms, cmp_double);
    const long p95 = (long)ceil(0.95 * (double)n) - 1;
    printf("%-22s mean %7.2f  p50 %7.2f  p95 %7.2f  max %7.2f ms (frame %ld; after frame 0: "
           "%.2f); over %.1f ms: %ld of %ld frames\n",
           what, sum / (double)n, ms[(n - 1) / 2], ms[p95 < 0 ? 0 : p95], ms[n - 1], worst, rest,
           BUDGET_MS, over, n);
}

/* ---- the loop ------------------------------------------------------------------------------ */

typedef struct run_log {
    double *sim;   /* per frame: the simulation's share, ms */
    double *frame; /* per frame: with the game's own work, ms */
    double enqueue, state, wait, read, game; /* sums */
    long *switched; /* per frame: involuntary context switches (-1: not known) */
    frame_times slowest; /* the parts of the slowest simulation after frame 0 */
    long slowest_frame;
} run_log;

/* The frames after frame 0 whose simulation took over 3 times the median,
 * and those of them in which the system took a CPU from the process. */
typedef struct spikes {
    double limit; /* 3 x p50, ms */
    long over, over_switched, switches;
} spikes;

/* Counted before print_stats sorts log->sim. */
static spikes count_spikes(const run_log *log, long n)
{
    spikes k = {0.0, 0, 0, 0};
    double *sorted = malloc((size_t)n * sizeof *sorted);
    if (sorted == NULL)
        return k;
    memcpy(sorted, log->sim, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    k.limit = 3.0 * sorted[(n - 1) / 2];
    free(sorted);
    for (long f = 1; f < n; ++f) {
        k.over += log->sim[f] > k.limit;
        k.over_switched += log->sim[f] > k.limit && log->switched[f] > 0;
        k.switches += log->switched[f] > 0 ? log->switched[f] : 0;
    }
    return k;
}

/* The spikes, and where the slowest frame's time went: a long wait is the
 * GPU's; a long enqueue or read with little CPU time, a thread taken off its
 * CPU; with all of it CPU time, host work done slowly. */
static void print_spikes(const run_log *log, const spikes *k)
{
    if (log->slowest_frame == 0)
        return;
    const frame_times *t = &log->slowest;
    printf("frames after frame 0 over 3 x p50 (%.3f ms): %ld, %ld of them with an involuntary "
           "context switch (%ld switches in all frames)\n",
           k->limit, k->over, k->over_switched, k->switches);
    printf("slowest simulation after frame 0: frame %ld, %.3f ms: enqueue %.3f (the states "
           "%.3f), wait %.3f, wind read %.3f; the thread's CPU time %.3f ms; involuntary "
           "context switches %ld\n",
           log->slowest_frame, sim_ms(t), t->enqueue, t->state, t->wait, t->read, t->cpu,
           t->switched);
}

static int smoke_alive(sim_state *s, uint64_t *alive)
{
    *alive = 0;
    if (s->smoke == NULL)
        return 0;
    acm_smoke_info info;
    memset(&info, 0, sizeof info);
    info.version = ACM_SMOKE_INFO_VERSION;
    acm_status st = acm_smoke_get_info(s->smoke, &info);
    if (cli_failed(prog, st, "acm_smoke_get_info", acm_smoke_last_error(s->smoke)))
        return -1;
    *alive = info.alive;
    return 0;
}

static int game_frame(sim_state *s, world *w, const game_config *c, long frame, run_log *log)
{
    frame_times t = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0};
    const long switched = involuntary_switches();
    const unsigned keys = poll_input(frame, c->frames);    /* 1. input */
    player_update(&w->p, keys, c->steps_per_frame);        /* 2. update */
    double cpu = thread_cpu_ms();
    RANGE_BEGIN("enqueue");
    const int begun = sim_begin_frame(s, w, c->steps_per_frame, &t); /* 3. enqueue */
    RANGE_END();
    if (begun != 0)
        return -1;
    t.cpu = thread_cpu_ms() - cpu;
    const double g0 = now_ms();                            /* 4. game work meanwhile */
    RANGE_BEGIN("game work");
    move_leaves(w);
    other_game_work(c->game_ms);
    RANGE_END();
    t.game = now_ms() - g0;
    cpu = thread_cpu_ms();
    RANGE_BEGIN("wait and read");
    const int ended = sim_end_frame(s, w, &t);             /* 5. sync, read the wind */
    RANGE_END();
    if (ended != 0)
        return -1;
    t.cpu += thread_cpu_ms() - cpu;
    t.switched = switched < 0 ? -1 : involuntary_switches() - switched;
    player_advance(&w->p, c->steps_per_frame);
    log->sim[frame] = sim_ms(&t);
    log->switched[frame] = t.switched;
    if (frame > 0 && (log->slowest_frame == 0 || sim_ms(&t) > sim_ms(&log->slowest))) {
        log->slowest = t;
        log->slowest_frame = frame;
    }
    log->frame[frame] = sim_ms(&t) + t.game;
    log->enqueue += t.enqueue;
    log->state += t.state;
    log->wait += t.wait;
    log->read += t.read;
    log->game += t.game;
    if ((frame + 1) % c->every == 0 || frame + 1 == c->frames) {
        uint64_t alive = 0;
        if (smoke_alive(s, &alive) != 0)
            return -1;
        print_frame(frame, keys, w, &t, alive, s->smoke != NULL,
                    s->ncrates > 0 ? s->crate_state[0].position : NULL);
    }
    return 0;
}

static int run(sim_state *s, world *w, const game_config *c)
{
    run_log log;
    memset(&log, 0, sizeof log);
    log.sim = malloc((size_t)c->frames * sizeof *log.sim);
    log.frame = malloc((size_t)c->frames * sizeof *log.frame);
    log.switched = malloc((size_t)c->frames * sizeof *log.switched);
    int rc = log.sim != NULL && log.frame != NULL && log.switched != NULL ? 0 : -1;
    if (rc != 0)
        fprintf(stderr, "%s: out of memory for %ld frame times\n", prog, c->frames);
    const double t0 = now_ms();
    for (long f = 0; f < c->frames && rc == 0; ++f) {
        RANGE_BEGIN("frame");
        rc = game_frame(s, w, c, f, &log);
        RANGE_END();
    }
    if (rc == 0) {
        const double n = (double)c->frames, wall = now_ms() - t0;
        printf("%ld frames in %.1f s; per frame: enqueue %.3f (the states handed over %.3f, "
               "the steps %.3f), wait %.2f, wind read %.3f, game work %.2f ms\n",
               c->frames, 1e-3 * wall, log.enqueue / n, log.state / n,
               (log.enqueue - log.state) / n, log.wait / n, log.read / n, log.game / n);
        const spikes k = count_spikes(&log, c->frames);
        print_stats("simulation per frame:", log.sim, c->frames);
        print_stats("whole frame:", log.frame, c->frames);
        print_spikes(&log, &k);
        print_recordings(s);
    }
    free(log.sim);
    free(log.frame);
    free(log.switched);
    return rc;
}

int main(int argc, char **argv)
{
    game_config c;
    const int parsed = parse_args(argc, argv, &c);
    if (parsed != 0)
        return parsed == 1 ? 0 : 2;
    world w;
    world_init(&w, &c);
    sim_state s;
    int rc = sim_init(&s, &c, &w);
    if (rc == 0) {
        print_header(&c, &s, &w);
        rc = run(&s, &w, &c);
    }
    sim_shutdown(&s);
    return rc == 0 ? 0 : 1;
}
