/* A tensor: contiguous, row-major, up to four dimensions, of float32 (the default),
 * bfloat16 or float16 elements (core/dtype.h).
 *
 * The device field says where the data lives: host memory (DEVICE_CPU) or GPU memory
 * (DEVICE_CUDA). The struct is the same on both, so code that passes tensors around
 * does not change when a lesson moves to the GPU. Data never moves by itself:
 * tensor_copy() and tensor_to() are the explicit, checked copies between devices,
 * tensor_convert() the explicit change of dtype.
 *
 * The layers, the optimisers and most of the library compute in float32 and read
 * `data`; a 16-bit tensor is storage (a working copy of the weights, a message for
 * lib/dist) that such code refuses by name (CHECK_DTYPE) instead of reading its bits
 * as floats. Byte counts are elements times dtype_size (tensor_bytes).
 *
 * The CUDA backend (lib/cuda/) registers how to allocate, free, fill, copy and convert
 * GPU memory when it starts (cuda_init); this file knows no CUDA, so CPU-only programs
 * do not link it. */
#ifndef CORE_TENSOR_H
#define CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

#define TENSOR_MAX_DIMS 4

typedef enum { DEVICE_CPU = 0, DEVICE_CUDA = 1 } Device;

/* The storage last: a {0} inside another initialiser (a struct of tensors) then sets
 * ndim, a plain int, rather than a union left without its braces (-Wmissing-braces). */
typedef struct {
    int ndim;
    int shape[TENSOR_MAX_DIMS];
    int64_t size;                 /* product of shape */
    Device device;
    DType dtype;                  /* DTYPE_F32 (0) unless made otherwise */
    int64_t owned_bytes;          /* what this file allocated for it (0: a view, or memory
                                   * from elsewhere): given back by tensor_free */
    union {                       /* size elements of dtype, owned by the tensor */
        float *data;              /* float32: what the layers read and write */
        uint16_t *bits16;         /* bfloat16, float16: the raw 16-bit patterns */
        void *raw;                /* any dtype: tensor_bytes(t) bytes */
    };
} Tensor;

/* tensor_zeros(2, rows, cols): a zero-filled float32 CPU tensor of that shape. */
Tensor tensor_zeros(int ndim, ...);
/* The same on a device: tensor_zeros_on(DEVICE_CUDA, 2, rows, cols). */
Tensor tensor_zeros_on(Device device, int ndim, ...);
/* Of any dtype: tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 2, rows, cols). */
Tensor tensor_zeros_typed(Device device, DType dtype, int ndim, ...);
/* Zero-filled, same shape, device and dtype as t. */
Tensor tensor_zeros_like(const Tensor *t);
void tensor_free(Tensor *t);

/* Bytes of t's elements: size x dtype_size(dtype). */
size_t tensor_bytes(const Tensor *t);
/* The bytes of tensors allocated on a device now (made by this file's functions, less
 * those tensor_free gave back): a trace's memory counter (core/trace.h). */
int64_t tensor_allocated_bytes(Device device);

/* A new tensor on `device` holding a copy of t, of t's dtype (host to device, device
 * to host, or a plain copy). */
Tensor tensor_to(const Tensor *t, Device device);

/* dst = src converted to dst's dtype (core/dtype.h: round to nearest even, the same
 * bits on the CPU and the GPU); the same number of elements, on the same device, not
 * overlapping. Between equal dtypes it is tensor_copy. */
void tensor_convert(Tensor *dst, const Tensor *src);

/* What a device backend provides; bytes are sizes, pointers are that device's. */
typedef struct {
    const char *name;                                 /* "CUDA", for messages */
    void *(*alloc_zeroed)(size_t bytes);
    void (*release)(void *p);
    void (*fill)(float *p, int64_t n, float value);
    void (*scale)(float *p, int64_t n, float factor);
    /* dst on dst_dev, src on src_dev; one of them is this device */
    void (*copy)(void *dst, Device dst_dev, const void *src, Device src_dev, size_t bytes);
    /* 16-bit tensors: p[0..n) = bits; dst[0..n) of dst_dtype = src[0..n) of src_dtype
     * (different dtypes), dtype.h's conversions */
    void (*fill16)(uint16_t *p, int64_t n, uint16_t bits);
    void (*convert)(void *dst, DType dst_dtype, const void *src, DType src_dtype, int64_t n);
} TensorDeviceOps;

/* Called by the backend when it starts; NULL unregisters (device tensors then stop
 * with a message saying the backend was not started). */
void tensor_register_device(Device device, const TensorDeviceOps *ops);
const char *device_name(Device device); /* "cpu" or "cuda" */


/* Raw memory on a device, for what is not a float tensor (max-pool's argmax, labels):
 * zero-filled; device_free(device, NULL) does nothing. */
void *device_alloc(Device device, size_t bytes);
void device_free(Device device, void *p);
/* bytes from src on src_device to dst on dst_device (any pair of devices). */
void device_copy(void *dst, Device dst_device, const void *src, Device src_device, size_t bytes);

/* Same data (and dtype), new shape with the same number of elements (flatten is a
 * reshape). */
Tensor tensor_view(const Tensor *t, int ndim, ...);

/* The first n entries along dimension 0 (a batch of n), sharing data. */
Tensor tensor_rows(const Tensor *t, int n);

/* Elements [start, start + n) of t as a 1-D tensor sharing its data (a bucket of a
 * gradient buffer, one parameter of a flat list). */
Tensor tensor_range(const Tensor *t, int64_t start, int64_t n);

/* All work on either device; tensor_copy copies between devices when dst and src
 * are on different ones (sizes and dtypes must match). tensor_fill takes any dtype
 * (value converted once, as tensor_convert would), tensor_scale float32 only. */
void tensor_fill(Tensor *t, float value);
void tensor_scale(Tensor *t, float factor); /* t *= factor */
void tensor_copy(Tensor *dst, const Tensor *src);
bool tensor_same_shape(const Tensor *a, const Tensor *b);

/* "[100, 1, 28, 28]" into buf; returns buf, for messages. */
const char *tensor_shape_str(const Tensor *t, char *buf, int buflen);

/* Programmer-error check: stops with file, line and both shapes when they differ. */
#define CHECK_SAME_SHAPE(a, b)                                                   \
    do {                                                                         \
        if (!tensor_same_shape((a), (b))) {                                      \
            char sa_[64], sb_[64];                                               \
            die_at(__FILE__, __LINE__, "shape mismatch: %s is %s but %s is %s", #a, \
                   tensor_shape_str((a), sa_, 64), #b, tensor_shape_str((b), sb_, 64)); \
        }                                                                        \
    } while (0)

/* Stops with file, line and the shape when t is not [d0, d1, ...] (-1: any). */
#define CHECK_SHAPE(t, ...) tensor_check_shape_at(__FILE__, __LINE__, #t, (t), __VA_ARGS__, -2)
void tensor_check_shape_at(const char *file, int line, const char *name, const Tensor *t, ...);

/* Stops with file, line and a hint when t (which may be NULL: nothing to check) is not
 * on `device`: a layer of one device handed a tensor of the other. */
#define CHECK_DEVICE(t, device) tensor_check_device_at(__FILE__, __LINE__, #t, (t), (device))
void tensor_check_device_at(const char *file, int line, const char *name, const Tensor *t,
                            Device device);

/* Stops with file, line, the function, the tensor's name and both dtypes when t (which
 * may be NULL: nothing to check) is not of `dtype`: a bfloat16 tensor handed to code
 * that reads floats. */
#define CHECK_DTYPE(t, want)                                                           \
    do {                                                                               \
        const Tensor *t_ = (t);                                                        \
        if (t_ && t_->dtype != (want))                                                 \
            tensor_check_dtype_at(__FILE__, __LINE__, __func__, #t, t_, (want));       \
    } while (0)
void tensor_check_dtype_at(const char *file, int line, const char *func, const char *name,
                           const Tensor *t, DType dtype);

/* CHECK_DTYPE(t, DTYPE_F32) for each of up to 10 tensors (NULL ones skipped), one
 * line at the top of a function that computes in float32:
 *   CHECK_FLOAT32(out, in, weight, bias); */
#define CHECK_FLOAT32(...)                                                                 \
    do {                                                                                   \
        TENSOR_EACH_(TENSOR_COUNT_(__VA_ARGS__, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), __VA_ARGS__); \
    } while (0)
#define TENSOR_COUNT_(a, b, c, d, e, f, g, h, i, j, n, ...) n
#define TENSOR_EACH_(n, ...) TENSOR_EACH_N_(n, __VA_ARGS__)
#define TENSOR_EACH_N_(n, ...) TENSOR_F32_##n(__VA_ARGS__)
#define TENSOR_F32_1(t) CHECK_DTYPE(t, DTYPE_F32)
#define TENSOR_F32_2(t, ...) TENSOR_F32_1(t); TENSOR_F32_1(__VA_ARGS__)
#define TENSOR_F32_3(t, ...) TENSOR_F32_1(t); TENSOR_F32_2(__VA_ARGS__)
#define TENSOR_F32_4(t, ...) TENSOR_F32_1(t); TENSOR_F32_3(__VA_ARGS__)
#define TENSOR_F32_5(t, ...) TENSOR_F32_1(t); TENSOR_F32_4(__VA_ARGS__)
#define TENSOR_F32_6(t, ...) TENSOR_F32_1(t); TENSOR_F32_5(__VA_ARGS__)
#define TENSOR_F32_7(t, ...) TENSOR_F32_1(t); TENSOR_F32_6(__VA_ARGS__)
#define TENSOR_F32_8(t, ...) TENSOR_F32_1(t); TENSOR_F32_7(__VA_ARGS__)
#define TENSOR_F32_9(t, ...) TENSOR_F32_1(t); TENSOR_F32_8(__VA_ARGS__)
#define TENSOR_F32_10(t, ...) TENSOR_F32_1(t); TENSOR_F32_9(__VA_ARGS__)

#endif
