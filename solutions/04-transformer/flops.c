/* Given: how much arithmetic one token of training costs, from the shapes alone. Over
 * what a GPU could do at most (core/gpu_peak.h) it is the model FLOPs utilisation (MFU)
 * that the program prints with --device cuda. */
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
