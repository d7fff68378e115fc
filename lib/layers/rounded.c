#include "rounded.h"

#include <string.h>

#include "core/check.h"

/* The calling thread's float32 scratch: grown to the largest 16-bit call, kept. One
 * call at a time per thread (a 16-bit call's float32 layer makes no 16-bit call). */
static _Thread_local float *scratch;
static _Thread_local int64_t scratch_floats;
static _Thread_local bool scratch_busy;

/* Views start on a 64-byte line: the float32 kernels' vector loads stay aligned. */
enum { ROUNDED_ALIGN_FLOATS = 16 };

void rounded_release(void) {
    CHECK(!scratch_busy, "rounded_release inside a 16-bit layer call");
    xfree(scratch);
    scratch = NULL;
    scratch_floats = 0;
}

static bool is_16bit(DType d) { return d == DTYPE_BF16 || d == DTYPE_F16; }

/* The dtype rules of rounded.h; returns the call's dtype (DTYPE_F32: a float32 call). */
static DType check_dtypes(const char *file, int line, const char *func, const RoundedArg *args,
                          int n) {
    int first = -1; /* the first activation-like argument: the call's dtype */
    for (int i = 0; i < n; i++) {
        const Tensor *t = args[i].t;
        if (!t) continue;
        CHECK(t->dtype < DTYPE_COUNT, "%s: %s has dtype %d", func, args[i].name, (int)t->dtype);
        if (args[i].role & ROUNDED_FLOAT32) {
            if (t->dtype != DTYPE_F32)
                die_at(file, line,
                       "%s: %s is a %s tensor but must be float32: parameter gradients, "
                       "layer norm's statistics, dropout masks and fixed tables stay float32 "
                       "in a 16-bit run (layers/rounded.h)",
                       func, args[i].name, dtype_name(t->dtype));
            continue;
        }
        if (first < 0) {
            first = i;
        } else if (t->dtype != args[first].t->dtype) {
            die_at(file, line,
                   "%s: %s is a %s tensor but %s is a %s one: the activations, their "
                   "gradients and the weights of one call share one dtype (convert with "
                   "tensor_convert)",
                   func, args[i].name, dtype_name(t->dtype), args[first].name,
                   dtype_name(args[first].t->dtype));
        }
    }
    return first < 0 ? DTYPE_F32 : args[first].t->dtype;
}

DType rounded_dtype_at(const char *file, int line, const char *func, const RoundedArg *args,
                       int n) {
    const DType dtype = check_dtypes(file, line, func, args, n);
    if (is_16bit(dtype))
        for (int i = 0; i < n; i++)
            if (args[i].t && args[i].t->dtype != DTYPE_F32)
                tensor_check_device_at(file, line, args[i].name, args[i].t, DEVICE_CPU);
    return dtype;
}

bool rounded_begin_at(const char *file, int line, const char *func, RoundedCall *rc,
                      const RoundedArg *args, int n) {
    const DType dtype = check_dtypes(file, line, func, args, n);
    if (!is_16bit(dtype)) return false; /* float32: the layer's own code, untouched */
    CHECK(n <= ROUNDED_MAX_ARGS, "%s: %d arguments for a 16-bit call (at most %d)", func, n,
          ROUNDED_MAX_ARGS);
    CHECK(!scratch_busy, "%s: a 16-bit call inside another one's float32 layer", func);
    rc->dtype = dtype;
    rc->n = n;
    /* Lay the views out: one per distinct memory, sized to its tensor. */
    int64_t offset[ROUNDED_MAX_ARGS], total = 0;
    for (int i = 0; i < n; i++) {
        const Tensor *t = args[i].t;
        rc->arg[i] = args[i];
        rc->owner[i] = -1;
        rc->role[i] = 0;
        if (!t || t->dtype == DTYPE_F32) continue;
        tensor_check_device_at(file, line, args[i].name, t, DEVICE_CPU);
        for (int j = 0; j < i && rc->owner[i] < 0; j++)
            if (rc->owner[j] == j && args[j].t->raw == t->raw) {
                CHECK(args[j].t->size == t->size,
                      "%s: %s and %s share memory but have %lld and %lld elements", func,
                      args[j].name, args[i].name, (long long)args[j].t->size,
                      (long long)t->size);
                rc->owner[i] = j;
            }
        if (rc->owner[i] < 0) {
            rc->owner[i] = i;
            offset[i] = total;
            total += (t->size + ROUNDED_ALIGN_FLOATS - 1) / ROUNDED_ALIGN_FLOATS *
                     ROUNDED_ALIGN_FLOATS;
        }
        rc->role[rc->owner[i]] |= args[i].role;
    }
    if (total > scratch_floats) {
        xfree(scratch);
        scratch = xmalloc(sizeof(float) * (size_t)total);
        scratch_floats = total;
    }
    scratch_busy = true;
    for (int i = 0; i < n; i++) {
        const Tensor *t = args[i].t;
        if (rc->owner[i] < 0) continue;
        Tensor *v = &rc->view[i];
        *v = *t; /* the shape */
        v->dtype = DTYPE_F32;
        v->owned_bytes = 0;
        v->data = scratch + offset[rc->owner[i]];
        if (rc->owner[i] == i && (rc->role[i] & ROUNDED_READ))
            dtype_convert_cpu(v->data, DTYPE_F32, t->raw, dtype, t->size); /* exact */
    }
    return true;
}

Tensor *rounded(RoundedCall *rc, const Tensor *t) {
    if (!t || t->dtype == DTYPE_F32) return (Tensor *)t; /* used as it is */
    for (int i = 0; i < rc->n; i++)
        if (rc->arg[i].t == t && rc->owner[i] >= 0) return &rc->view[i];
    die_at(__FILE__, __LINE__, "rounded: a %s tensor that is not an argument of the call",
           dtype_name(t->dtype));
}

void rounded_end(RoundedCall *rc) {
    for (int i = 0; i < rc->n; i++)
        if (rc->owner[i] == i && (rc->role[i] & ROUNDED_WRITE)) {
            Tensor *t = (Tensor *)rc->arg[i].t; /* an output: the layer's own non-const */
            dtype_convert_cpu(t->raw, rc->dtype, rc->view[i].data, DTYPE_F32, t->size);
        }
    scratch_busy = false;
}

void rounded_refuse_at(const char *file, int line, const char *func, const char *instead,
                       const char *names, const Tensor *const *ts, int n) {
    for (int i = 0; i < n; i++) {
        if (!ts[i] || ts[i]->dtype == DTYPE_F32) continue;
        /* the i-th name of "a, b, c" (only when stopping) */
        const char *p = names;
        for (int k = 0; k < i && p; k++) {
            p = strchr(p, ',');
            if (p) p++;
        }
        while (p && *p == ' ') p++;
        const int len = p ? (int)strcspn(p, ",") : 0;
        die_at(file, line, "%s: %.*s is a %s tensor, but %s computes in float32 only: %s", func,
               len, p ? p : "", dtype_name(ts[i]->dtype), func, instead);
    }
}
