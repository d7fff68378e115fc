/* The GPU's side of a trace (trace_gpu.cu): cuda_init registers it with core/trace.h,
 * which then times each compute range on the GPU too, on the stream's own track; and
 * the GPU's counters, which the programs' traces start (run_trace.h, dist_trace.h). */
#ifndef CUDA_TRACE_GPU_H
#define CUDA_TRACE_GPU_H

#ifdef __cplusplus
extern "C" {
#endif

void cuda_trace_register(void);
/* The open trace's GPU counters (trace_gpu_counters_start) for the device cuda_init
 * picked (trace_counters.c); nothing without a trace, or before cuda_init. */
void cuda_trace_counters_start(void);

#ifdef __cplusplus
}
#endif

#endif
