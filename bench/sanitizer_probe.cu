/*
 * libacmlbm -- a probe of compute-sanitizer, not of the library
 * (docs/performance.md, "The enqueue of a frame; memcheck and queued device
 * loops"): a graph whose only work is a WHILE conditional node (a body
 * kernel, then the kernel that counts the iteration and sets the condition),
 * launched `launches` times into one stream, with no synchronisation between
 * the launches (queued) or with one after each (--synced). The library's runs
 * of steps are such graphs (cuda/backend_graph.cu, "runs as loops") and a
 * game queues several. Without a tool every launch must add `iterations` to
 * every value: the program checks that. Under memcheck of compute-sanitizer
 * 2025.3.1 the queued launches end in an illegal-address error with no
 * faulting access reported, the synchronised ones do not (nor, queued, the
 * same graph with a kernel first, as the library's graphs begin):
 * bench/device-check.sh runs the probe under memcheck first and, where it
 * fails, checks the library's test cases with CUDA_LAUNCH_BLOCKING=1 (every
 * launch completes before the next).
 *   acm-sanitizer-probe [--synced] [--launches N]
 * Exit: 0 right, 1 wrong or a CUDA error, 77 no CUDA device.
 * SPDX-License-Identifier: Apache-2.0
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROBE_N = 1 << 16, PROBE_BLOCK = 256, PROBE_ITERATIONS = 4 };

#define PROBE_TRY(call)                                                                        \
    do {                                                                                       \
        const cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "acm-sanitizer-probe: %s: %s\n", #call, cudaGetErrorString(e_));   \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

__global__ void probe_body(float *a, int n)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n)
        a[i] += 1.0f;
}

__global__ void probe_condition(cudaGraphConditionalHandle h, unsigned *iteration,
                                unsigned iterations)
{
    if (threadIdx.x == 0)
        cudaGraphSetConditional(h, ++*iteration < iterations);
}

/* The graph: the iteration count zeroed, then WHILE { body; condition }. */
static int probe_graph(cudaGraph_t g, float *a, unsigned *iteration)
{
    cudaMemsetParams zero = {};
    zero.dst = iteration;
    zero.elementSize = sizeof(unsigned);
    zero.width = zero.height = 1;
    cudaGraphNode_t first, loop, body_node;
    PROBE_TRY(cudaGraphAddMemsetNode(&first, g, NULL, 0, &zero));
    cudaGraphConditionalHandle h;
    PROBE_TRY(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams cond = {}; /* zeroed: a union without a default constructor */
    cond.type = cudaGraphNodeTypeConditional;
    cond.conditional.handle = h;
    cond.conditional.type = cudaGraphCondTypeWhile;
    cond.conditional.size = 1;
    PROBE_TRY(cudaGraphAddNode(&loop, g, &first, NULL, 1, &cond));
    cudaGraph_t body = cond.conditional.phGraph_out[0];
    int n = PROBE_N;
    unsigned iterations = PROBE_ITERATIONS;
    void *body_args[] = {&a, &n};
    void *cond_args[] = {&h, &iteration, &iterations};
    cudaKernelNodeParams k = {};
    k.func = (void *)probe_body;
    k.gridDim = dim3(PROBE_N / PROBE_BLOCK);
    k.blockDim = dim3(PROBE_BLOCK);
    k.kernelParams = body_args;
    PROBE_TRY(cudaGraphAddKernelNode(&body_node, body, NULL, 0, &k));
    k.func = (void *)probe_condition;
    k.gridDim = k.blockDim = dim3(1);
    k.kernelParams = cond_args;
    cudaGraphNode_t cond_node;
    PROBE_TRY(cudaGraphAddKernelNode(&cond_node, body, &body_node, 1, &k));
    return 0;
}

static int probe(int launches, bool synced)
{
    float *a = NULL;
    unsigned *iteration = NULL;
    PROBE_TRY(cudaMalloc((void **)&a, PROBE_N * sizeof(float)));
    PROBE_TRY(cudaMemset(a, 0, PROBE_N * sizeof(float)));
    PROBE_TRY(cudaMalloc((void **)&iteration, sizeof(unsigned)));
    cudaStream_t s;
    PROBE_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t g;
    PROBE_TRY(cudaGraphCreate(&g, 0));
    if (probe_graph(g, a, iteration) != 0)
        return 1;
    cudaGraphExec_t exec;
    PROBE_TRY(cudaGraphInstantiate(&exec, g, 0));
    for (int l = 0; l < launches; ++l) {
        PROBE_TRY(cudaGraphLaunch(exec, s));
        if (synced)
            PROBE_TRY(cudaStreamSynchronize(s));
    }
    PROBE_TRY(cudaStreamSynchronize(s));
    float *h = (float *)malloc(PROBE_N * sizeof(float));
    if (h == NULL)
        return 1;
    PROBE_TRY(cudaMemcpy(h, a, PROBE_N * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (int i = 0; i < PROBE_N; ++i)
        wrong += h[i] != (float)(launches * PROBE_ITERATIONS);
    free(h);
    printf("acm-sanitizer-probe: %d launches (%s) of a WHILE loop of %d iterations: %d of %d "
           "values wrong\n",
           launches, synced ? "a synchronisation after each" : "queued", PROBE_ITERATIONS, wrong,
           PROBE_N);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    cudaFree(iteration);
    cudaFree(a);
    return wrong == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    bool synced = false;
    int launches = 40;
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--synced") == 0) {
            synced = true;
        } else if (strcmp(argv[i], "--launches") == 0 && i + 1 < argc) {
            launches = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: acm-sanitizer-probe [--synced] [--launches N]\n");
            return 2;
        }
    }
    if (launches < 1 || launches > 100000) {
        fprintf(stderr, "acm-sanitizer-probe: --launches must be in [1, 100000]\n");
        return 2;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        printf("acm-sanitizer-probe: no CUDA device, nothing to probe\n");
        return 77;
    }
    return probe(launches, synced);
}
