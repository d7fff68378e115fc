/* A GPU's counters from NVML, loaded with dlopen (core/gpu_counters.h).
 *
 * nvml.h is not included: the minimal build has no CUDA headers, and nothing here may
 * depend on them. The few types and functions used are declared below with NVML's
 * documented signatures (NVML API Reference, "Initialization and Cleanup", "Device
 * Queries"); NVML keeps them stable across versions (the _v2 names are the current
 * ones since NVML 5). */
#include "gpu_counters.h"

#include <dlfcn.h>
#include <stdio.h>

#include "check.h"

typedef int nvml_return;                  /* nvmlReturn_t: NVML_SUCCESS is 0 */
typedef struct nvml_device_st *nvml_device; /* nvmlDevice_t: an opaque handle */
typedef struct {
    unsigned int gpu, memory;             /* percent */
} nvml_utilization;                       /* nvmlUtilization_t */
typedef struct {
    unsigned long long total, free, used; /* bytes */
} nvml_memory;                            /* nvmlMemory_t (version 1) */
enum {
    NVML_SUCCESS = 0,
    NVML_CLOCK_SM = 1,                    /* nvmlClockType_t */
    NVML_TEMPERATURE_GPU = 0,             /* nvmlTemperatureSensors_t */
};

/* nvmlReturn_t nvmlInit_v2(void); nvmlReturn_t nvmlShutdown(void);
 * const char *nvmlErrorString(nvmlReturn_t result); */
typedef nvml_return (*nvml_init_fn)(void);
typedef nvml_return (*nvml_shutdown_fn)(void);
typedef const char *(*nvml_error_string_fn)(nvml_return result);
/* nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount); */
typedef nvml_return (*nvml_count_fn)(unsigned int *count);
/* nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device);
 * nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device); */
typedef nvml_return (*nvml_by_bus_id_fn)(const char *pci_bus_id, nvml_device *device);
typedef nvml_return (*nvml_by_index_fn)(unsigned int index, nvml_device *device);
/* nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization);
 * nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory);
 * nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock);
 * nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power);
 * nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
 *                                       unsigned int *temp); */
typedef nvml_return (*nvml_utilization_fn)(nvml_device device, nvml_utilization *utilization);
typedef nvml_return (*nvml_memory_fn)(nvml_device device, nvml_memory *memory);
typedef nvml_return (*nvml_clock_fn)(nvml_device device, int type, unsigned int *clock);
typedef nvml_return (*nvml_power_fn)(nvml_device device, unsigned int *power);
typedef nvml_return (*nvml_temperature_fn)(nvml_device device, int sensor, unsigned int *temp);

struct GpuCounters {
    void *lib;                            /* loaded for good (gpu_counters_close) */
    nvml_device device;
    nvml_shutdown_fn shutdown;
    /* the queries; NULL where the library lacks one (its counter reads -1) */
    nvml_utilization_fn utilization;
    nvml_memory_fn memory;
    nvml_clock_fn clock;
    nvml_power_fn power;
    nvml_temperature_fn temperature;
};

static const char *const DEFAULT_LIBRARY = "libnvidia-ml.so.1";

/* NVML's words for an error code, with the code. */
static const char *error_text(void *lib, nvml_return r, char *buf, size_t cap) {
    nvml_error_string_fn text = (nvml_error_string_fn)dlsym(lib, "nvmlErrorString");
    snprintf(buf, cap, "%s, code %d", text ? text(r) : "no nvmlErrorString", r);
    return buf;
}

/* The GPU at pci_bus_id, else by index (msg notes it); false with the reason in msg. */
static bool find_device(GpuCounters *g, const char *name, const char *pci_bus_id, int index,
                        char *msg, size_t cap) {
    nvml_by_bus_id_fn by_bus_id = (nvml_by_bus_id_fn)dlsym(g->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_by_index_fn by_index = (nvml_by_index_fn)dlsym(g->lib, "nvmlDeviceGetHandleByIndex_v2");
    char missed[256] = "no PCI bus id given", err[160];
    if (pci_bus_id && *pci_bus_id) {
        if (!by_bus_id) snprintf(err, sizeof err, "%s has no nvmlDeviceGetHandleByPciBusId_v2", name);
        else {
            const nvml_return r = by_bus_id(pci_bus_id, &g->device);
            if (r == NVML_SUCCESS) return true;
            error_text(g->lib, r, err, sizeof err);
        }
        snprintf(missed, sizeof missed, "NVML finds no GPU at PCI bus id %s (%s)", pci_bus_id, err);
    }
    if (index < 0) {
        snprintf(msg, cap, "%s", missed);
        return false;
    }
    const nvml_return r = by_index ? by_index((unsigned int)index, &g->device) : -1;
    if (r == NVML_SUCCESS) {
        snprintf(msg, cap, "%s: NVML's device %d by index instead, the right GPU only where "
                 "CUDA_VISIBLE_DEVICES does not renumber them", missed, index);
        return true;
    }
    if (by_index) error_text(g->lib, r, err, sizeof err);
    else snprintf(err, sizeof err, "%s has no nvmlDeviceGetHandleByIndex_v2", name);
    snprintf(msg, cap, "%s, nor a device %d (%s)", missed, index, err);
    return false;
}

/* NVML loaded and started: its library, with *shutdown set; NULL with the reason in msg. */
static void *start_nvml(const char *name, nvml_shutdown_fn *shutdown, char *msg, size_t cap) {
    msg[0] = '\0';
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(msg, cap, "NVML (%s, from the NVIDIA driver) cannot be loaded: %s", name,
                 e ? e : "dlopen failed");
        return NULL;
    }
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    *shutdown = (nvml_shutdown_fn)dlsym(lib, "nvmlShutdown");
    if (!init || !*shutdown) {
        snprintf(msg, cap, "%s has no %s: not NVML, or older than NVML 5", name,
                 init ? "nvmlShutdown" : "nvmlInit_v2");
        dlclose(lib);
        return NULL;
    }
    const nvml_return r = init();
    if (r != NVML_SUCCESS) { /* NVML stays loaded (gpu_counters_close says why) */
        char err[160];
        snprintf(msg, cap, "NVML did not start: nvmlInit_v2 failed (%s)", error_text(lib, r, err, sizeof err));
        return NULL;
    }
    return lib;
}

int gpu_counters_count(const char *library, char *msg, size_t cap) {
    const char *name = library ? library : DEFAULT_LIBRARY;
    nvml_shutdown_fn shutdown;
    void *lib = start_nvml(name, &shutdown, msg, cap);
    if (!lib) return -1;
    nvml_count_fn count = (nvml_count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
    unsigned int n = 0;
    const nvml_return r = count ? count(&n) : -1;
    if (r != NVML_SUCCESS) {
        char err[160];
        if (count) snprintf(msg, cap, "NVML cannot count the GPUs: nvmlDeviceGetCount_v2 failed (%s)",
                            error_text(lib, r, err, sizeof err));
        else snprintf(msg, cap, "%s has no nvmlDeviceGetCount_v2", name);
    }
    shutdown();
    return r == NVML_SUCCESS ? (int)n : -1;
}

GpuCounters *gpu_counters_open(const char *library, const char *pci_bus_id, int index,
                               char *msg, size_t cap) {
    const char *name = library ? library : DEFAULT_LIBRARY;
    nvml_shutdown_fn shutdown;
    void *lib = start_nvml(name, &shutdown, msg, cap);
    if (!lib) return NULL;
    GpuCounters *g = xcalloc(1, sizeof *g);
    g->lib = lib, g->shutdown = shutdown;
    if (!find_device(g, name, pci_bus_id, index, msg, cap)) {
        gpu_counters_close(g);
        return NULL;
    }
    g->utilization = (nvml_utilization_fn)dlsym(lib, "nvmlDeviceGetUtilizationRates");
    g->memory = (nvml_memory_fn)dlsym(lib, "nvmlDeviceGetMemoryInfo");
    g->clock = (nvml_clock_fn)dlsym(lib, "nvmlDeviceGetClockInfo");
    g->power = (nvml_power_fn)dlsym(lib, "nvmlDeviceGetPowerUsage");
    g->temperature = (nvml_temperature_fn)dlsym(lib, "nvmlDeviceGetTemperature");
    return g;
}

bool gpu_counters_read(GpuCounters *g, GpuSample *s) {
    *s = (GpuSample){-1, -1, -1, -1, -1, -1, -1};
    nvml_utilization u;
    if (g->utilization && g->utilization(g->device, &u) == NVML_SUCCESS)
        s->utilisation_pct = u.gpu, s->memory_activity_pct = u.memory;
    nvml_memory m;
    if (g->memory && g->memory(g->device, &m) == NVML_SUCCESS)
        s->memory_used_bytes = (int64_t)m.used, s->memory_total_bytes = (int64_t)m.total;
    unsigned int v;
    if (g->clock && g->clock(g->device, NVML_CLOCK_SM, &v) == NVML_SUCCESS) s->sm_clock_mhz = v;
    if (g->power && g->power(g->device, &v) == NVML_SUCCESS) s->power_mw = v;
    if (g->temperature && g->temperature(g->device, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS)
        s->temperature_c = v;
    return s->utilisation_pct >= 0 || s->memory_used_bytes >= 0 || s->sm_clock_mhz >= 0 ||
           s->power_mw >= 0 || s->temperature_c >= 0;
}

/* NVML is shut down but not unloaded: what nvmlInit_v2 started in the driver's library
 * (threads, exit handlers) may outlive nvmlShutdown, and unloading the code under them
 * would crash the program later; the next open finds the library loaded. */
void gpu_counters_close(GpuCounters *g) {
    if (!g) return;
    g->shutdown();
    xfree(g);
}
