#include "tensor.h"

#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static const TensorDeviceOps *g_device_ops[2]; /* [DEVICE_CUDA]: set by the backend */
static int64_t g_allocated[2];                 /* tensor_allocated_bytes, per device */

void tensor_register_device(Device device, const TensorDeviceOps *ops) {
    CHECK(device == DEVICE_CUDA, "only DEVICE_CUDA takes a backend, not %d", (int)device);
    g_device_ops[device] = ops;
}

const char *device_name(Device device) { return device == DEVICE_CUDA ? "cuda" : "cpu"; }

/* The backend of a non-CPU device; stops when none was started. */
static const TensorDeviceOps *device_ops(Device device) {
    CHECK(device == DEVICE_CUDA, "unknown device %d", (int)device);
    CHECK(g_device_ops[device] != NULL,
          "a %s tensor, but the %s backend was not started: call cuda_init() (lib/cuda/device.h) "
          "first", device_name(device), device_name(device));
    return g_device_ops[device];
}

/* The backend's 16-bit operations (once it is started); `what` names the caller. */
static const TensorDeviceOps *dtype_ops(Device device, const char *what) {
    const TensorDeviceOps *ops = device_ops(device);
    CHECK(ops->fill16 && ops->convert, "%s of 16-bit %s tensors: the %s backend of this build "
          "has no 16-bit kernels", what, device_name(device), ops->name);
    return ops;
}

void *device_alloc(Device device, size_t bytes) {
    if (device == DEVICE_CPU) return xcalloc(bytes, 1);
    return device_ops(device)->alloc_zeroed(bytes);
}

void device_free(Device device, void *p) {
    if (!p) return;
    if (device == DEVICE_CPU) xfree(p);
    else device_ops(device)->release(p);
}

/* Room for t's elements on its device, zero-filled, into t->raw. */
static void alloc_data(Tensor *t) {
    CHECK(t->dtype < DTYPE_COUNT, "a tensor of dtype %d (DTYPE_F32, DTYPE_BF16 or DTYPE_F16)",
          (int)t->dtype);
    const size_t elem = dtype_size(t->dtype);
    CHECK(t->size >= 0 && (uint64_t)t->size <= SIZE_MAX / elem, "tensor of %lld %s elements",
          (long long)t->size, dtype_name(t->dtype));
    t->raw = device_alloc(t->device, (size_t)t->size * elem);
    t->owned_bytes = (int64_t)tensor_bytes(t);
    __atomic_fetch_add(&g_allocated[t->device == DEVICE_CUDA], t->owned_bytes, __ATOMIC_RELAXED);
}

int64_t tensor_allocated_bytes(Device device) {
    return __atomic_load_n(&g_allocated[device == DEVICE_CUDA], __ATOMIC_RELAXED);
}

size_t tensor_bytes(const Tensor *t) { return (size_t)t->size * dtype_size(t->dtype); }

static Tensor tensor_from_dims(int ndim, const int *dims) {
    CHECK(ndim >= 1 && ndim <= TENSOR_MAX_DIMS, "tensor with %d dimensions (1..%d allowed)",
          ndim, TENSOR_MAX_DIMS);
    Tensor t = {0};
    t.ndim = ndim;
    t.size = 1;
    for (int i = 0; i < ndim; i++) {
        CHECK(dims[i] > 0, "tensor dimension %d is %d, must be positive", i, dims[i]);
        t.shape[i] = dims[i];
        t.size *= dims[i];
    }
    t.device = DEVICE_CPU;
    return t;
}

static Tensor zeros_on(Device device, DType dtype, int ndim, va_list ap) {
    int dims[TENSOR_MAX_DIMS] = {0};
    for (int i = 0; i < ndim && i < TENSOR_MAX_DIMS; i++) dims[i] = va_arg(ap, int);
    Tensor t = tensor_from_dims(ndim, dims);
    t.device = device;
    t.dtype = dtype;
    alloc_data(&t);
    return t;
}

Tensor tensor_zeros(int ndim, ...) {
    va_list ap;
    va_start(ap, ndim);
    Tensor t = zeros_on(DEVICE_CPU, DTYPE_F32, ndim, ap);
    va_end(ap);
    return t;
}

Tensor tensor_zeros_on(Device device, int ndim, ...) {
    va_list ap;
    va_start(ap, ndim);
    Tensor t = zeros_on(device, DTYPE_F32, ndim, ap);
    va_end(ap);
    return t;
}

Tensor tensor_zeros_typed(Device device, DType dtype, int ndim, ...) {
    va_list ap;
    va_start(ap, ndim);
    Tensor t = zeros_on(device, dtype, ndim, ap);
    va_end(ap);
    return t;
}

Tensor tensor_zeros_like(const Tensor *t) {
    Tensor r = tensor_from_dims(t->ndim, t->shape);
    r.device = t->device;
    r.dtype = t->dtype;
    alloc_data(&r);
    return r;
}

void tensor_free(Tensor *t) {
    if (t->raw) /* (its size may have shrunk since: blocks reshape their activations) */
        __atomic_fetch_sub(&g_allocated[t->device == DEVICE_CUDA], t->owned_bytes, __ATOMIC_RELAXED);
    device_free(t->device, t->raw);
    memset(t, 0, sizeof *t);
}

Tensor tensor_to(const Tensor *t, Device device) {
    Tensor r = tensor_from_dims(t->ndim, t->shape);
    r.device = device;
    r.dtype = t->dtype;
    alloc_data(&r);
    tensor_copy(&r, t);
    return r;
}

Tensor tensor_view(const Tensor *t, int ndim, ...) {
    int dims[TENSOR_MAX_DIMS] = {0};
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim && i < TENSOR_MAX_DIMS; i++) dims[i] = va_arg(ap, int);
    va_end(ap);
    Tensor v = tensor_from_dims(ndim, dims);
    char s[64];
    CHECK(v.size == t->size, "cannot view %s (%lld elements) with %lld elements",
          tensor_shape_str(t, s, 64), (long long)t->size, (long long)v.size);
    v.raw = t->raw;
    v.device = t->device;
    v.dtype = t->dtype;
    return v;
}

Tensor tensor_rows(const Tensor *t, int n) {
    CHECK(n >= 1 && n <= t->shape[0], "rows 0..%d of a tensor with %d", n, t->shape[0]);
    Tensor v = *t;
    v.owned_bytes = 0; /* a view: its parent's tensor_free gives the memory back */
    v.shape[0] = n;
    v.size = t->size / t->shape[0] * n;
    return v;
}

Tensor tensor_range(const Tensor *t, int64_t start, int64_t n) {
    CHECK(start >= 0 && n >= 1 && start + n <= t->size,
          "elements %lld..%lld of a tensor with %lld", (long long)start,
          (long long)(start + n), (long long)t->size);
    Tensor v = {0};
    v.raw = (char *)t->raw + start * (int64_t)dtype_size(t->dtype);
    v.ndim = 1;
    v.shape[0] = (int)n;
    CHECK(v.shape[0] == n, "a range of %lld elements does not fit a dimension", (long long)n);
    v.size = n;
    v.device = t->device;
    v.dtype = t->dtype;
    return v;
}

void tensor_scale(Tensor *t, float factor) {
    CHECK_DTYPE(t, DTYPE_F32);
    if (t->device != DEVICE_CPU) {
        device_ops(t->device)->scale(t->data, t->size, factor);
        return;
    }
    float *x = t->data;
    const int64_t n = t->size;
#pragma omp parallel for simd if (parallel : n > (1 << 16)) schedule(static)
    for (int64_t i = 0; i < n; i++) x[i] *= factor;
}

/* A 16-bit tensor filled with one pattern (value converted once). */
static void fill16(Tensor *t, float value) {
    CHECK(t->dtype == DTYPE_BF16 || t->dtype == DTYPE_F16, "tensor_fill of a tensor of dtype %d",
          (int)t->dtype);
    const uint16_t bits = t->dtype == DTYPE_BF16 ? dtype_bf16_from_f32(value)
                                                 : dtype_f16_from_f32(value);
    if (t->device != DEVICE_CPU) {
        dtype_ops(t->device, "tensor_fill")->fill16(t->bits16, t->size, bits);
        return;
    }
    uint16_t *x = t->bits16;
    const int64_t size = t->size;
    if (bits == 0) {
        memset(x, 0, (size_t)size * sizeof *x);
        return;
    }
#pragma omp parallel for simd if (parallel : size > (1 << 18)) schedule(static)
    for (int64_t i = 0; i < size; i++) x[i] = bits;
}

void tensor_fill(Tensor *t, float value) {
    if (t->dtype != DTYPE_F32) {
        fill16(t, value);
        return;
    }
    if (t->device != DEVICE_CPU) {
        device_ops(t->device)->fill(t->data, t->size, value);
        return;
    }
    /* A model's gradients (zero_grad: 300 MB for the seed's transformer): one contiguous
     * piece a thread; zeros by memset, whose streaming stores on large pieces do not read
     * the lines first (half the traffic of a loop of stores). */
    float *x = t->data;
    const int64_t size = t->size;
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
#pragma omp parallel if (size > (1 << 18))
    {
        const int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();
        const int64_t start = size * id / nt, end = size * (id + 1) / nt;
        if (bits == 0) {
            memset(x + start, 0, sizeof(float) * (size_t)(end - start));
        } else {
#pragma omp simd
            for (int64_t i = start; i < end; i++) x[i] = value;
        }
    }
}

void device_copy(void *dst, Device dst_device, const void *src, Device src_device, size_t bytes) {
    if (bytes == 0) return;
    if (dst_device == DEVICE_CPU && src_device == DEVICE_CPU) {
        memcpy(dst, src, bytes);
        return;
    }
    Device other = dst_device != DEVICE_CPU ? dst_device : src_device;
    device_ops(other)->copy(dst, dst_device, src, src_device, bytes);
}

void tensor_copy(Tensor *dst, const Tensor *src) {
    CHECK(dst->size == src->size, "copy of %lld elements into %lld", (long long)src->size,
          (long long)dst->size);
    CHECK(dst->dtype == src->dtype, "tensor_copy of a %s tensor into a %s one: a copy keeps "
          "the dtype; tensor_convert converts", dtype_name(src->dtype), dtype_name(dst->dtype));
    device_copy(dst->raw, dst->device, src->raw, src->device, tensor_bytes(src));
}

void tensor_convert(Tensor *dst, const Tensor *src) {
    CHECK(dst->size == src->size, "tensor_convert of %lld elements into %lld",
          (long long)src->size, (long long)dst->size);
    if (dst->dtype == src->dtype) {
        tensor_copy(dst, src);
        return;
    }
    CHECK(dst->device == src->device, "tensor_convert from a %s tensor to a %s one: convert on "
          "one device, and move with tensor_to or tensor_copy", device_name(src->device),
          device_name(dst->device));
    const char *d = dst->raw, *s = src->raw;
    CHECK(d + tensor_bytes(dst) <= s || s + tensor_bytes(src) <= d,
          "tensor_convert from %s to %s in overlapping memory: convert into another tensor",
          dtype_name(src->dtype), dtype_name(dst->dtype));
    if (dst->device == DEVICE_CPU)
        dtype_convert_cpu(dst->raw, dst->dtype, src->raw, src->dtype, src->size);
    else
        dtype_ops(dst->device, "tensor_convert")->convert(dst->raw, dst->dtype, src->raw,
                                                          src->dtype, src->size);
}

bool tensor_same_shape(const Tensor *a, const Tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

const char *tensor_shape_str(const Tensor *t, char *buf, int buflen) {
    int n = snprintf(buf, (size_t)buflen, "[");
    for (int i = 0; i < t->ndim && n < buflen; i++)
        n += snprintf(buf + n, (size_t)(buflen - n), i ? ", %d" : "%d", t->shape[i]);
    if (n < buflen) snprintf(buf + n, (size_t)(buflen - n), "]");
    return buf;
}

void tensor_check_shape_at(const char *file, int line, const char *name, const Tensor *t, ...) {
    int want[TENSOR_MAX_DIMS + 1];
    int n = 0;
    va_list ap;
    va_start(ap, t);
    for (int d; n <= TENSOR_MAX_DIMS && (d = va_arg(ap, int)) != -2;) want[n++] = d;
    va_end(ap);
    bool ok = (n == t->ndim);
    for (int i = 0; ok && i < n; i++) ok = (want[i] == -1 || want[i] == t->shape[i]);
    if (ok) return;
    char got[64], exp[64];
    int k = snprintf(exp, sizeof exp, "[");
    for (int i = 0; i < n && k < 60; i++)
        k += want[i] == -1 ? snprintf(exp + k, sizeof exp - (size_t)k, i ? ", *" : "*")
                           : snprintf(exp + k, sizeof exp - (size_t)k, i ? ", %d" : "%d", want[i]);
    snprintf(exp + k, sizeof exp - (size_t)k, "]");
    die_at(file, line, "%s has shape %s, expected %s", name, tensor_shape_str(t, got, 64), exp);
}

void tensor_check_dtype_at(const char *file, int line, const char *func, const char *name,
                           const Tensor *t, DType dtype) {
    if (!t || t->dtype == dtype) return;
    die_at(file, line, "%s: %s is a %s tensor, but %s takes %s ones: make a %s copy with "
           "tensor_convert", func, name, dtype_name(t->dtype), func, dtype_name(dtype),
           dtype_name(dtype));
}

void tensor_check_device_at(const char *file, int line, const char *name, const Tensor *t,
                            Device device) {
    if (!t || t->device == device) return;
    die_at(file, line, "%s is a %s tensor, but this is the %s version of the layer: call "
           "layers through the model's table (layer_ops), or move the tensor with tensor_to",
           name, device_name(t->device), device_name(device));
}
