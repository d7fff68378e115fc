/* The GPU, from the host: start the CUDA backend, query devices, move memory.
 *
 * Every function here exists in every build. Where the library was built without
 * nvcc (make config says so), cuda_init() returns false and says why, and the
 * functions that need a GPU stop with that message; so programs and tests compile
 * the same way everywhere and decide at run time. */
#ifndef CUDA_DEVICE_H
#define CUDA_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when this build contains the CUDA backend (nvcc was found). */
bool cuda_built(void);

/* Starts the backend on one device: the local rank (core/envvars.h) modulo the
 * number of visible devices. Registers DEVICE_CUDA tensors, creates the cuBLAS handle.
 * Returns false with the reason in why (no CUDA in this build, no driver, driver older
 * than the runtime, no device visible) instead of crashing. Safe to call again. */
bool cuda_init(char *why, size_t why_cap);

/* cuda_init, or a user error (exit status 1) with the reason and what to do. */
void cuda_require(void);

/* The device cuda_init picked, or -1 before. */
int cuda_current_device(void);

/* The device for a local rank when `count` devices are visible: rank modulo count
 * (one process per GPU; when Slurm already restricts CUDA_VISIBLE_DEVICES to one
 * device per task, count is 1 and every rank takes device 0). */
int cuda_pick_device(int local_rank, int count);

typedef struct {
    char name[256];
    size_t total_bytes, free_bytes;
    int major, minor;          /* compute capability */
    int multiprocessors;
    int clock_khz;             /* SM clock, 0 when the runtime does not say */
    int memory_clock_khz;      /* 0 when the runtime does not say */
    int bus_width_bits;        /* 0 when the runtime does not say */
} CudaDeviceInfo;

/* Number of visible devices; -1 with the reason in why when none can be counted. */
int cuda_device_count(char *why, size_t why_cap);
/* Properties of device `dev` (needs no cuda_init). */
void cuda_device_info(int dev, CudaDeviceInfo *info);

/* Device memory and explicit copies (bytes); every call is checked. */
void *cuda_malloc(size_t bytes);
void cuda_free(void *p);
/* How many device buffers cuda_free has freed so far: a CUDA graph recorded before a
 * free may name the freed memory (a layer's scratch grown for a larger batch), so
 * graph.h calls a graph stale once this has moved. */
uint64_t cuda_frees(void);
void cuda_copy_to_device(void *dst, const void *src, size_t bytes);
void cuda_copy_to_host(void *dst, const void *src, size_t bytes);
void cuda_copy_on_device(void *dst, const void *src, size_t bytes);
/* The memory in use on this process's device, as nvidia-smi counts it (cudaMemGetInfo:
 * total less free; everything: cudaMalloc'd buffers, the CUDA context, the cuBLAS and
 * NCCL workspaces, other processes on the same GPU), and the device's total. */
void cuda_memory_in_use(size_t *used, size_t *total);
/* Waits until the GPU has finished all work: before reading a clock, for example. */
void cuda_sync(void);
/* Waits for the compute stream (cuda_stream(), cuda_check.h) only: not for NCCL's own streams,
 * so a send in flight is not waited for (a pipeline stage timing its compute). */
void cuda_sync_compute(void);
/* True when a kernel may read p: device or managed memory, or pinned host memory
 * (cudaMallocHost); false for ordinary host memory (malloc, the stack). For the raw
 * pointers the CUDA layers take (argmax, labels): a host pointer there is a
 * message, not an illegal address inside a kernel. */
bool cuda_is_device_pointer(const void *p);
/* The PCI bus id of device `dev` into out ("0000:3B:00.0": domain:bus:device.function in
 * hex), the name NVML and nvidia-smi know the GPU by whatever CUDA_VISIBLE_DEVICES
 * renumbers (32 bytes hold any); false, out "", where the runtime cannot say. */
bool cuda_device_pci_bus_id(int dev, char *out, size_t cap);

#endif
