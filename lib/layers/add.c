#include "add.h"

#include "core/check.h"
#include "rounded.h"

void add_check_forward(const Tensor *out, const Tensor *a, const Tensor *b) {
    CHECK(a->size == b->size && out->size == a->size, "add: sizes %lld (out), %lld (a), %lld (b)",
          (long long)out->size, (long long)a->size, (long long)b->size);
}

void add_check_backward(const Tensor *da, const Tensor *db, const Tensor *dout) {
    if (da)
        CHECK(da->size == dout->size, "add backward: da has %lld entries, dout %lld",
              (long long)da->size, (long long)dout->size);
    if (db)
        CHECK(db->size == dout->size, "add backward: db has %lld entries, dout %lld",
              (long long)db->size, (long long)dout->size);
}

void add_forward(Tensor *out, const Tensor *a, const Tensor *b) {
    RoundedCall rc; /* 16-bit tensors: this function on float32 views (layers/rounded.h) */
    if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_IN(a), ROUNDED_IN(b))) {
        add_forward(rounded(&rc, out), rounded(&rc, a), rounded(&rc, b));
        rounded_end(&rc);
        return;
    }
    add_check_forward(out, a, b);
    CHECK_DEVICE(out, DEVICE_CPU);
    CHECK_DEVICE(a, DEVICE_CPU);
    CHECK_DEVICE(b, DEVICE_CPU);
    const int64_t n = a->size;
    const float *x = a->data, *y = b->data;
    float *z = out->data;
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
    for (int64_t i = 0; i < n; i++) z[i] = x[i] + y[i];
}

static void accumulate(Tensor *d, const Tensor *dout) {
    const int64_t n = dout->size;
    const float *g = dout->data;
    float *x = d->data;
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
    for (int64_t i = 0; i < n; i++) x[i] += g[i];
}

void add_backward(Tensor *da, Tensor *db, const Tensor *dout) {
    RoundedCall rc;
    if (ROUNDED_BEGIN(&rc, ROUNDED_ADD(da), ROUNDED_ADD(db), ROUNDED_IN(dout))) {
        add_backward(rounded(&rc, da), rounded(&rc, db), rounded(&rc, dout));
        rounded_end(&rc);
        return;
    }
    add_check_backward(da, db, dout);
    CHECK_DEVICE(da, DEVICE_CPU);
    CHECK_DEVICE(db, DEVICE_CPU);
    CHECK_DEVICE(dout, DEVICE_CPU);
    if (da) accumulate(da, dout);
    if (db) accumulate(db, dout);
}
