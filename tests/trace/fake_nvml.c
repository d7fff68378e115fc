/* A stand-in for NVML (libnvidia-ml.so.1) with scripted answers, for the tests of the
 * trace's GPU counters on machines without a GPU (tests/unit/test_core_gpu_counters.c).
 * Built by the Makefile as BUILD/tests/fake-nvml/libnvidia-ml.so.1 (gcc -shared -fPIC,
 * soname libnvidia-ml.so.1); never linked, only loaded.
 *
 * Two GPUs, by NVML's index (the functions keep NVML's documented signatures, with
 * nvmlDevice_t as a pointer to the GPU):
 *   0: PCI bus id 0000:3B:00.0, 80 GiB; every query answers;
 *   1: PCI bus id 0000:86:00.0, 40 GiB; utilisation and power "Not Supported" (as under MIG).
 * nvmlDeviceGetCount_v2 answers 2. NVML counts its starts as the real one does: each
 * nvmlInit_v2 adds one, each nvmlShutdown takes one away, and it stops at 0 (a monitor
 * opens each GPU on its own). The n-th answer (from 1, counted per query over both GPUs
 * since NVML last started from stopped) of
 *   nvmlDeviceGetUtilizationRates: gpu 10 n %, memory n %
 *   nvmlDeviceGetMemoryInfo:       used n GiB, total as above, free the rest
 *   nvmlDeviceGetClockInfo(SM):    1000 + 10 n MHz
 *   nvmlDeviceGetPowerUsage:       100000 + n mW
 *   nvmlDeviceGetTemperature(GPU): 40 + n degrees C
 * FAKE_NVML_INIT=fail makes nvmlInit_v2 fail with NVML_ERROR_DRIVER_NOT_LOADED (9).
 * fake_nvml_calls(name) says how often nvmlInit_v2 or nvmlShutdown was called. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef int nvmlReturn_t;
typedef struct {
    const char *bus_id;
    unsigned long long total;
    int all; /* answers every query */
} Gpu;
typedef const Gpu *nvmlDevice_t;
typedef struct {
    unsigned int gpu, memory;
} nvmlUtilization_t;
typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

enum { SUCCESS = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6,
       DRIVER_NOT_LOADED = 9 };
#define GIB (1ULL << 30)

static const Gpu GPUS[2] = {{"0000:3B:00.0", 80 * GIB, 1}, {"0000:86:00.0", 40 * GIB, 0}};
static int g_started, g_inits, g_shutdowns; /* g_started: nvmlInit_v2s not yet shut down */
static unsigned int g_util, g_mem, g_clock, g_power, g_temp; /* answers given */

/* Exported for the tests (not NVML's). */
int fake_nvml_calls(const char *name);
int fake_nvml_calls(const char *name) {
    return strcmp(name, "nvmlInit_v2") == 0 ? g_inits : strcmp(name, "nvmlShutdown") == 0 ? g_shutdowns : -1;
}

/* NVML's functions, as nvml.h declares them. */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t result);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp);

nvmlReturn_t nvmlInit_v2(void) {
    const char *mode = getenv("FAKE_NVML_INIT");
    g_inits++;
    if (mode && strcmp(mode, "fail") == 0) return DRIVER_NOT_LOADED;
    if (g_started++ == 0) g_util = g_mem = g_clock = g_power = g_temp = 0;
    return SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    g_shutdowns++;
    if (!g_started) return UNINITIALIZED;
    g_started--;
    return SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case SUCCESS: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case NOT_FOUND: return "Not Found";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount) {
    if (!g_started) return UNINITIALIZED;
    if (!deviceCount) return INVALID_ARGUMENT;
    *deviceCount = 2;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device) {
    if (!g_started) return UNINITIALIZED;
    if (!pciBusId || !device) return INVALID_ARGUMENT;
    for (int i = 0; i < 2; i++)
        if (strcasecmp(pciBusId, GPUS[i].bus_id) == 0) {
            *device = &GPUS[i];
            return SUCCESS;
        }
    return NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    if (!g_started) return UNINITIALIZED;
    if (index >= 2 || !device) return INVALID_ARGUMENT;
    *device = &GPUS[index];
    return SUCCESS;
}

/* UNINITIALIZED, INVALID_ARGUMENT or SUCCESS for a query on device. */
static nvmlReturn_t usable(nvmlDevice_t device, const void *out) {
    if (!g_started) return UNINITIALIZED;
    return device == &GPUS[0] || device == &GPUS[1] ? (out ? SUCCESS : INVALID_ARGUMENT) : INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization) {
    const nvmlReturn_t r = usable(device, utilization);
    if (r != SUCCESS) return r;
    if (!device->all) return NOT_SUPPORTED;
    g_util++;
    utilization->gpu = 10 * g_util, utilization->memory = g_util;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    const nvmlReturn_t r = usable(device, memory);
    if (r != SUCCESS) return r;
    g_mem++;
    memory->total = device->total, memory->used = g_mem * GIB;
    memory->free = memory->total - memory->used;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock) {
    const nvmlReturn_t r = usable(device, clock);
    if (r != SUCCESS) return r;
    if (type != 1) return INVALID_ARGUMENT; /* NVML_CLOCK_SM only: the one the trace asks */
    g_clock++;
    *clock = 1000 + 10 * g_clock;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power) {
    const nvmlReturn_t r = usable(device, power);
    if (r != SUCCESS) return r;
    if (!device->all) return NOT_SUPPORTED;
    g_power++;
    *power = 100000 + g_power;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, int sensorType, unsigned int *temp) {
    const nvmlReturn_t r = usable(device, temp);
    if (r != SUCCESS) return r;
    if (sensorType != 0) return INVALID_ARGUMENT; /* NVML_TEMPERATURE_GPU */
    g_temp++;
    *temp = 40 + g_temp;
    return SUCCESS;
}
