/* A tensor: float32, contiguous, row-major, up to four dimensions.
 *
 * The device field says where `data` lives. Only DEVICE_CPU exists in this build
 * of the library; the CUDA backend adds DEVICE_CUDA with the same struct, so code
 * that passes tensors around does not change when a lesson moves to the GPU. */
#ifndef CORE_TENSOR_H
#define CORE_TENSOR_H

#include <stdbool.h>
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
Tensor tensor_zeros_like(const Tensor *t);
void tensor_free(Tensor *t);

/* Same data, new shape with the same number of elements (flatten is a reshape). */
Tensor tensor_view(const Tensor *t, int ndim, ...);

/* The first n entries along dimension 0 (a batch of n), sharing data. */
Tensor tensor_rows(const Tensor *t, int n);

void tensor_fill(Tensor *t, float value);
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

#endif
