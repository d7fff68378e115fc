/* Tensors for the layer tests: random ones from a fixed seed, freeing several at once,
 * and the comparisons of whole tensors that the tests of lib/layers share. */
#ifndef TESTS_TENSORS_H
#define TESTS_TENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"

/* New CPU tensors of shape [a], [a, b] and [a, b, c, d], uniform in [-1, 1) from seed
 * (fill_uniform). */
Tensor random1(uint64_t seed, int a);
Tensor random2(uint64_t seed, int a, int b);
Tensor random4(uint64_t seed, int a, int b, int c, int d);

/* tensor_free of each of ts[0..n); FREE_ALL(&a, &b, &c) lists them in place. */
void free_all(Tensor **ts, size_t n);
#define FREE_ALL(...)                                                     \
    do {                                                                  \
        Tensor *all_[] = {__VA_ARGS__};                                   \
        free_all(all_, sizeof all_ / sizeof all_[0]);                     \
    } while (0)

/* For the thread checks: a and b (results on 1 and 2 threads) hold the same bits; else
 * "<what>: 1 and 2 threads give different bits" and false. */
bool bits_equal(const char *what, const Tensor *a, const Tensor *b);

/* A backward that adds (+=): from_p, the gradient buffer that held p before, is
 * p + from_zero (the same backward into zeros), within tol absolute + tol relative. */
bool expect_added(const char *what, const Tensor *from_p, const Tensor *p,
                  const Tensor *from_zero, float tol);

#endif
