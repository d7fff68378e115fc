/* The CUDA backend's start, its devices and its memory, in host C against the CUDA
 * runtime (compiled in builds with CUDA; cuda_none.c stands in otherwise). */
#ifdef HAVE_CUDA
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/envvars.h"
#include "core/tensor.h"
#include "cuda_check.h"
#include "device.h"
#include "graph.h"
#include "kernels.h"
#include "trace_gpu.h"

static int g_device = -1;
static cublasHandle_t g_cublas;
static cudaStream_t g_stream;  /* the compute stream: every kernel and cuBLAS call */
static void *g_cublas_workspace;
static bool g_sync_launches;

static const char *hint_for(int code) {
    switch (code) {
    case cudaErrorMemoryAllocation:
        return "the GPU is out of memory: use a smaller --batch-size, or check with "
               "nvidia-smi that no other process holds the device";
    case cudaErrorInvalidConfiguration:
        return "a kernel was launched with an impossible configuration: check blocks and "
               "threads (at most 1024 threads per block, blocks > 0)";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
        return "a kernel read or wrote outside its buffers: check its index arithmetic and "
               "bounds test; COURSE_CUDA_SYNC=1 and compute-sanitizer name the kernel";
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorUnsupportedPtxVersion:
        return "this build has no code for this GPU's architecture: rebuild with "
               "CUDA_ARCH set to its compute capability (e.g. make CUDA_ARCH=80 for an A100)";
    case cudaErrorInvalidValue:
        return "an argument is wrong: a NULL or host pointer where device memory is expected, "
               "or a size of 0";
    case cudaErrorStreamCaptureUnsupported:
    case cudaErrorStreamCaptureInvalidated:
    case cudaErrorStreamCaptureImplicit:
        return "a layer waited for the GPU, allocated memory or used the default stream "
               "while a CUDA graph was recording its step (graph.h says what may not happen "
               "then): run without --cuda-graph, and report the layer";
    default:
        return "run with COURSE_CUDA_SYNC=1 (and under compute-sanitizer) to find the failing call";
    }
}

void cuda_fail_at(const char *file, int line, const char *call, int code, const char *name,
                  const char *text) {
    die_at(file, line, "CUDA error %d (%s: %s) in %s\n  hint: %s", code, name, text, call,
           hint_for(code));
}

void cublas_fail_at(const char *file, int line, const char *call, int status) {
    cublasStatus_t s = (cublasStatus_t)status;
    die_at(file, line, "cuBLAS error %d (%s: %s) in %s\n  hint: %s", status,
           cublasGetStatusName(s), cublasGetStatusString(s), call,
           s == CUBLAS_STATUS_INVALID_VALUE
               ? "a size or leading dimension is wrong: for a column-major m x k matrix, lda >= m"
               : s == CUBLAS_STATUS_NOT_INITIALIZED ? "cuda_init() must run before cuBLAS calls"
                                                    : "check the arguments of the call");
}

void cuda_check_launch_at(const char *file, int line) {
    cudaError_t e = cudaGetLastError();
    /* (not while a graph records: nothing runs then, and a wait would end the recording) */
    if (e == cudaSuccess && g_sync_launches && !cuda_graph_recording()) e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
        cuda_fail_at(file, line, "a kernel launch", (int)e, cudaGetErrorName(e),
                     cudaGetErrorString(e));
}

bool cuda_built(void) { return true; }
int cuda_current_device(void) { return g_device; }

int cuda_device_count(char *why, size_t why_cap) {
    int driver = 0, runtime = 0, n = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    if (driver == 0) {
        snprintf(why, why_cap, "no NVIDIA driver on this machine, so no GPU to use: run on a "
                 "GPU node (srun --gres=gpu:1 ..., or the lesson's sbatch script)");
        return -1;
    }
    /* Within one major version an older driver runs a newer runtime (CUDA's minor
     * version compatibility: a 13.0 driver runs a 13.1 build), so only an older
     * major version is refused here; cudaGetDeviceCount says the rest. */
    if (driver / 1000 < runtime / 1000) {
        snprintf(why, why_cap, "the NVIDIA driver supports CUDA up to %d.%d, but this build "
                 "uses CUDA %d.%d: load an older CUDA module and rebuild (make clean all), or "
                 "ask the admins for a newer driver", driver / 1000, driver % 1000 / 10,
                 runtime / 1000, runtime % 1000 / 10);
        return -1;
    }
    cudaError_t e = cudaGetDeviceCount(&n);
    cudaGetLastError(); /* do not leave the error for the next call to find */
    if (e == cudaErrorInsufficientDriver || e == cudaErrorCompatNotSupportedOnDevice) {
        snprintf(why, why_cap, "the NVIDIA driver (CUDA %d.%d) is too old for this build (CUDA "
                 "%d.%d): %s; load an older CUDA module and rebuild (make clean all), or ask the "
                 "admins for a newer driver", driver / 1000, driver % 1000 / 10, runtime / 1000,
                 runtime % 1000 / 10, cudaGetErrorString(e));
        return -1;
    }
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        snprintf(why, why_cap, "no CUDA device is visible (CUDA_VISIBLE_DEVICES=%s): on a "
                 "cluster ask Slurm for one (--gres=gpu:1 or --gpus=1)", vis ? vis : "unset");
        return -1;
    }
    if (e != cudaSuccess) {
        snprintf(why, why_cap, "cannot count the CUDA devices: %s (%s)", cudaGetErrorName(e),
                 cudaGetErrorString(e));
        return -1;
    }
    return n;
}

static int attribute(enum cudaDeviceAttr a, int dev) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return v;
}

void cuda_device_info(int dev, CudaDeviceInfo *info) {
    memset(info, 0, sizeof *info);
    struct cudaDeviceProp p;
    CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
    snprintf(info->name, sizeof info->name, "%s", p.name);
    info->total_bytes = p.totalGlobalMem;
    info->major = p.major;
    info->minor = p.minor;
    info->multiprocessors = p.multiProcessorCount;
    /* CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes remain. */
    info->clock_khz = attribute(cudaDevAttrClockRate, dev);
    info->memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, dev);
    info->bus_width_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, dev);
    if (dev == g_device) {
        size_t free_b = 0, total_b = 0;
        CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
        info->free_bytes = free_b;
    }
}

/* ---------------------------------------------------------------- memory */

static void require_started(const char *what) {
    CHECK(g_device >= 0, "%s before cuda_init(): start the CUDA backend first", what);
}

void *cuda_malloc(size_t bytes) {
    require_started("cuda_malloc");
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

static uint64_t g_frees;

void cuda_free(void *p) {
    if (!p) return;
    CUDA_CHECK(cudaFree(p));
    g_frees++;
}

uint64_t cuda_frees(void) { return g_frees; }

void cuda_copy_to_device(void *dst, const void *src, size_t bytes) {
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void cuda_copy_to_host(void *dst, const void *src, size_t bytes) {
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void cuda_copy_on_device(void *dst, const void *src, size_t bytes) {
    /* on the compute stream, in order with the kernels (and recordable in a graph) */
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, g_stream));
}

void cuda_memory_in_use(size_t *used, size_t *total) {
    require_started("cuda_memory_in_use");
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    *used = total_b - free_b, *total = total_b;
}

void cuda_sync(void) { CUDA_CHECK(cudaDeviceSynchronize()); }
void cuda_sync_compute(void) { CUDA_CHECK(cudaStreamSynchronize(g_stream)); }

void cuda_check_device_pointer_at(const char *file, int line, const char *name, const void *p) {
    if (!cuda_is_device_pointer(p))
        die_at(file, line, "%s (%p) is not GPU memory: allocate it with cuda_malloc or "
               "device_alloc(DEVICE_CUDA, ...) (a host pointer would make the kernel fail with "
               "an illegal address)", name, p);
}

bool cuda_is_device_pointer(const void *p) {
    struct cudaPointerAttributes a;
    if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* older runtimes call a host pointer an error: clear it */
        return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged ||
           a.type == cudaMemoryTypeHost;
}

cudaStream_t cuda_stream(void) { return g_stream; }

cublasHandle_t cuda_cublas(void) {
    require_started("a cuBLAS call");
    return g_cublas;
}

/* ---------------------------------------------------------------- tensors */

static void *tensor_alloc(size_t bytes) {
    void *p = cuda_malloc(bytes);
    CUDA_CHECK(cudaMemset(p, 0, bytes));
    return p;
}

static void tensor_copy_bytes(void *dst, Device dd, const void *src, Device sd, size_t bytes) {
    enum cudaMemcpyKind kind = dd == DEVICE_CUDA ? (sd == DEVICE_CUDA ? cudaMemcpyDeviceToDevice
                                                                      : cudaMemcpyHostToDevice)
                                                 : cudaMemcpyDeviceToHost;
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
}

static const TensorDeviceOps CUDA_TENSORS = {"CUDA", tensor_alloc, cuda_free, cuda_fill,
                                             cuda_scale, tensor_copy_bytes, cuda_fill16, cuda_convert};

/* ---------------------------------------------------------------- start */

bool cuda_init(char *why, size_t why_cap) {
    if (g_device >= 0) return true;
    int count = cuda_device_count(why, why_cap);
    if (count < 1) return false;
    int dev = cuda_pick_device(env_local_rank(), count);
    cudaError_t e = cudaSetDevice(dev);
    if (e == cudaSuccess) e = cudaFree(NULL); /* creates the context now, not at first use */
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, why_cap, "cannot use CUDA device %d of %d: %s (%s)%s", dev, count,
                 cudaGetErrorName(e), cudaGetErrorString(e),
                 e == cudaErrorDevicesUnavailable
                     ? "; it is busy (exclusive mode, another job?)"
                     : "");
        return false;
    }
    cublasStatus_t s = cublasCreate(&g_cublas);
    /* 16-bit GEMMs (cuda_gemm_ex) round C once, from float32 sums, as their CPU twins
     * do: no split-K partial sums reduced in bf16/fp16 (cuBLAS's default allows it) */
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasSetMathMode(g_cublas, CUBLAS_DEFAULT_MATH |
                                            CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    /* The library's own stream, not the legacy default one, so that a step can be
     * recorded as a CUDA graph (graph.h: capture refuses the legacy stream). It is a
     * blocking stream: work a lesson launches on the default stream still waits for it,
     * and it for that work, as with one stream. cuBLAS runs on it, with its workspace
     * given up front (it must not allocate while a graph records): 32 MiB on Hopper
     * and later, 4 MiB before, the sizes NVIDIA's cuBLAS documentation recommends. */
    if (cudaStreamCreate(&g_stream) != cudaSuccess) {
        cudaGetLastError();
        snprintf(why, why_cap, "cannot create a CUDA stream on device %d", dev);
        return false;
    }
    const int major = attribute(cudaDevAttrComputeCapabilityMajor, dev);
    const size_t workspace = (major >= 9 ? 32u : 4u) << 20;
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetStream(g_cublas, g_stream);
    if (s == CUBLAS_STATUS_SUCCESS && cudaMalloc(&g_cublas_workspace, workspace) != cudaSuccess) {
        cudaGetLastError();
        s = CUBLAS_STATUS_ALLOC_FAILED;
    }
    if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetWorkspace(g_cublas, g_cublas_workspace, workspace);
    if (s != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, why_cap, "cuBLAS did not start on device %d: %s", dev,
                 cublasGetStatusString(s));
        return false;
    }
    const char *sync = getenv("COURSE_CUDA_SYNC");
    g_sync_launches = sync && *sync && strcmp(sync, "0") != 0;
    g_device = dev;
    tensor_register_device(DEVICE_CUDA, &CUDA_TENSORS);
    cuda_trace_register(); /* a trace (core/trace.h) times compute ranges on the GPU too */
    return true;
}
#endif
