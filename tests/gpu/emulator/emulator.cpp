// The CUDA emulator (see run.sh): kernel launches, barriers and shuffles on fibers, the
// three cuBLAS calls through the host models, and lib/cuda/device.c's functions on host
// memory that is tracked, so a host pointer where device memory belongs is still caught.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <map>
#include <vector>

#include "cublas_v2.h"
#include "cuda_runtime.h"
extern "C" {
#include "core/check.h"
#include "core/tensor.h"
#include "cuda/device.h"
#include "cuda/gemm_map.h"
#include "cuda/trace_gpu.h"
void cuda_fill(float *x, int64_t n, float value); // lib/cuda/tensor.cu
void cuda_scale(float *x, int64_t n, float factor);
void cuda_fill16(uint16_t *x, int64_t n, uint16_t bits);
void cuda_convert(void *dst, DType dst_dtype, const void *src, DType src_dtype, int64_t n);
}

/* ---------------------------------------------------------------- fibers */

// Switching stacks: a few instructions on x86-64 (ucontext's swapcontext makes a
// system call per switch, and a launch of a million threads switches millions of times).
#if defined(__x86_64__)
extern "C" void emu_switch(void **save_sp, void *next_sp);
asm(".text\n.globl emu_switch\nemu_switch:\n"
    "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
    "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
    "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n");
struct Context { void *sp; };
static void context_make(Context *c, char *stack, size_t size, void (*entry)()) {
    uintptr_t top = ((uintptr_t)(stack + size)) & ~(uintptr_t)15;
    void **sp = (void **)(top - 8);  // after `ret`, rsp = top - 8, as after a call
    *--sp = (void *)entry;           // emu_switch's `ret` goes there
    for (int i = 0; i < 6; i++) *--sp = 0; // the six registers it pops
    c->sp = sp;
}
static void context_switch(Context *from, Context *to) { emu_switch(&from->sp, to->sp); }
#else
#include <ucontext.h>
struct Context { ucontext_t uc; };
static void context_make(Context *c, char *stack, size_t size, void (*entry)()) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = NULL;
    makecontext(&c->uc, entry, 0);
}
static void context_switch(Context *from, Context *to) { swapcontext(&from->uc, &to->uc); }
#endif

namespace emu {
dim3 thread_idx, block_idx, block_dim, grid_dim;

enum State { RUNNABLE, WAIT_WARP, WAIT_BLOCK, DONE };
struct Fiber {
    Context ctx;
    State state;
    unsigned char slot[8]; // a shuffle's value
};
enum { STACK_BYTES = 256 * 1024 };
static std::vector<Fiber> fibers;
static std::vector<char *> stacks;
static Context scheduler;
static int current;
static const std::function<void()> *body;

static void fiber_entry() {
    (*body)();
    fibers[current].state = DONE;
    context_switch(&fibers[current].ctx, &scheduler); // never resumed
    abort();
}

static void wait_as(State s) {
    fibers[current].state = s;
    context_switch(&fibers[current].ctx, &scheduler);
}

void block_barrier() { wait_as(WAIT_BLOCK); }

// Every lane of the warp writes its value, waits for the others, reads its partner's,
// and waits again before the slots are reused. A warp with exited lanes stops: the
// library's shuffles name all 32 lanes.
void warp_exchange(const void *v, void *out, int bytes, int lane) {
    memcpy(fibers[current].slot, v, (size_t)bytes);
    wait_as(WAIT_WARP);
    memcpy(out, fibers[(current / 32) * 32 + lane].slot, (size_t)bytes);
    wait_as(WAIT_WARP);
}

static void fail(const char *what) {
    fprintf(stderr, "CUDA emulator: %s (block %u,%u,%u of a grid %u,%u,%u, %u threads)\n", what,
            block_idx.x, block_idx.y, block_idx.z, grid_dim.x, grid_dim.y, grid_dim.z,
            block_dim.x * block_dim.y * block_dim.z);
    abort();
}

// Releases the warps whose live lanes all wait at a shuffle, else the block when all its
// live threads wait at __syncthreads; false when nothing can go on (a deadlock).
static bool release(int n) {
    bool released = false;
    for (int w = 0; w * 32 < n; w++) {
        int live = 0, waiting = 0;
        const int lanes = n - w * 32 < 32 ? n - w * 32 : 32;
        for (int l = 0; l < lanes; l++) {
            live += fibers[w * 32 + l].state != DONE;
            waiting += fibers[w * 32 + l].state == WAIT_WARP;
        }
        if (live == 0 || waiting != live) continue;
        if (live != 32) fail("a shuffle in a warp that has exited or missing lanes");
        for (int l = 0; l < 32; l++) fibers[w * 32 + l].state = RUNNABLE;
        released = true;
    }
    if (released) return true;
    for (int i = 0; i < n; i++)
        if (fibers[i].state != DONE && fibers[i].state != WAIT_BLOCK) return false;
    for (int i = 0; i < n; i++)
        if (fibers[i].state == WAIT_BLOCK) fibers[i].state = RUNNABLE;
    return true;
}

static void run_block(int n) {
    while ((int)stacks.size() < n) stacks.push_back((char *)malloc(STACK_BYTES));
    fibers.assign((size_t)n, Fiber());
    for (int i = 0; i < n; i++) {
        context_make(&fibers[i].ctx, stacks[i], STACK_BYTES, fiber_entry);
        fibers[i].state = RUNNABLE;
    }
    for (;;) {
        bool live = false;
        for (int i = 0; i < n; i++) {
            if (fibers[i].state != RUNNABLE) continue;
            current = i;
            thread_idx = dim3(i % block_dim.x, i / block_dim.x % block_dim.y,
                              i / (block_dim.x * block_dim.y));
            context_switch(&scheduler, &fibers[i].ctx);
        }
        for (int i = 0; i < n; i++) live = live || fibers[i].state != DONE;
        if (!live) return;
        if (!release(n)) fail("deadlock: threads wait at different barriers");
    }
}

void run_grid(dim3 grid, dim3 block, const std::function<void()> &kernel) {
    const unsigned threads = block.x * block.y * block.z;
    grid_dim = grid, block_dim = block, body = &kernel;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.x > 2147483647u || grid.y > 65535 ||
        grid.z > 65535 || threads == 0 || threads > 1024)
        fail("a launch CUDA would refuse (grid or block size)");
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                block_idx = dim3(x, y, z);
                run_block((int)threads);
            }
}
} // namespace emu

/* ---------------------------------------------------------------- graphs */

struct EmuGraph {
    std::vector<std::function<void()>> work; // in the order it was put on the stream
};

namespace emu {
static EmuGraph *g_recording;
bool recording() { return g_recording != NULL; }
void enqueue(std::function<void()> work) {
    if (g_recording) g_recording->work.push_back(std::move(work));
    else work();
}
static char library_stream; // what cuda_stream() stands for: its address
void check_stream(cudaStream_t s, const char *call) {
    if (g_recording && s != (cudaStream_t)&library_stream)
        die_at(__FILE__, __LINE__, "CUDA emulator: %s on the legacy default stream while a CUDA "
               "graph records the library's stream (CUDA refuses it: "
               "cudaErrorStreamCaptureImplicit): launch on cuda_stream()", call);
}
void refuse_while_recording(const char *call) {
    if (g_recording)
        die_at(__FILE__, __LINE__, "CUDA emulator: %s while a CUDA graph records (CUDA refuses it: "
            "cudaErrorStreamCaptureUnsupported): a layer waits for the GPU or allocates "
            "inside a recorded step", call);
}
} // namespace emu

cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode) {
    CHECK(!emu::g_recording, "CUDA emulator: a second recording while one is under way");
    CHECK(s == (cudaStream_t)&emu::library_stream, "CUDA emulator: a recording of the legacy "
          "default stream (CUDA refuses it)");
    emu::g_recording = new EmuGraph;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *graph) {
    CHECK(emu::g_recording, "CUDA emulator: cudaStreamEndCapture without a recording");
    *graph = emu::g_recording;
    emu::g_recording = NULL;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long) {
    *exec = new EmuGraph(*graph);
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
    emu::refuse_while_recording("cudaGraphLaunch");
    for (auto &w : exec->work) w();
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) { delete graph; return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { delete exec; return cudaSuccess; }
cudaError_t cudaMallocHost(void **p, size_t bytes) {
    emu::refuse_while_recording("cudaMallocHost");
    *p = malloc(bytes ? bytes : 1);
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
    emu::refuse_while_recording("cudaFreeHost");
    free(p);
    return cudaSuccess;
}

/* ---------------------------------------------------------------- cuBLAS */
// Each call is stream work: while a graph records it is kept, with alpha and beta read
// now (host pointers: cuBLAS reads them at the call), and computed when the graph runs.

// A model's call: now, or (recording) later, where a refusal stops the program.
static cublasStatus_t gemm_work(std::function<bool(char *why, size_t cap)> model,
                                cublasStatus_t refused) {
    if (emu::recording()) {
        emu::enqueue([=]() {
            char why[256];
            if (!model(why, sizeof why)) die_at(__FILE__, __LINE__, "CUDA emulator: a recorded GEMM: %s", why);
        });
        return CUBLAS_STATUS_SUCCESS;
    }
    char why[256];
    if (model(why, sizeof why)) return CUBLAS_STATUS_SUCCESS;
    fprintf(stderr, "CUDA emulator: %s\n", why);
    return refused;
}

cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    const float a = *alpha, b = *beta;
    return gemm_work([=](char *why, size_t cap) {
        return cublas_sgemm_model(ta == CUBLAS_OP_T, tb == CUBLAS_OP_T, m, n, k, a, A, lda, B,
                                  ldb, b, C, ldc, why, cap);
    }, CUBLAS_STATUS_INVALID_VALUE);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long stride_a, const float *B, int ldb,
                                         long long stride_b, const float *beta, float *C,
                                         int ldc, long long stride_c, int batch) {
    for (int i = 0; i < batch; i++) {
        const cublasStatus_t s = cublasSgemm(h, ta, tb, m, n, k, alpha, A + i * stride_a, lda,
                                             B + i * stride_b, ldb, beta, C + i * stride_c, ldc);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
    }
    return CUBLAS_STATUS_SUCCESS;
}

// CUBLAS_COMPUTE_32F with A, B and C of the types cuBLAS takes there, through the model:
// float32 sums, C rounded once (gemm_map.h).
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType_t a_type,
                            int lda, const void *B, cudaDataType_t b_type, int ldb,
                            const void *beta, void *C, cudaDataType_t c_type, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
    auto dtype_of = [](cudaDataType_t t) {
        return t == CUDA_R_16BF ? DTYPE_BF16 : t == CUDA_R_16F ? DTYPE_F16 : DTYPE_F32;
    };
    const bool known = (a_type == CUDA_R_32F || a_type == CUDA_R_16F || a_type == CUDA_R_16BF) &&
                       (c_type == CUDA_R_32F || c_type == CUDA_R_16F || c_type == CUDA_R_16BF);
    if (compute != CUBLAS_COMPUTE_32F || algo != CUBLAS_GEMM_DEFAULT || a_type != b_type ||
        !known) {
        fprintf(stderr, "CUDA emulator: cublasGemmEx with compute type %d, algorithm %d, types "
                "%d, %d, %d: not emulated\n", (int)compute, (int)algo, (int)a_type, (int)b_type,
                (int)c_type);
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const float a = *(const float *)alpha, b = *(const float *)beta;
    const DType ab = dtype_of(a_type), c = dtype_of(c_type);
    return gemm_work([=](char *why, size_t cap) {
        return cublas_gemm_ex_model(ta == CUBLAS_OP_T, tb == CUBLAS_OP_T, m, n, k, a, A, lda, B,
                                    ldb, ab, b, C, ldc, c, why, cap);
    }, CUBLAS_STATUS_NOT_SUPPORTED);
}

/* ---------------------------------------------------------------- lib/cuda/device.c */

static std::map<const char *, size_t> allocations; // device memory: start -> bytes
static bool started;
static pid_t started_in; // the process that started CUDA

/* CUDA does not survive fork: a child of a process that started it gets
 * cudaErrorInitializationError from its first call. The emulator says so, or a test that
 * starts CUDA before forking its child would pass here and fail on every GPU. */
static void refuse_after_fork(const char *call) {
    CHECK(!started || getpid() == started_in, "CUDA emulator: %s in process %d, a child forked "
          "after process %d started CUDA: on a GPU this is cudaErrorInitializationError (CUDA does "
          "not survive fork; start it in the child only)", call, (int)getpid(), (int)started_in);
}

static bool on_device(const void *p, size_t bytes) {
    auto it = allocations.upper_bound((const char *)p);
    if (it == allocations.begin()) return false;
    --it;
    return (const char *)p + bytes <= it->first + it->second;
}

static void *tensor_alloc(size_t bytes) {
    void *p = cuda_malloc(bytes); // (refused while a graph records)
    memset(p, 0, bytes);
    return p;
}

static void tensor_copy_bytes(void *dst, Device dd, const void *src, Device sd, size_t bytes) {
    emu::refuse_while_recording("a tensor copy (cudaMemcpy)");
    CHECK(on_device(dst, bytes) == (dd == DEVICE_CUDA) && on_device(src, bytes) == (sd == DEVICE_CUDA),
          "CUDA emulator: a tensor copy whose pointers are not on the devices it names");
    memmove(dst, src, bytes);
}

static const TensorDeviceOps EMULATED = {"CUDA (emulated)", tensor_alloc, cuda_free, cuda_fill, cuda_scale,
                                         tensor_copy_bytes, cuda_fill16, cuda_convert};

extern "C" {
void cuda_fail_at(const char *file, int line, const char *call, int code, const char *name,
                  const char *text) {
    die_at(file, line, "%s: error %d (%s: %s)", call, code, name, text);
}
void cublas_fail_at(const char *file, int line, const char *call, int status) {
    die_at(file, line, "%s: cuBLAS status %d", call, status);
}
void cuda_check_launch_at(const char *file, int line) { (void)file, (void)line; }
bool cuda_built(void) { return true; }
int cuda_current_device(void) { return started ? 0 : -1; }
int cuda_device_count(char *why, size_t why_cap) { (void)why, (void)why_cap; return 1; }
void cuda_device_info(int dev, CudaDeviceInfo *info) {
    (void)dev;
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "CUDA emulator (CPU)");
}
void *cuda_malloc(size_t bytes) {
    refuse_after_fork("cudaMalloc");
    emu::refuse_while_recording("cudaMalloc");
    CHECK(started, "cuda_malloc before cuda_init(): start the CUDA backend first");
    char *p = (char *)malloc(bytes ? bytes : 1);
    memset(p, 0xff, bytes ? bytes : 1); // NaN floats, -1 ints: cudaMalloc does not clear
    allocations[p] = bytes ? bytes : 1;
    return p;
}
static uint64_t frees;
void cuda_free(void *p) {
    if (!p) return;
    emu::refuse_while_recording("cudaFree");
    CHECK(allocations.erase((const char *)p) == 1, "CUDA emulator: cuda_free(%p): not allocated", p);
    free(p);
    frees++;
}
uint64_t cuda_frees(void) { return frees; }
void cuda_copy_to_device(void *dst, const void *src, size_t bytes) {
    emu::refuse_while_recording("a copy to the device (cudaMemcpy)");
    CHECK(on_device(dst, bytes) && !on_device(src, bytes), "CUDA emulator: a copy to the device from %p to %p", src, dst);
    memcpy(dst, src, bytes);
}
void cuda_copy_to_host(void *dst, const void *src, size_t bytes) {
    emu::refuse_while_recording("a copy to the host (cudaMemcpy)");
    CHECK(!on_device(dst, bytes) && on_device(src, bytes), "CUDA emulator: a copy to the host from %p to %p", src, dst);
    memcpy(dst, src, bytes);
}
void cuda_copy_on_device(void *dst, const void *src, size_t bytes) {
    CHECK(on_device(dst, bytes) && on_device(src, bytes), "CUDA emulator: a copy on the device from %p to %p", src, dst);
    emu::enqueue([=]() { memmove(dst, src, bytes); }); // on the stream (cudaMemcpyAsync)
}
void cuda_sync(void) { emu::refuse_while_recording("cudaDeviceSynchronize"); }
void cuda_sync_compute(void) { emu::refuse_while_recording("cudaStreamSynchronize"); }
cudaStream_t cuda_stream(void) { return (cudaStream_t)&emu::library_stream; }
bool cuda_is_device_pointer(const void *p) { return p && on_device(p, 1); }
void cuda_check_device_pointer_at(const char *file, int line, const char *name, const void *p) {
    if (!cuda_is_device_pointer(p))
        die_at(file, line, "%s (%p) is not GPU memory: allocate it with cuda_malloc or "
               "device_alloc(DEVICE_CUDA, ...)", name, p);
}
cublasHandle_t cuda_cublas(void) {
    refuse_after_fork("a cuBLAS call");
    CHECK(started, "a cuBLAS call before cuda_init(): start the CUDA backend first");
    return (cublasHandle_t)&allocations;
}
bool cuda_init(char *why, size_t why_cap) {
    (void)why, (void)why_cap;
    refuse_after_fork("cuda_init");
    if (!started) tensor_register_device(DEVICE_CUDA, &EMULATED), cuda_trace_register();
    if (!started) started_in = getpid();
    started = true;
    return true;
}
}

// The emulated device sits on no PCI bus: the runtime "cannot say" (cuda/device.h), so a
// trace has no GPU counters here (core/trace.h) unless NVML's index fallback finds one.
extern "C" bool cuda_device_pci_bus_id(int dev, char *out, size_t cap) {
    (void)dev;
    if (cap > 0) out[0] = '\0';
    return false;
}
