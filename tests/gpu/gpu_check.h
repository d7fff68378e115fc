/* For checks that need a GPU: the first line of such a check.
 *
 * Without a usable GPU (no CUDA in the build, no driver, no device) the check
 * prints "needs a GPU: <why>" and SKIPs, never passes. tests/check-stubs.sh reads
 * that line to tell a GPU TODO check that could not run from a host-side one.
 * It runs in the check's own process (CUDA does not survive fork, so the parent
 * never starts it). */
#ifndef TESTS_GPU_CHECK_H
#define TESTS_GPU_CHECK_H

#include <stdio.h>

#include "cuda/device.h"
#include "framework/check.h"

#define GPU_SKIP_PREFIX "needs a GPU: "

#define REQUIRE_GPU()                                                      \
    do {                                                                   \
        char why_[512];                                                    \
        if (!cuda_init(why_, sizeof why_)) {                                \
            printf(GPU_SKIP_PREFIX "%s\n", why_);                          \
            return CHECK_SKIP;                                             \
        }                                                                  \
    } while (0)

/* The whole check, where the build has no CUDA at all. */
static inline int gpu_check_no_cuda(void) {
    REQUIRE_GPU();
    return CHECK_FAIL; /* not reached: cuda_init fails without CUDA */
}

/* check_run(..., GPU_CHECK(check_fn), ...): the check where the build has CUDA
 * (check_fn is then defined under #ifdef HAVE_CUDA), a skip with the reason where not. */
#ifdef HAVE_CUDA
#define GPU_CHECK(fn) fn
#else
#define GPU_CHECK(fn) gpu_check_no_cuda
#endif

#endif
