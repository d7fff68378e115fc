/* TODO 8.6: the memory a rank needs.
 *
 * float32: 4 bytes a parameter for its value, 4 for its gradient, and the optimiser's
 * state: AdamW keeps two moments (8 bytes, K = 8), SGD one momentum buffer (K = 4). Psi
 * parameters on N ranks (the ZeRO paper's table, in float32):
 *
 *   stage 0 (plain data parallel)   4 Psi      + 4 Psi      + K Psi
 *   stage 1 (optimiser sharded)     4 Psi      + 4 Psi      + K Psi / N
 *   stage 2 (and gradients)         4 Psi      + 4 Psi / N  + K Psi / N
 *   stage 3 (and parameters)        4 Psi / N  + 4 Psi / N  + K Psi / N
 *
 * The program prints your numbers beside what the library allocated: the difference is
 * the padding of TODO 8.1 (and, at stages 2 and 3, the windows of the blocks in
 * flight, printed apart). */
#include "lesson.h"

ZeroMemory lesson_memory_formula(int stage, int64_t psi, int world, ZeroOptimizer optimizer) {
#ifdef SOLUTION
    const int64_t K = optimizer == ZERO_ADAMW ? 8 : 4, N = world;
    ZeroMemory m = {.params = 4 * psi, .grads = 4 * psi, .optim = K * psi};
    if (stage >= 1) m.optim = K * psi / N;
    if (stage >= 2) m.grads = 4 * psi / N;
    if (stage >= 3) m.params = 4 * psi / N;
    return m;
#else
    /* TODO 8.6: fill params, grads and optim (bytes, int64_t, divided by N in integers
     * where sharded) by the table above; windows stays 0. */
    TODO_STOP("8.6");
#endif
}
