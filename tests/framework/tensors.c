#include "tensors.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

Tensor random1(uint64_t seed, int a) {
    Tensor t = tensor_zeros(1, a);
    fill_uniform(t.data, t.size, seed, -1.0f, 1.0f);
    return t;
}

Tensor random2(uint64_t seed, int a, int b) {
    Tensor t = tensor_zeros(2, a, b);
    fill_uniform(t.data, t.size, seed, -1.0f, 1.0f);
    return t;
}

Tensor random4(uint64_t seed, int a, int b, int c, int d) {
    Tensor t = tensor_zeros(4, a, b, c, d);
    fill_uniform(t.data, t.size, seed, -1.0f, 1.0f);
    return t;
}

void free_all(Tensor **ts, size_t n) {
    for (size_t i = 0; i < n; i++) tensor_free(ts[i]);
}

bool bits_equal(const char *what, const Tensor *a, const Tensor *b) {
    return expect_true(a->size == b->size, "%s: %lld and %lld elements", what, (long long)a->size,
                       (long long)b->size) &&
           expect_true(memcmp(a->data, b->data, sizeof(float) * (size_t)a->size) == 0,
                       "%s: 1 and 2 threads give different bits", what);
}

bool expect_added(const char *what, const Tensor *from_p, const Tensor *p,
                  const Tensor *from_zero, float tol) {
    float *want = malloc(sizeof(float) * (size_t)p->size);
    for (int64_t i = 0; i < p->size; i++) want[i] = p->data[i] + from_zero->data[i];
    bool ok = expect_close(what, from_p->data, want, p->size, tol, tol);
    free(want);
    return ok;
}
