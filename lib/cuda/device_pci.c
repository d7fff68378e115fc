/* A CUDA device's PCI bus id (cuda/device.h), in builds with CUDA (cuda_none.c stands in
 * otherwise): core/trace.h's GPU counters find the GPU in NVML by it. */
#ifdef HAVE_CUDA
#include <cuda_runtime.h>

#include "device.h"

bool cuda_device_pci_bus_id(int dev, char *out, size_t cap) {
    if (cap == 0) return false;
    out[0] = '\0';
    /* "0000:3B:00.0" and its NUL: 13 bytes; any cap above 64 is as good as 64 */
    if (cap > 1 && cudaDeviceGetPCIBusId(out, (int)(cap < 64 ? cap : 64), dev) == cudaSuccess)
        return true;
    cudaGetLastError(); /* do not leave the error for the next call to find */
    out[0] = '\0';
    return false;
}
#endif
