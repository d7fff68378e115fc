/* Given: how much arithmetic one token of training costs, from the shapes alone, and
 * what a GPU could do at most: their ratio per second is the model FLOPs utilisation
 * (MFU) that the program prints with --device cuda. */
#include "lesson.h"

double transformer_train_flops_per_token(const TransformerConfig *c, int T) {
    const double D = c->d_model, F = c->d_ff, V = c->vocab;
    /* per encoder layer and token, as multiply-adds of the forward: */
    const double projections = D * 3 * D + D * D; /* in_proj (q, k, v) and out_proj */
    const double feed_forward = D * F + F * D;    /* linear1 and linear2 */
    /* scores and context: the query at position t meets t + 1 keys (causal), dh values
     * each, in all H heads: D (t + 1) for each, (T + 1) / 2 keys on average */
    const double attention = 2 * D * (T + 1) / 2.0;
    const double decoder = D * V; /* the embedding is a lookup: no multiply-adds */
    const double forward = c->layers * (projections + feed_forward + attention) + decoder;
    return 3 * 2 * forward; /* 2 FLOPs a multiply-add; backward = 2 forwards */
}

double gpu_fp32_peak_flops(int major, int minor, int multiprocessors, int clock_khz) {
    /* FP32 lanes per multiprocessor (NVIDIA's CUDA programming guide, "arithmetic
     * instructions"): 64 on 6.0, 7.x and 8.0 (P100, V100, T4, A100), 128 on 6.1, 8.6,
     * 8.9, 9.0 and later (consumer Pascal, Ampere, Ada, H100/H200, Blackwell) */
    int lanes = 0;
    if (major == 6) lanes = minor == 0 ? 64 : 128;
    else if (major == 7) lanes = 64;
    else if (major == 8) lanes = minor == 0 ? 64 : 128;
    else if (major >= 9) lanes = 128;
    if (lanes == 0 || clock_khz <= 0 || multiprocessors <= 0) return 0.0;
    return (double)multiprocessors * lanes * 2.0 * clock_khz * 1e3;
}
