#include "tensor.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

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

Tensor tensor_zeros(int ndim, ...) {
    int dims[TENSOR_MAX_DIMS] = {0};
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim && i < TENSOR_MAX_DIMS; i++) dims[i] = va_arg(ap, int);
    va_end(ap);
    Tensor t = tensor_from_dims(ndim, dims);
    t.data = xcalloc((size_t)t.size, sizeof(float));
    return t;
}

Tensor tensor_zeros_like(const Tensor *t) {
    Tensor r = tensor_from_dims(t->ndim, t->shape);
    r.data = xcalloc((size_t)r.size, sizeof(float));
    return r;
}

void tensor_free(Tensor *t) {
    xfree(t->data);
    memset(t, 0, sizeof *t);
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
    v.data = t->data;
    v.device = t->device;
    return v;
}

Tensor tensor_rows(const Tensor *t, int n) {
    CHECK(n >= 1 && n <= t->shape[0], "rows 0..%d of a tensor with %d", n, t->shape[0]);
    Tensor v = *t;
    v.shape[0] = n;
    v.size = t->size / t->shape[0] * n;
    return v;
}

void tensor_fill(Tensor *t, float value) {
    for (int64_t i = 0; i < t->size; i++) t->data[i] = value;
}

void tensor_copy(Tensor *dst, const Tensor *src) {
    CHECK(dst->size == src->size, "copy of %lld elements into %lld", (long long)src->size,
          (long long)dst->size);
    memcpy(dst->data, src->data, (size_t)src->size * sizeof(float));
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
