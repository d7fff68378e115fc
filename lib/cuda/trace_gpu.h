/* The GPU's side of a trace (trace_gpu.cu): cuda_init registers it with core/trace.h,
 * which then times each compute range on the GPU too, on the stream's own track. */
#ifndef CUDA_TRACE_GPU_H
#define CUDA_TRACE_GPU_H

#ifdef __cplusplus
extern "C" {
#endif

void cuda_trace_register(void);

#ifdef __cplusplus
}
#endif

#endif
