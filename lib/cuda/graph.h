/* CUDA graphs: the GPU work of a step recorded once and then launched whole, for
 * steps where launching some hundred small kernels one by one takes longer than
 * running them (the tutorial-size transformer at 20 x 35 tokens: a kernel there runs
 * for a few microseconds, about as long as its launch costs the host).
 *
 *   cuda_graph_begin();               // record: kernels, cuBLAS calls and copies on the
 *   ... the library's layers ...      // compute stream (cuda_stream()) are kept, not run
 *   CudaGraph *g = cuda_graph_end();
 *   cuda_graph_launch(g);             // runs it (the recording itself ran nothing)
 *   ... later steps: cuda_graph_launch(g) again: the same kernels on the same memory
 *
 * A replay runs no host code: the arguments the host gave each kernel while recording
 * are frozen into the graph. So the layers hand a graph what changes from step to step,
 * and what the host must look at after the GPU:
 *   - dropout keys: cuda_graph_key draws the key now, as without a graph, and draws it
 *     again before each replay, from the same Rng, in the order of recording; the kernel
 *     reads it from device memory. A replayed step drops what the step run without a
 *     graph would drop, bit for bit, and leaves the Rng in the same state;
 *   - checks: cuda_graph_after(check, ...) runs check after each replay (a kernel that
 *     flags a token outside the vocabulary: the host reads the flag then).
 * Inputs must sit at the addresses they had while recording (a batch copied into the
 * same device buffer each step), with the same shapes; a caller keeps one graph per
 * shape (models/block_graph.h).
 *
 * While recording, nothing may wait for the GPU or allocate: a copy to the host, a
 * cudaMalloc or cudaFree, a device-wide synchronisation, work on the legacy default
 * stream. CUDA ends the recording with an error then, which the check macros name with
 * a hint; the emulator (tests/gpu/emulator) refuses those of the library's calls, so a
 * layer that would break a recording is found without a GPU. A graph names the memory
 * it was recorded on: once any is freed it is stale (cuda_graph_stale). One recording at a time, on the host thread that
 * uses the GPU. In a build without CUDA these stop with a message (cuda_none.c). */
#ifndef CUDA_GRAPH_H
#define CUDA_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CudaGraph CudaGraph;

enum {
    CUDA_GRAPH_KEYS_MAX = 1024, /* dropout keys one graph redraws (a step: a few per layer) */
    CUDA_GRAPH_CHECKS_MAX = 64, /* checks after it (a step: one per embedding) */
};

void cuda_graph_begin(void);
/* The recorded work, ready to launch; it has not run yet. */
CudaGraph *cuda_graph_end(void);
/* Redraws the keys (not at the first launch: the recording drew them), copies them to
 * the device, launches the graph on the compute stream, then runs the checks (which
 * wait for it where they read the GPU). */
void cuda_graph_launch(CudaGraph *g);
void cuda_graph_free(CudaGraph *g);
/* True between cuda_graph_begin and cuda_graph_end. */
bool cuda_graph_recording(void);
/* True once device memory was freed after g was recorded (cuda_frees): g may name it
 * (a layer's scratch regrown for a larger batch, another model's buffers): record anew. */
bool cuda_graph_stale(const CudaGraph *g);

/* A dropout key for a kernel: *key = dropout_draw_key(rng) in every case. While a graph
 * records, also the device address the kernel must read the key from (refilled before
 * every replay); otherwise NULL (the kernel takes *key). */
const uint64_t *cuda_graph_key(Rng *rng, uint64_t *key);
/* While a graph records: check(ctx) runs after each of its launches, on a copy of the
 * ctx_bytes at ctx. Otherwise it runs now. */
void cuda_graph_after(void (*check)(const void *ctx), const void *ctx, size_t ctx_bytes);

#ifdef __cplusplus
}
#endif

#endif
