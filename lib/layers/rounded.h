/* Running a float32 layer on 16-bit tensors (bfloat16, float16): the CPU side of the
 * 16-bit compute path (issue 28), written once for every layer.
 *
 * The rounding points are the definition: every 16-bit input is converted exactly to
 * float32, the layer's float32 code runs, and each 16-bit output is rounded (nearest
 * even) once, on store; an output that is added to (+=: din, dlogits) is its old value
 * (exact, as float32) plus the float32 contribution, rounded once. Parameter gradients,
 * layer norm's statistics, dropout masks and fixed tables (the positional one) stay
 * float32 and are used as they are. The CPU path does exactly that, through float32
 * scratch: it predicts the GPU's 16-bit kernels (which differ only in the order of
 * their float32 sums) and tests them; its speed is not the point.
 *
 * A layer's entry starts with the dispatch, then its float32 code unchanged:
 *
 *   void linear_forward(Tensor *out, const Tensor *in, const Tensor *weight,
 *                       const Tensor *bias) {
 *       RoundedCall rc;
 *       if (ROUNDED_BEGIN(&rc, ROUNDED_OUT(out), ROUNDED_IN(in), ROUNDED_IN(weight),
 *                         ROUNDED_IN(bias))) {                  // a 16-bit call
 *           linear_forward(rounded(&rc, out), rounded(&rc, in), rounded(&rc, weight),
 *                          rounded(&rc, bias));                 // the float32 layer
 *           rounded_end(&rc);                                   // out rounded once
 *           return;
 *       }
 *       ... the float32 code
 *
 * ROUNDED_BEGIN checks the dtypes (below) and returns false when the call is float32:
 * then it has touched no memory and allocated nothing, and the float32 code runs as
 * before, the same bits at the same speed. Otherwise it borrows float32 views of the
 * 16-bit tensors (inputs converted; outputs that are also inputs, or added to, too) in
 * scratch memory of the calling thread that grows to the largest call and is kept;
 * rounded() hands out a tensor's view, rounded_end rounds the outputs back into the
 * 16-bit tensors. Tensors that share memory (out may be in) share one view.
 *
 * The dtype rules (one clear message naming the tensor and both dtypes, with the file
 * and line of the layer):
 *   - ROUNDED_IN / ROUNDED_OUT / ROUNDED_ADD tensors (activations, their gradients, the
 *     weights a layer reads) share one dtype: float32, bfloat16 or float16;
 *   - ROUNDED_F32 tensors (parameter gradients, statistics, masks, fixed tables) are
 *     float32 in every run;
 *   - the 16-bit tensors of a call are in host memory (this is the CPU's layer).
 * NULL tensors (an optional din, a mask not needed) are skipped. */
#ifndef LAYERS_ROUNDED_H
#define LAYERS_ROUNDED_H

#include <stdbool.h>

#include "core/tensor.h"

enum {
    ROUNDED_READ = 1,    /* converted in: the layer reads it */
    ROUNDED_WRITE = 2,   /* rounded out: the layer writes it */
    ROUNDED_FLOAT32 = 4, /* float32 in every run, used as it is */
};

/* One argument of a layer: the tensor (may be NULL), its name for messages, its role. */
typedef struct {
    const Tensor *t;
    const char *name;
    int role;
} RoundedArg;

#define ROUNDED_IN(t) ((RoundedArg){(t), #t, ROUNDED_READ})
#define ROUNDED_OUT(t) ((RoundedArg){(t), #t, ROUNDED_WRITE})
#define ROUNDED_ADD(t) ((RoundedArg){(t), #t, ROUNDED_READ | ROUNDED_WRITE})
#define ROUNDED_F32(t) ((RoundedArg){(t), #t, ROUNDED_FLOAT32})

enum { ROUNDED_MAX_ARGS = 8 };

/* One 16-bit call: its arguments and their float32 views (in scratch). */
typedef struct {
    DType dtype;                       /* the call's 16-bit dtype */
    int n;
    RoundedArg arg[ROUNDED_MAX_ARGS];
    Tensor view[ROUNDED_MAX_ARGS];     /* float32, the argument's shape */
    int owner[ROUNDED_MAX_ARGS];       /* the argument whose memory this one shares (itself
                                        * when first); -1: not a view (NULL or float32) */
    int role[ROUNDED_MAX_ARGS];        /* the roles of all arguments sharing that memory */
} RoundedCall;

/* true: a 16-bit call, views ready (call the float32 layer on rounded(), then
 * rounded_end); false: a float32 call (nothing done). Stops on a dtype rule broken. */
#define ROUNDED_BEGIN(rc, ...)                                                              \
    rounded_begin_at(__FILE__, __LINE__, __func__, (rc), (const RoundedArg[]){__VA_ARGS__}, \
                     (int)(sizeof((const RoundedArg[]){__VA_ARGS__}) / sizeof(RoundedArg)))
bool rounded_begin_at(const char *file, int line, const char *func, RoundedCall *rc,
                      const RoundedArg *args, int n);

/* The dtype rules alone, for a layer that converts a piece at a time itself instead of
 * whole views (softmax_cross_entropy_fast: a row, no float32 [N, V] copy): stops as
 * ROUNDED_BEGIN does on a rule broken, and on a 16-bit tensor outside host memory;
 * returns the call's dtype (DTYPE_F32: a float32 call). Allocates nothing. */
#define ROUNDED_DTYPE(...)                                                                  \
    rounded_dtype_at(__FILE__, __LINE__, __func__, (const RoundedArg[]){__VA_ARGS__},        \
                     (int)(sizeof((const RoundedArg[]){__VA_ARGS__}) / sizeof(RoundedArg)))
DType rounded_dtype_at(const char *file, int line, const char *func, const RoundedArg *args,
                       int n);

/* The float32 tensor the float32 layer gets for t: its view when t is a 16-bit argument
 * of the call, t itself when it is NULL or float32. */
Tensor *rounded(RoundedCall *rc, const Tensor *t);

/* Rounds every written view into its 16-bit tensor (once) and gives the scratch back. */
void rounded_end(RoundedCall *rc);

/* Frees the calling thread's scratch (it is otherwise kept for the next 16-bit call). */
void rounded_release(void);

/* For the layers that compute in float32 only (conv2d, max-pool, the unfused attention,
 * the CNN's loss): stops when any of the tensors (NULL skipped) is not float32, naming
 * the layer, the tensor, its dtype and `instead` (what a 16-bit run uses):
 *   ROUNDED_REFUSE("a 16-bit run uses the fused attention, layers/flash_attention.h",
 *                  ctx, probs, dropped, qkv); */
#define ROUNDED_REFUSE(instead, ...)                                                         \
    rounded_refuse_at(__FILE__, __LINE__, __func__, (instead), #__VA_ARGS__,                 \
                      (const Tensor *const[]){__VA_ARGS__},                                  \
                      (int)(sizeof((const Tensor *const[]){__VA_ARGS__}) / sizeof(const Tensor *)))
void rounded_refuse_at(const char *file, int line, const char *func, const char *instead,
                       const char *names, const Tensor *const *ts, int n);

#endif
