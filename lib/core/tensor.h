/* A tensor: float32, contiguous, row-major, up to four dimensions.
 *
 * The device field says where `data` lives: host memory (DEVICE_CPU) or GPU memory
 * (DEVICE_CUDA). The struct is the same on both, so code that passes tensors around
 * does not change when a lesson moves to the GPU. Data never moves by itself:
 * tensor_copy() and tensor_to() are the explicit, checked copies between devices.
 *
 * The CUDA backend (lib/cuda/) registers how to allocate, free, fill and copy GPU
 * memory when it starts (cuda_init); this file knows no CUDA, so CPU-only programs
 * do not link it. */
#ifndef CORE_TENSOR_H
#define CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TENSOR_MAX_DIMS 4

typedef enum { DEVICE_CPU = 0, DEVICE_CUDA = 1 } Device;

typedef struct {
    float *data;                  /* size floats, owned by the tensor */
    int ndim;
    int shape[TENSOR_MAX_DIMS];
    int64_t size;                 /* product of shape */
    Device device;
} Tensor;

/* tensor_zeros(2, rows, cols): a zero-filled CPU tensor of that shape. */
Tensor tensor_zeros(int ndim, ...);
/* The same on a device: tensor_zeros_on(DEVICE_CUDA, 2, rows, cols). */
Tensor tensor_zeros_on(Device device, int ndim, ...);
/* Zero-filled, same shape and same device as t. */
Tensor tensor_zeros_like(const Tensor *t);
void tensor_free(Tensor *t);

/* A new tensor on `device` holding a copy of t (host to device, device to host,
 * or a plain copy). */
Tensor tensor_to(const Tensor *t, Device device);

/* What a device backend provides; bytes are sizes, pointers are that device's. */
typedef struct {
    const char *name;                                 /* "CUDA", for messages */
    void *(*alloc_zeroed)(size_t bytes);
    void (*release)(void *p);
    void (*fill)(float *p, int64_t n, float value);
    void (*scale)(float *p, int64_t n, float factor);
    /* dst on dst_dev, src on src_dev; one of them is this device */
    void (*copy)(void *dst, Device dst_dev, const void *src, Device src_dev, size_t bytes);
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

/* Same data, new shape with the same number of elements (flatten is a reshape). */
Tensor tensor_view(const Tensor *t, int ndim, ...);

/* The first n entries along dimension 0 (a batch of n), sharing data. */
Tensor tensor_rows(const Tensor *t, int n);

/* Elements [start, start + n) of t as a 1-D tensor sharing its data (a bucket of a
 * gradient buffer, one parameter of a flat list). */
Tensor tensor_range(const Tensor *t, int64_t start, int64_t n);

/* Both work on either device; tensor_copy copies between devices when dst and src
 * are on different ones (sizes must match). */
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

#endif
