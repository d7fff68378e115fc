// Elements of a layer's tensors in CUDA code: float32, or bfloat16 / float16 as their 16
// bits, read and written through one pair of overloads, so each kernel is written once,
// as a template on its storage type T:
//
//   template <class T> __global__ void relu_kernel(T *out, const T *in, int64_t n) {
//       GRID_STRIDE_LOOP(i, n) {
//           const float x = elem_load(in, i);       // exact: every 16-bit value is a float
//           elem_store(out, i, x > 0.0f ? x : 0.0f); // rounded once, to nearest even
//       }
//   }
//
// and elem_add(din, i, g) for the outputs that are added to (old value + g, rounded once).
//
// For T = float these are a plain read, write and +=: the float32 instantiation compiles
// to the kernel it was before (the same PTX). The 16-bit conversions are core/dtype.h's,
// the CPU's bits (issue 28's rounding points: load -> float, compute in float, store
// rounded once; a += output is old + contribution, rounded once).
//
// On the host, elem_dispatch(dtype, f) calls f with a value of the matching storage type
// (f a generic lambda: `[&](auto tag) { using T = decltype(tag); ... }`), and
// ONE_DTYPE(out, in, weight) checks that the tensors of a call share one dtype.
#ifndef CUDA_ELEM_CUH
#define CUDA_ELEM_CUH

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <initializer_list>

extern "C" {
#include "core/check.h"
#include "core/dtype.h"
#include "core/tensor.h"
}

// The 16 bits of one element (a struct each, so that overloads tell them apart).
struct Bf16 {
    uint16_t bits;
};
struct Fp16 {
    uint16_t bits;
};

__host__ __device__ inline float elem_load(const float *p, int64_t i) { return p[i]; }
__host__ __device__ inline float elem_load(const Bf16 *p, int64_t i) {
    return dtype_f32_from_bf16(p[i].bits);
}
__host__ __device__ inline float elem_load(const Fp16 *p, int64_t i) {
    return dtype_f32_from_f16(p[i].bits);
}

__host__ __device__ inline void elem_store(float *p, int64_t i, float v) { p[i] = v; }
__host__ __device__ inline void elem_store(Bf16 *p, int64_t i, float v) {
    p[i].bits = dtype_bf16_from_f32(v);
}
__host__ __device__ inline void elem_store(Fp16 *p, int64_t i, float v) {
    p[i].bits = dtype_f16_from_f32(v);
}

// p[i] += v: the old value plus v, rounded once (float32: the plain +=).
__host__ __device__ inline void elem_add(float *p, int64_t i, float v) { p[i] += v; }
__host__ __device__ inline void elem_add(Bf16 *p, int64_t i, float v) {
    elem_store(p, i, elem_load(p, i) + v);
}
__host__ __device__ inline void elem_add(Fp16 *p, int64_t i, float v) {
    elem_store(p, i, elem_load(p, i) + v);
}

// t's elements as T (the caller has dispatched on t's dtype).
template <class T> inline T *elems(const Tensor *t) { return t ? (T *)t->raw : (T *)0; }

// f(float()), f(Bf16()) or f(Fp16()) for the dtype.
template <class F> inline void elem_dispatch(DType dtype, F f) {
    switch (dtype) {
    case DTYPE_F32: f(0.0f); break;
    case DTYPE_BF16: f(Bf16{0}); break;
    case DTYPE_F16: f(Fp16{0}); break;
    default: die_at(__FILE__, __LINE__, "a tensor of an unknown dtype (%d)", (int)dtype);
    }
}

// The dtype the non-NULL tensors share; stops naming the first that differs from the
// first one, with both dtypes. names: "out, in, weight" (the macro's #__VA_ARGS__).
inline DType elem_one_dtype_at(const char *file, int line, const char *func, const char *names,
                               std::initializer_list<const Tensor *> tensors) {
    const Tensor *first = 0;
    int first_at = 0, at = 0;
    for (const Tensor *t : tensors) {
        if (t && !first) first = t, first_at = at;
        else if (t && t->dtype != first->dtype) {
            char a[64] = "", b[64] = ""; // the names at positions first_at and at
            const char *s = names;
            for (int k = 0; k <= at; k++) {
                const size_t len = strcspn(s, ",");
                if (k == first_at || k == at)
                    snprintf(k == at ? b : a, sizeof a, "%.*s", (int)len, s);
                s += len + (s[len] == ',');
                s += strspn(s, " ");
            }
            die_at(file, line, "%s: %s is a %s tensor but %s is a %s one: the activations and "
                   "weights of one call share one dtype (tensor_convert makes a copy; "
                   "params_set_working a model's 16-bit weights)", func, b,
                   dtype_name(t->dtype), a, dtype_name(first->dtype));
        }
        at++;
    }
    return first ? first->dtype : DTYPE_F32;
}
#define ONE_DTYPE(...) elem_one_dtype_at(__FILE__, __LINE__, __func__, #__VA_ARGS__, {__VA_ARGS__})

#endif
