/* The GPU's counters in a trace (core/trace.h) for the device this process uses, named
 * by its PCI bus id: NVML numbers every GPU of the node whatever CUDA_VISIBLE_DEVICES
 * says, and knows the bus id. Plain host code, in every build. */
#include <stdlib.h>

#include "core/trace.h"
#include "device.h"
#include "trace_gpu.h"

void cuda_trace_counters_start(void) {
    const int dev = cuda_current_device();
    if (dev < 0 || !trace_is_open()) return; /* no GPU in use: no GPU counters */
    char bus[32];
    cuda_device_pci_bus_id(dev, bus, sizeof bus); /* "" where the runtime cannot say */
    /* NVML's device numbers are CUDA's only where CUDA_VISIBLE_DEVICES renumbers nothing:
     * otherwise no guess by number (the counters would be another GPU's) */
    trace_gpu_counters_start(bus, getenv("CUDA_VISIBLE_DEVICES") ? -1 : dev);
}
