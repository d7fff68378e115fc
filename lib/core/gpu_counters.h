/* A GPU's counters (utilisation, memory, SM clock, power, temperature) from NVML, the
 * driver's library that nvidia-smi reads them with. It is loaded at run time
 * (dlopen("libnvidia-ml.so.1")) and never linked, so the library builds and runs where
 * no driver is; where NVML cannot be used, open says why and the caller goes on without.
 *
 *   char why[GPU_COUNTERS_MSG_MAX];
 *   GpuCounters *g = gpu_counters_open(NULL, "0000:3B:00.0", 0, why, sizeof why);
 *   GpuSample s;
 *   if (g && gpu_counters_read(g, &s)) printf("%lld %%\n", (long long)s.utilisation_pct);
 *   gpu_counters_close(g);
 *
 * The GPU is named by its PCI bus id (CUDA's cudaDeviceGetPCIBusId): NVML numbers every
 * GPU of the node and ignores CUDA_VISIBLE_DEVICES, so CUDA's device 0 may be NVML's
 * device 3; the bus id is the same in both. Not thread-safe: one thread reads. */
#ifndef CORE_GPU_COUNTERS_H
#define CORE_GPU_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { GPU_COUNTERS_MSG_MAX = 512 };

/* One reading; -1 where NVML does not say (a query this GPU or driver does not support:
 * utilisation under MIG, power on some boards). */
typedef struct {
    int64_t utilisation_pct;      /* share of NVML's last sample period (1/6 s to 1 s, by
                                   * product) in which a kernel ran, 0-100 */
    int64_t memory_activity_pct;  /* ... in which device memory was read or written, 0-100 */
    int64_t memory_used_bytes;    /* device memory in use, every process's and the driver's */
    int64_t memory_total_bytes;
    int64_t sm_clock_mhz;         /* the SM clock now */
    int64_t power_mw;             /* the board's power draw, milliwatts */
    int64_t temperature_c;        /* the GPU die's, degrees Celsius */
} GpuSample;

typedef struct GpuCounters GpuCounters;

/* Loads NVML (library: its path or name; NULL: "libnvidia-ml.so.1", found as the
 * dynamic loader finds libraries), starts it and finds the GPU at pci_bus_id
 * ("domain:bus:device.function" in hex, as CUDA writes it). Where NVML does not know
 * that bus id (or pci_bus_id is NULL or ""), NVML's device `index` is taken instead, when
 * index >= 0, and msg says so: the right GPU only where CUDA's and NVML's numbers agree
 * (no CUDA_VISIBLE_DEVICES). Returns NULL with the reason in msg (no library, no
 * nvmlInit_v2 in it, NVML failing to start, no such GPU); else msg is "" or that note. */
GpuCounters *gpu_counters_open(const char *library, const char *pci_bus_id, int index,
                               char *msg, size_t cap);
/* How many GPUs NVML sees on this node (every one, whatever CUDA_VISIBLE_DEVICES says;
 * under Slurm, those the job's cgroup lets it open): NVML loaded (library as for open),
 * started, asked (nvmlDeviceGetCount_v2) and shut down again. -1 with the reason in msg
 * where NVML cannot be used; else msg is "". A monitor then opens each by its index. */
int gpu_counters_count(const char *library, char *msg, size_t cap);
/* Reads every counter into s; false (s all -1) when NVML said nothing at all. */
bool gpu_counters_read(GpuCounters *g, GpuSample *s);
/* Shuts NVML down (its library stays loaded: unloading it under what NVML started is
 * unsafe); NULL is allowed. */
void gpu_counters_close(GpuCounters *g);

#endif
