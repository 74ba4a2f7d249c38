/*
 * libacmlbm -- a timeline of a CUDA program, where Nsight Systems cannot make
 * one: a CUPTI injection library that the CUDA driver loads at cuInit when
 * CUDA_INJECTION64_PATH names it (bench/acm-trace.sh sets it up). It records
 * every CUDA runtime call of the host's threads, every kernel, copy and memset
 * on the device (kernels of graphs included, each with its graph's id),
 * every host synchronisation and the NVTX ranges of the program and of the
 * library (game_loop's frames, the library's run begin and end), and writes
 * them at exit as a Chrome trace (JSON: chrome://tracing, ui.perfetto.dev,
 * bench/trace-report.py).
 *
 *   ACM_TRACE_OUT     the file (default acm-trace.json)
 *   ACM_TRACE_GRAPHS  1: a graph's execution as one record instead of its
 *                     kernels (CUPTI_ACTIVITY_KIND_GRAPH_TRACE, less overhead)
 *
 * Timestamps are CUPTI's, in ns on one clock for host and device; the trace
 * gives them in µs from the first record. What tracing costs: every runtime
 * call is timed (about 1 µs more a call) and every kernel is recorded.
 * SPDX-License-Identifier: Apache-2.0
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_BUFFER_BYTES (8u << 20)
#define TRACE_ALIGN 8u

/* The tracer's state: one per process (the driver loads one injection library
 * per process, and CUPTI's buffer callbacks take no pointer of ours, so it is
 * a static of its own accessor); written from CUPTI's thread and at exit. */
typedef struct tracer {
    pthread_mutex_t lock;
    FILE *out;
    uint64_t t0;     /* CUPTI's clock at the start, ns */
    uint64_t events; /* written */
    uint64_t dropped;
} tracer;

static tracer *the_tracer(void)
{
    static tracer t = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};
    return &t;
}

static void cupti_failed(const char *what, CUptiResult r)
{
    const char *msg = NULL;
    cuptiGetResultString(r, &msg);
    fprintf(stderr, "acm-trace: %s: %s\n", what, msg != NULL ? msg : "unknown CUPTI error");
}

#define CUPTI_TRY(call)                                                                       \
    do {                                                                                      \
        const CUptiResult r_ = (call);                                                        \
        if (r_ != CUPTI_SUCCESS) {                                                            \
            cupti_failed(#call, r_);                                                          \
            return 0;                                                                         \
        }                                                                                     \
    } while (0)

/* ---- writing events --------------------------------------------------------------------- */

/* µs from the tracer's start */
static double trace_us(const tracer *t, uint64_t ns)
{
    return ns >= t->t0 ? (double)(ns - t->t0) * 1e-3 : -(double)(t->t0 - ns) * 1e-3;
}

/* A name as JSON wants it: quotes and backslashes escaped, control characters dropped. */
static void put_name(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s != NULL && *s != '\0'; ++s) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if ((unsigned char)*s >= 0x20)
            fputc(*s, f);
    }
    fputc('"', f);
}

/* A kernel's name without its template arguments: the mangled name's first
 * identifier (_Z<len><name>...), or the name as given. */
static void put_kernel_name(FILE *f, const char *s)
{
    char buf[256];
    if (s != NULL && strncmp(s, "_Z", 2) == 0) {
        const char *p = s + 2;
        if (*p == 'N') /* nested: the first component */
            ++p;
        char *end = NULL;
        const long n = strtol(p, &end, 10);
        if (n > 0 && n < (long)sizeof buf && end != p && (long)strlen(end) >= n) {
            memcpy(buf, end, (size_t)n);
            buf[n] = '\0';
            put_name(f, buf);
            return;
        }
    }
    put_name(f, s != NULL ? s : "kernel");
}

static void begin_event(tracer *t, const char *ph, const char *pid, uint64_t tid, uint64_t ns)
{
    fprintf(t->out, "%s{\"ph\":\"%s\",\"pid\":\"%s\",\"tid\":%" PRIu64 ",\"ts\":%.3f,",
            t->events++ == 0 ? "" : ",\n", ph, pid, tid, trace_us(t, ns));
}

/* A span: name, where (host thread or device stream), start and end, and args. */
static void span(tracer *t, const char *pid, uint64_t tid, uint64_t start, uint64_t end,
                 const char *cat, const char *name, int kernel, const char *args)
{
    if (start == 0 && end == 0) {
        t->dropped++;
        return;
    }
    begin_event(t, "X", pid, tid, start);
    fprintf(t->out, "\"dur\":%.3f,\"cat\":\"%s\",\"name\":", end > start ? (end - start) * 1e-3 : 0.0,
            cat);
    if (kernel)
        put_kernel_name(t->out, name);
    else
        put_name(t->out, name);
    fprintf(t->out, ",\"args\":{%s}}", args);
}

static const char *sync_name(CUpti_ActivitySynchronizationType type)
{
    switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream wait event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context synchronize";
    default: return "synchronize";
    }
}

/* One activity record into the trace (the lock held). */
static void write_record(tracer *t, const CUpti_Activity *rec)
{
    char args[160];
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
        const char *name = NULL;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) != CUPTI_SUCCESS)
            name = "cuda runtime call";
        snprintf(args, sizeof args, "\"corr\":%u", a->correlationId);
        span(t, "host", a->threadId, a->start, a->end, "api", name, 0, args);
        break;
    }
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        snprintf(args, sizeof args,
                 "\"corr\":%u,\"graph\":%u,\"grid\":%d,\"block\":%d,\"regs\":%u,\"device\":%u",
                 k->correlationId, k->graphId, k->gridX * k->gridY * k->gridZ,
                 k->blockX * k->blockY * k->blockZ, k->registersPerThread, k->deviceId);
        span(t, "device", k->streamId, k->start, k->end, "kernel", k->name, 1, args);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)rec;
        snprintf(args, sizeof args, "\"corr\":%u,\"graph\":%u,\"bytes\":%" PRIu64 ",\"kind\":%u",
                 c->correlationId, c->graphId, c->bytes, c->copyKind);
        span(t, "device", c->streamId, c->start, c->end, "copy", "copy", 0, args);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)rec;
        snprintf(args, sizeof args, "\"corr\":%u,\"graph\":%u,\"bytes\":%" PRIu64, s->correlationId,
                 s->graphId, s->bytes);
        span(t, "device", s->streamId, s->start, s->end, "memset", "memset", 0, args);
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)rec;
        snprintf(args, sizeof args, "\"corr\":%u,\"stream\":%u", s->correlationId, s->streamId);
        /* on the host row of the call it belongs to: the report joins them by "corr" */
        span(t, "sync", 0, s->start, s->end, "sync", sync_name(s->type), 0, args);
        break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
        const CUpti_ActivityGraphTrace2 *g = (const CUpti_ActivityGraphTrace2 *)rec;
        snprintf(args, sizeof args, "\"corr\":%u,\"graph\":%u", g->correlationId, g->graphId);
        span(t, "device", g->streamId, g->start, g->end, "graph", "graph", 0, args);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)rec;
        const int start = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0;
        const int end = (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0;
        if (!start && !end) /* an instant mark */
            break;
        begin_event(t, start ? "B" : "E", "host", m->objectId.pt.threadId, m->timestamp);
        fprintf(t->out, "\"cat\":\"range\",\"id\":%u", m->id);
        if (start) {
            fputs(",\"name\":", t->out);
            put_name(t->out, m->name);
        }
        fputc('}', t->out);
        break;
    }
    default:
        break;
    }
}

/* ---- CUPTI's buffers -------------------------------------------------------------------- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = (uint8_t *)aligned_alloc(TRACE_ALIGN, TRACE_BUFFER_BYTES);
    *size = *buffer != NULL ? TRACE_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    tracer *t = the_tracer();
    pthread_mutex_lock(&t->lock);
    CUpti_Activity *rec = NULL;
    while (t->out != NULL && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
        write_record(t, rec);
    pthread_mutex_unlock(&t->lock);
    free(buffer);
}

static void finish_trace(void)
{
    tracer *t = the_tracer();
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&t->lock);
    if (t->out != NULL) {
        size_t dropped = 0;
        cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
        fprintf(t->out, "\n],\"otherData\":{\"events\":%" PRIu64 ",\"dropped\":%" PRIu64 "}}\n",
                t->events, t->dropped + (uint64_t)dropped);
        fclose(t->out);
        t->out = NULL;
        fprintf(stderr, "acm-trace: %" PRIu64 " events written (%" PRIu64 " records without times, "
                        "%zu dropped by CUPTI)\n", t->events, t->dropped, dropped);
    }
    pthread_mutex_unlock(&t->lock);
}

static int enable(CUpti_ActivityKind kind, const char *what)
{
    const CUptiResult r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS)
        cupti_failed(what, r);
    return r == CUPTI_SUCCESS;
}

/* Called by the CUDA driver at cuInit (CUDA_INJECTION64_PATH). */
__attribute__((visibility("default"))) int InitializeInjection(void);
int InitializeInjection(void)
{
    tracer *t = the_tracer();
    const char *path = getenv("ACM_TRACE_OUT");
    const char *graphs = getenv("ACM_TRACE_GRAPHS");
    pthread_mutex_lock(&t->lock);
    const int again = t->out != NULL; /* the driver calls it once a process; once is enough */
    if (!again)
        t->out = fopen(path != NULL && *path != '\0' ? path : "acm-trace.json", "w");
    if (!again && t->out != NULL)
        fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", t->out);
    pthread_mutex_unlock(&t->lock);
    if (again)
        return 1;
    if (t->out == NULL) {
        perror("acm-trace: the trace file");
        return 0;
    }
    CUPTI_TRY(cuptiGetTimestamp(&t->t0));
    CUPTI_TRY(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    enable(CUPTI_ACTIVITY_KIND_RUNTIME, "runtime calls");
    if (graphs != NULL && strcmp(graphs, "1") == 0)
        enable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE, "graphs");
    else
        enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernels");
    enable(CUPTI_ACTIVITY_KIND_MEMCPY, "copies");
    enable(CUPTI_ACTIVITY_KIND_MEMSET, "memsets");
    enable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronisations");
    enable(CUPTI_ACTIVITY_KIND_MARKER, "NVTX ranges");
    atexit(finish_trace);
    return 1;
}
