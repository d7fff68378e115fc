// The CUDA emulator's stand-in for <cuda_runtime.h>: the subset of CUDA C++ that
// lib/cuda/*.cu uses, on the CPU (see run.sh). Kernels are plain functions; a launch
// runs every block one after the other, each of its threads on a fiber of its own, so
// __syncthreads and __shfl_xor_sync wait as on a GPU. Not a GPU: no concurrency
// between blocks, no memory model, glibc's expf/erff for CUDA's, cuBLAS computed by
// the host model of lib/cuda/gemm_map.h.
#ifndef EMULATOR_CUDA_RUNTIME_H
#define EMULATOR_CUDA_RUNTIME_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <functional>

typedef int cudaError_t;
enum { cudaSuccess = 0 };
inline const char *cudaGetErrorName(cudaError_t) { return "emulated"; }
inline const char *cudaGetErrorString(cudaError_t) { return "emulated"; }

#define __global__
#define __device__
#define __host__
#define __shared__ static /* one block runs at a time: a static is its shared memory */
#define __align__(n) __attribute__((aligned(n)))

struct __align__(16) float4 {
    float x, y, z, w;
};

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};

typedef void *cudaStream_t;

namespace emu {
extern dim3 thread_idx, block_idx, block_dim, grid_dim;
void block_barrier();                                            // __syncthreads
void warp_exchange(const void *v, void *out, int bytes, int lane); // a shuffle
void run_grid(dim3 grid, dim3 block, const std::function<void()> &body);
// Work on a stream: done now, or kept while a graph records (the graph runs it later).
void enqueue(std::function<void()> work);
bool recording();
// A call that waits for the GPU or allocates, while a graph records: stops, as CUDA ends
// the recording with cudaErrorStreamCaptureUnsupported.
void refuse_while_recording(const char *call);
// Work put on stream s while a graph records: stops unless s is the library's stream
// (cuda_stream(), which records): the legacy default stream (0) cannot take work then
// (cudaErrorStreamCaptureImplicit).
void check_stream(cudaStream_t s, const char *call);

template <class... P> struct Launch {
    void (*kernel)(P...);
    dim3 grid, block;
    cudaStream_t stream;
    template <class... A> void operator()(A... args) {
        check_stream(stream, "a kernel launch");
        const dim3 g = grid, b = block;
        void (*k)(P...) = kernel;
        enqueue([=]() { run_grid(g, b, [=]() { k(args...); }); });
    }
};
// kernel<<<grid, block>>>: the legacy default stream; <<<grid, block, shared, stream>>>
template <class... P> Launch<P...> launch(void (*kernel)(P...), dim3 grid, dim3 block,
                                          size_t shared = 0, cudaStream_t stream = 0) {
    (void)shared;
    return Launch<P...>{kernel, grid, block, stream};
}
} // namespace emu

#define threadIdx emu::thread_idx
#define blockIdx emu::block_idx
#define blockDim emu::block_dim
#define gridDim emu::grid_dim
// run.sh rewrites kernel<<<grid, block, shared, stream>>>(args) as
// EMU_LAUNCH((kernel), grid, block, shared, stream)(args)
#define EMU_LAUNCH(kernel, grid, block, ...) emu::launch(kernel, grid, block, ##__VA_ARGS__)

inline void __syncthreads() { emu::block_barrier(); }
template <class T> T __shfl_xor_sync(unsigned, T v, int mask) {
    T r;
    emu::warp_exchange(&v, &r, (int)sizeof(T), (int)((threadIdx.x % 32) ^ (unsigned)mask));
    return r;
}
inline int atomicMin(int *a, int v) { const int old = *a; if (v < old) *a = v; return old; }
inline float atomicAdd(float *a, float v) { const float old = *a; *a = old + v; return old; }
inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, sizeof d); return d; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// Events (lib/cuda/trace_gpu.cu): a launch runs at once, so an event happens when it is
// recorded; its time is the host's clock then.
struct EmuEvent {
    int64_t ns;
};
typedef EmuEvent *cudaEvent_t;
enum { cudaEventDisableTiming = 2 };
inline cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = new EmuEvent{0}; return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = 0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    e->ns = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
    return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) {
    emu::refuse_while_recording("cudaEventSynchronize");
    return cudaSuccess;
}
inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    *ms = (float)((double)(b->ns - a->ns) / 1e6);
    return cudaSuccess;
}


// Copies on the stream, and pinned host memory (plain host memory here).
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind,
                                   cudaStream_t s) {
    emu::check_stream(s, "cudaMemcpyAsync");
    emu::enqueue([=]() { memmove(dst, src, bytes); });
    return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s) {
    emu::check_stream(s, "cudaMemsetAsync");
    emu::enqueue([=]() { memset(p, value, bytes); });
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);

// Graphs: a recording keeps the stream's work (enqueue) in order; a launch runs it.
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal = 0 };
typedef struct EmuGraph *cudaGraph_t;
typedef struct EmuGraph *cudaGraphExec_t;
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);

#endif
