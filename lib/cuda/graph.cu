// CUDA graphs (graph.h): stream capture of the compute stream, the dropout keys a
// replay draws again, and the checks it runs after.
#include <string.h>

extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "layers/dropout.h"
}
#include "cuda_check.h"
#include "graph.h"

struct Check {
    void (*fn)(const void *ctx);
    void *ctx; // a copy, owned here
};

struct CudaGraph {
    cudaGraphExec_t exec;
    int keys;                        // keys drawn per launch
    Rng *key_rng[CUDA_GRAPH_KEYS_MAX]; // where key i is drawn from, in recording order
    uint64_t *keys_host;             // [CUDA_GRAPH_KEYS_MAX] pinned: the copy reads it later
    uint64_t *keys_dev;              // [CUDA_GRAPH_KEYS_MAX] what the kernels read
    cudaEvent_t keys_copied;         // keys_host may be written again once this happened
    uint64_t frees;                  // cuda_frees() when recorded
    Check checks[CUDA_GRAPH_CHECKS_MAX];
    int check_count;
    bool launched;                   // once launched, a launch draws new keys
};

static CudaGraph *g_recording;

extern "C" bool cuda_graph_recording(void) { return g_recording != NULL; }

extern "C" void cuda_graph_begin(void) {
    CHECK(!g_recording, "cuda_graph_begin while a graph records: one recording at a time");
    CudaGraph *g = (CudaGraph *)xcalloc(1, sizeof *g);
    // memory first: nothing may be allocated once the recording has begun
    g->keys_dev = (uint64_t *)cuda_malloc(CUDA_GRAPH_KEYS_MAX * sizeof(uint64_t));
    CUDA_CHECK(cudaMallocHost((void **)&g->keys_host, CUDA_GRAPH_KEYS_MAX * sizeof(uint64_t)));
    CUDA_CHECK(cudaEventCreateWithFlags(&g->keys_copied, cudaEventDisableTiming));
    // global mode: a forbidden call from any thread ends the recording with an error
    CUDA_CHECK(cudaStreamBeginCapture(cuda_stream(), cudaStreamCaptureModeGlobal));
    g_recording = g;
}

extern "C" CudaGraph *cuda_graph_end(void) {
    CHECK(g_recording, "cuda_graph_end without cuda_graph_begin");
    CudaGraph *g = g_recording;
    g_recording = NULL;
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamEndCapture(cuda_stream(), &graph));
    CUDA_CHECK(cudaGraphInstantiate(&g->exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph)); // the executable graph is a copy
    g->frees = cuda_frees();
    return g;
}

extern "C" void cuda_graph_launch(CudaGraph *g) {
    CHECK(!g_recording, "cuda_graph_launch while a graph records");
    if (g->keys > 0) {
        if (g->launched) { // (the recording drew the first launch's keys)
            CUDA_CHECK(cudaEventSynchronize(g->keys_copied)); // the last copy has read them
            for (int i = 0; i < g->keys; i++) g->keys_host[i] = dropout_draw_key(g->key_rng[i]);
        }
        CUDA_CHECK(cudaMemcpyAsync(g->keys_dev, g->keys_host, (size_t)g->keys * sizeof(uint64_t),
                                   cudaMemcpyHostToDevice, cuda_stream()));
        CUDA_CHECK(cudaEventRecord(g->keys_copied, cuda_stream()));
    }
    CUDA_CHECK(cudaGraphLaunch(g->exec, cuda_stream()));
    g->launched = true;
    for (int i = 0; i < g->check_count; i++) g->checks[i].fn(g->checks[i].ctx);
}

extern "C" void cuda_graph_free(CudaGraph *g) {
    if (!g) return;
    CUDA_CHECK(cudaGraphExecDestroy(g->exec));
    CUDA_CHECK(cudaEventDestroy(g->keys_copied));
    CUDA_CHECK(cudaFreeHost(g->keys_host));
    cuda_free(g->keys_dev);
    for (int i = 0; i < g->check_count; i++) free(g->checks[i].ctx);
    free(g);
}

extern "C" bool cuda_graph_stale(const CudaGraph *g) { return cuda_frees() != g->frees; }


extern "C" const uint64_t *cuda_graph_key(Rng *rng, uint64_t *key) {
    *key = dropout_draw_key(rng);
    CudaGraph *g = g_recording;
    if (!g) return NULL;
    CHECK(g->keys < CUDA_GRAPH_KEYS_MAX, "a CUDA graph records more than %d dropout keys",
          CUDA_GRAPH_KEYS_MAX);
    g->key_rng[g->keys] = rng;
    g->keys_host[g->keys] = *key;
    return g->keys_dev + g->keys++;
}

extern "C" void cuda_graph_after(void (*check)(const void *ctx), const void *ctx,
                                 size_t ctx_bytes) {
    CudaGraph *g = g_recording;
    if (!g) {
        check(ctx);
        return;
    }
    CHECK(g->check_count < CUDA_GRAPH_CHECKS_MAX, "a CUDA graph records more than %d checks",
          CUDA_GRAPH_CHECKS_MAX);
    void *copy = xmalloc(ctx_bytes ? ctx_bytes : 1);
    memcpy(copy, ctx, ctx_bytes);
    g->checks[g->check_count++] = Check{check, copy};
}
