/* Training speed of lesson 04's transformer on the CPU: tokens/s of the tutorial's
 * training step (forward, cross-entropy, backward, clip_grad_norm 0.5, SGD lr 5.0), the
 * model's GFLOP/s, the GEMMs' GFLOP/s and their share of the measured FMA peak, and with
 * --profile where one step's time goes, layer by layer.
 *
 *   bench_transformer --model tutorial|seed [--dataset fortunes] [--vocab 28782] [--threads 2]
 *
 * The text (lib/data/text.h; by default the fortunes text of Debian's fortunes package)
 * is tokenised as lesson 04 does (words split on whitespace, <eos> per line, ids by first
 * appearance in train), its train split cut into 20 columns (batchify) and read 35 rows
 * at a time (get_batch), the batches following each other through the text. Words with
 * an id at or beyond --vocab become the vocabulary's last word: the seed's model has
 * 28,782 words (WikiText-2 under torchtext's tokeniser), and the decoder's GEMMs, most of
 * the work, scale with it. bench/pytorch_transformer.py times the same model, data and
 * step in PyTorch. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/machine.h"
#include "core/timer.h"
#include "data/text.h"
#include "models/transformer.h"
#include "ops/gemm.h"
#include "train/clip.h"
#include "train/optim.h"

/* ---------------------------------------------------------------- FLOPs */

/* One training step's floating-point operations in GEMMs per token (multiply and add
 * counted as 2): the forward's linear layers (in_proj 3D x D, out_proj D x D, linear1
 * F x D, linear2 D x F, decoder V x D) and attention's two batched products (scores
 * Q K^T and context P V: T x T x dh each per head, the whole square as computed), then
 * the backward's two products for each of them (input and weight gradients). The
 * element-wise layers are left out (a few per cent of a FLOP per token and weight). */
static double gemm_flops_per_token(const TransformerConfig *c, int T, double *linear,
                                   double *decoder) {
    const double D = c->d_model, F = c->d_ff, V = c->vocab;
    *linear = 3 * 2 * (3 * D * D + D * D + F * D + D * F) * c->layers;
    *decoder = 3 * 2 * D * V;
    const double attention = 3 * 2 * 2 * (double)T * D * c->layers;
    return *linear + *decoder + attention;
}

/* ---------------------------------------------------------------- profile */

/* --profile: the model's layer table with every function wrapped in a timer. */
enum {
    P_EMBED, P_ATTN, P_LINEAR, P_DECODER, P_NORM, P_DROPOUT, P_ADD_RELU, P_LOSS, P_COUNT
};
static const char *const P_NAME[P_COUNT] = {
    "embedding + positions", "attention (scores, softmax, context)", "encoder linears (GEMM)",
    "decoder linear (GEMM)", "layer norm", "dropout", "residual add, ReLU",
    "softmax cross-entropy"};
static double p_fwd[P_COUNT], p_bwd[P_COUNT], p_flops_fwd[P_COUNT], p_flops_bwd[P_COUNT];
static LayerOps real;
static int profile_vocab;

#define TIMED(slot, acc, call) \
    do {                       \
        double t0_ = now_seconds(); \
        call;                  \
        acc[slot] += now_seconds() - t0_; \
    } while (0)

static int linear_slot(const Tensor *weight) {
    return weight->shape[0] == profile_vocab ? P_DECODER : P_LINEAR;
}
static void w_linear_forward(Tensor *out, const Tensor *in, const Tensor *w, const Tensor *b) {
    const int s = linear_slot(w);
    p_flops_fwd[s] += 2.0 * in->shape[0] * in->shape[1] * w->shape[0];
    TIMED(s, p_fwd, real.linear_forward(out, in, w, b));
}
static void w_linear_backward(Tensor *din, Tensor *dw, Tensor *db, const Tensor *dout,
                              const Tensor *in, const Tensor *w) {
    const int s = linear_slot(w);
    p_flops_bwd[s] += (din ? 4.0 : 2.0) * in->shape[0] * in->shape[1] * w->shape[0];
    TIMED(s, p_bwd, real.linear_backward(din, dw, db, dout, in, w));
}
static void w_embedding_forward(Tensor *out, const int *tokens, const Tensor *table, float scale) {
    TIMED(P_EMBED, p_fwd, real.embedding_forward(out, tokens, table, scale));
}
static void w_embedding_backward(Tensor *dt, const Tensor *dout, const int *tokens, float scale) {
    TIMED(P_EMBED, p_bwd, real.embedding_backward(dt, dout, tokens, scale));
}
static void w_positional_forward(Tensor *out, const Tensor *in, const Tensor *table, int T) {
    TIMED(P_EMBED, p_fwd, real.positional_forward(out, in, table, T));
}
static void w_layernorm_forward(Tensor *out, Tensor *mean, Tensor *rstd, const Tensor *in,
                                const Tensor *g, const Tensor *b, float eps) {
    TIMED(P_NORM, p_fwd, real.layernorm_forward(out, mean, rstd, in, g, b, eps));
}
static void w_layernorm_backward(Tensor *din, Tensor *dg, Tensor *db, const Tensor *dout,
                                 const Tensor *in, const Tensor *mean, const Tensor *rstd,
                                 const Tensor *g) {
    TIMED(P_NORM, p_bwd, real.layernorm_backward(din, dg, db, dout, in, mean, rstd, g));
}
static void w_dropout_forward(Tensor *out, Tensor *mask, const Tensor *in, float p, bool training,
                              Rng *rng) {
    TIMED(P_DROPOUT, p_fwd, real.dropout_forward(out, mask, in, p, training, rng));
}
static void w_dropout_backward(Tensor *din, const Tensor *dout, const Tensor *mask) {
    TIMED(P_DROPOUT, p_bwd, real.dropout_backward(din, dout, mask));
}
static void w_attention_forward(Tensor *ctx, Tensor *probs, Tensor *dropped, const Tensor *qkv,
                                float p, bool training, Rng *rng) {
    p_flops_fwd[P_ATTN] += 4.0 * ctx->shape[0] * ctx->shape[1] * probs->shape[2];
    TIMED(P_ATTN, p_fwd, real.attention_forward(ctx, probs, dropped, qkv, p, training, rng));
}
static void w_attention_backward(Tensor *dqkv, Tensor *ds, const Tensor *dctx, const Tensor *qkv,
                                 const Tensor *probs, const Tensor *dropped) {
    p_flops_bwd[P_ATTN] += 8.0 * dctx->shape[0] * dctx->shape[1] * probs->shape[2];
    TIMED(P_ATTN, p_bwd, real.attention_backward(dqkv, ds, dctx, qkv, probs, dropped));
}
static void w_add_forward(Tensor *out, const Tensor *a, const Tensor *b) {
    TIMED(P_ADD_RELU, p_fwd, real.add_forward(out, a, b));
}
static void w_add_backward(Tensor *da, Tensor *db, const Tensor *dout) {
    TIMED(P_ADD_RELU, p_bwd, real.add_backward(da, db, dout));
}
static void w_relu_forward(Tensor *out, const Tensor *in) {
    TIMED(P_ADD_RELU, p_fwd, real.relu_forward(out, in));
}
static void w_relu_backward(Tensor *din, const Tensor *dout, const Tensor *out) {
    TIMED(P_ADD_RELU, p_bwd, real.relu_backward(din, dout, out));
}

static void wrap_layers(Transformer *m) {
    real = m->layers;
    profile_vocab = m->cfg.vocab;
    LayerOps *o = &m->layers;
    o->linear_forward = w_linear_forward, o->linear_backward = w_linear_backward;
    o->embedding_forward = w_embedding_forward, o->embedding_backward = w_embedding_backward;
    o->positional_forward = w_positional_forward;
    o->layernorm_forward = w_layernorm_forward, o->layernorm_backward = w_layernorm_backward;
    o->dropout_forward = w_dropout_forward, o->dropout_backward = w_dropout_backward;
    o->attention_forward = w_attention_forward, o->attention_backward = w_attention_backward;
    o->add_forward = w_add_forward, o->add_backward = w_add_backward;
    o->relu_forward = w_relu_forward, o->relu_backward = w_relu_backward;
    /* the loss is not wrapped: the model stores its gradient only when it calls the
     * library's own function (transformer_loss_grad); it is timed as a whole */
}

/* ---------------------------------------------------------------- the step */

typedef struct {
    double forward, loss, backward, clip, sgd, zero; /* seconds, summed over the steps */
} StepTimes;

/* One training step of the tutorial's train(): zero_grad, forward, loss, backward,
 * clip_grad_norm_(0.5), optimizer.step(). */
static float train_step(Transformer *m, Sgd *opt, const int *tokens, const int *targets,
                        StepTimes *t) {
    const int blocks = transformer_block_count(&m->cfg);
    double t0 = now_seconds();
    params_zero_grad(&m->params);
    double t1 = now_seconds();
    transformer_forward(m, 0, blocks, tokens, NULL);
    double t2 = now_seconds();
    const float loss = transformer_loss_grad(m, targets);
    double t3 = now_seconds();
    transformer_backward(m, 0, blocks, &m->dlogits, NULL, NULL);
    double t4 = now_seconds();
    clip_grad_norm(&m->params, 0.5f);
    double t5 = now_seconds();
    sgd_step(opt, &m->params);
    double t6 = now_seconds();
    t->zero += t1 - t0, t->forward += t2 - t1, t->loss += t3 - t2, t->backward += t4 - t3;
    t->clip += t5 - t4, t->sgd += t6 - t5;
    return loss;
}

/* Batch `step` of the text: get_batch at row (step * T) mod (rows that leave a whole
 * batch), transposed to the model's batch-major rows (b * T + t). */
static void batch_at(const TextBatches *data, int64_t step, int T, int vocab, int *tokens,
                     int *targets) {
    const int64_t starts = (data->rows - 1) / T;
    const TextBatch b = text_get_batch(data, (step % starts) * T, T);
    for (int t = 0; t < T; t++)
        for (int c = 0; c < b.cols; c++) {
            const int x = b.input[t * b.cols + c], y = b.target[t * b.cols + c];
            tokens[c * T + t] = x < vocab ? x : vocab - 1;
            targets[c * T + t] = y < vocab ? y : vocab - 1;
        }
}

int main(int argc, char **argv) {
    int threads = omp_get_max_threads(), batch = 20, bptt = 35, steps = 0, warmup = 2,
        vocab_cap = 28782, json = 0, profile = 0;
    const char *model_name = "tutorial", *dataset = "fortunes", *data_path = "";
    ArgSpec specs[] = {
        {"model", ARG_CHOICE, &model_name, "preset: tutorial (200/200/2 heads/2 layers) or seed "
         "(1024/1024/4 heads/3 layers)", "tutorial|seed"},
        {"dataset", ARG_CHOICE, &dataset, "the text (lib/data/text.h)", "fortunes|text|wikitext2"},
        {"data", ARG_STRING, &data_path, "its file or directory (default: where text_load looks)", NULL},
        {"vocab", ARG_INT, &vocab_cap, "vocabulary size: the corpus's, cut to this many words", NULL},
        {"threads", ARG_INT, &threads, "OpenMP threads", NULL},
        {"batch-size", ARG_INT, &batch, "sequences per step (the tutorial's 20)", NULL},
        {"bptt", ARG_INT, &bptt, "tokens per sequence (the tutorial's 35)", NULL},
        {"steps", ARG_INT, &steps, "timed steps (0: 40 for tutorial, 6 for seed)", NULL},
        {"warmup", ARG_INT, &warmup, "untimed steps first", NULL},
        {"profile", ARG_FLAG, &profile, "then time each layer over the same steps and print where the time goes", NULL},
        {"json", ARG_FLAG, &json, "print one JSON object instead of a table", NULL},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "Benchmark: training steps of lesson 04's transformer (forward, cross-entropy, "
               "backward, clip 0.5, SGD lr 5.0) on a text corpus.");
    const bool seed_model = strcmp(model_name, "seed") == 0;
    if (steps == 0) steps = seed_model ? 6 : 40;
    if (threads < 1 || batch < 1 || bptt < 1 || steps < 1 || warmup < 0 || vocab_cap < 2)
        fatal("--threads, --batch-size, --bptt, --steps must be positive, --vocab at least 2");
    omp_set_num_threads(threads);

    TextCorpus corpus;
    text_load(dataset, data_path[0] ? data_path : NULL, NULL, &corpus);
    const int vocab = corpus.vocab.count < vocab_cap ? corpus.vocab.count : vocab_cap;
    TextBatches data;
    text_batchify(&corpus.train, batch, "train", &data);
    if (data.rows - 1 < bptt) fatal("%s: the train split is too short for one batch", corpus.source);

    const TransformerConfig cfg =
        seed_model ? transformer_config_seed(vocab) : transformer_config_tutorial(vocab);
    Transformer m;
    transformer_init(&m, &cfg, batch, bptt, 1);
    Sgd opt;
    sgd_init(&opt, &m.params, 5.0f, 0.0f, 0.0f);
    const int N = batch * bptt;
    int *tokens = xcalloc((size_t)N, sizeof(int)), *targets = xcalloc((size_t)N, sizeof(int));

    StepTimes t = {0}, ignored = {0};
    float loss = 0.0f;
    for (int s = 0; s < warmup; s++) {
        batch_at(&data, s, bptt, vocab, tokens, targets);
        train_step(&m, &opt, tokens, targets, &ignored);
    }
    const double peak_before = machine_fma_peak_gflops(threads); /* and after: machine_settle_peak_gflops */
    double best_step = 1e30;
    const double start = now_seconds();
    for (int s = 0; s < steps; s++) {
        batch_at(&data, warmup + s, bptt, vocab, tokens, targets);
        const double t0 = now_seconds();
        loss = train_step(&m, &opt, tokens, targets, &t);
        const double dt = now_seconds() - t0;
        best_step = dt < best_step ? dt : best_step;
    }
    const double seconds = now_seconds() - start;
    if (!isfinite(loss)) fatal("the loss is %g after %d steps", (double)loss, warmup + steps);
    const double tokens_per_s = (double)steps * N / seconds;
    double linear_fpt, decoder_fpt;
    const double fpt = gemm_flops_per_token(&cfg, bptt, &linear_fpt, &decoder_fpt);
    const double gflops = tokens_per_s * fpt / 1e9;
    /* the GEMMs alone: the linear layers' FLOPs over the time spent in the linear
     * layers, measured in the profile below (0 without --profile) */
    double gemm_gflops = 0.0;
    double core_peak;
    const double peak = machine_settle_peak_gflops(threads, peak_before, &core_peak);

    if (profile) {
        wrap_layers(&m);
        StepTimes pt = {0};
        for (int s = 0; s < steps; s++) {
            batch_at(&data, warmup + steps + s, bptt, vocab, tokens, targets);
            train_step(&m, &opt, tokens, targets, &pt);
        }
        const double lin_t = p_fwd[P_LINEAR] + p_bwd[P_LINEAR] + p_fwd[P_DECODER] + p_bwd[P_DECODER];
        const double lin_f = p_flops_fwd[P_LINEAR] + p_flops_bwd[P_LINEAR] +
                             p_flops_fwd[P_DECODER] + p_flops_bwd[P_DECODER];
        gemm_gflops = lin_f / lin_t / 1e9;
        const double step_ms = 1e3 * (pt.zero + pt.forward + pt.loss + pt.backward + pt.clip + pt.sgd) / steps;
        fprintf(stderr, "where one step's time goes (%s model, %d threads, mean of %d steps: %.1f ms):\n",
                model_name, threads, steps, step_ms);
        fprintf(stderr, "  %-38s %10s %10s %10s %10s\n", "", "forward", "backward", "GFLOP/s", "share");
        double fwd_sum = 0, bwd_sum = 0;
        p_fwd[P_LOSS] = pt.loss; /* timed around transformer_loss_grad */
        for (int k = 0; k < P_COUNT; k++) {
            const double f = 1e3 * p_fwd[k] / steps, b = 1e3 * p_bwd[k] / steps;
            const double fl = p_flops_fwd[k] + p_flops_bwd[k];
            fwd_sum += f, bwd_sum += b;
            char rate[16] = "";
            if (fl > 0) snprintf(rate, sizeof rate, "%.1f", fl / (p_fwd[k] + p_bwd[k]) / 1e9);
            fprintf(stderr, "  %-38s %8.2f ms %7.2f ms %10s %9.1f%%\n", P_NAME[k], f, b, rate,
                    100.0 * (f + b) / step_ms);
        }
        const double model_f = 1e3 * pt.forward / steps - (fwd_sum - 1e3 * pt.loss / steps);
        const double model_b = 1e3 * pt.backward / steps - bwd_sum;
        fprintf(stderr, "  %-38s %8.2f ms %7.2f ms %10s %9.1f%%\n",
                "the model's own (clearing buffers, ...)", model_f, model_b, "",
                100.0 * (model_f + model_b) / step_ms);
        const double other = 1e3 * (pt.zero + pt.clip + pt.sgd) / steps;
        fprintf(stderr, "  %-38s %8.2f ms (zero_grad %.2f, clip %.2f, SGD %.2f)   %9.1f%%\n",
                "zero_grad, clip_grad_norm, SGD", other, 1e3 * pt.zero / steps,
                1e3 * pt.clip / steps, 1e3 * pt.sgd / steps, 100.0 * other / step_ms);
        fprintf(stderr, "  GEMMs of the linear layers: %.1f GFLOP/s, %.1f%% of the measured FMA "
                "peak (%.1f GFLOP/s)\n", gemm_gflops, 100.0 * gemm_gflops / peak, peak);
    }

    const int64_t params = params_count(&m.params);
    if (json) {
        printf("{\"impl\": \"c\", \"model\": \"%s\", \"threads\": %d, \"batch\": %d, \"bptt\": %d, "
               "\"vocab\": %d, \"corpus_vocab\": %d, \"params\": %lld, \"steps\": %d, "
               "\"tokens_per_s\": %.1f, \"best_step_ms\": %.2f, \"gflops\": %.2f, "
               "\"gemm_gflops\": %.2f, \"peak_gflops\": %.1f, \"peak_one_core_gflops\": %.1f, "
               "\"flops_per_token\": %.4g, "
               "\"forward_ms\": %.2f, \"loss_ms\": %.2f, \"backward_ms\": %.2f, "
               "\"other_ms\": %.2f, \"loss\": %.4f, \"gemm\": \"%s\"}\n",
               model_name, threads, batch, bptt, vocab, corpus.vocab.count, (long long)params,
               steps, tokens_per_s, 1e3 * best_step, gflops, gemm_gflops, peak, core_peak, fpt,
               1e3 * t.forward / steps, 1e3 * t.loss / steps, 1e3 * t.backward / steps,
               1e3 * (t.zero + t.clip + t.sgd) / steps, (double)loss, gemm_backend_name());
    } else {
        printf("transformer (%s): %lld parameters, vocabulary %d (the corpus has %d), batch %d x "
               "%d tokens, %d threads, GEMM: %s\n", model_name, (long long)params, vocab,
               corpus.vocab.count, batch, bptt, threads, gemm_backend_name());
        printf("  training   %9.1f tokens/s  %7.2f GFLOP/s  %5.1f%% of the measured FMA peak "
               "(%.1f GFLOP/s)\n", tokens_per_s, gflops, 100.0 * gflops / peak, peak);
        printf("  per step   forward %.1f ms, loss %.1f ms, backward %.1f ms, zero + clip + SGD "
               "%.1f ms\n", 1e3 * t.forward / steps, 1e3 * t.loss / steps,
               1e3 * t.backward / steps, 1e3 * (t.zero + t.clip + t.sgd) / steps);
    }
    xfree(tokens);
    xfree(targets);
    sgd_free(&opt);
    transformer_free(&m);
    text_batches_free(&data);
    text_free(&corpus);
    return 0;
}
