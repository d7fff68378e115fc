/* Given: lesson 04's transformer under data parallelism (--model transformer).
 *
 * The same recipe as the CNN's, the same TODOs: every rank builds the model from its
 * own seed and takes rank 0's weights (TODO 6.2), the sampler deals out sequences
 * (6.3), the gradients are averaged after each backward (6.4, or the library's
 * buckets, which the model's blocks feed as their backwards finish each parameter), the
 * sums are the job's (6.5), rank 0 prints and saves (6.6).
 *
 * How the text is shared. Lesson 04 batchifies the stream into B columns and walks down
 * them bptt rows at a time: each column is one long stream that the next batch
 * continues. That order cannot be dealt out to ranks by a sampler. PyTorch's DDP
 * language-model programs (torchrun examples, Hugging Face's run_clm) cut the text into
 * fixed-length sequences instead and give them to a DistributedSampler, and so does
 * this one: sequence k is tokens k*bptt .. k*bptt + bptt of the stream (bptt inputs,
 * the targets one token on), the sampler shuffles them each epoch (set_epoch) and rank r
 * takes every W-th. A step on W ranks with B sequences each then sees the same W*B
 * sequences as a step on one rank with W*B: the grader's check. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/trace.h"
#include "lesson.h"
#include "train/clip.h"

static int sequences_of(const TokenStream *s, int bptt, int limit) {
    const int64_t n = s->count > 0 ? (s->count - 1) / bptt : 0; /* each needs one target more */
    const int64_t k = limit > 0 && limit < n ? limit : n;
    return k > (1 << 30) ? 1 << 30 : (int)k;
}

/* FNV-1a over the training tokens the sequences use and the vocabulary's size: a
 * checkpoint of another text is refused on resume. */
static uint64_t text_fingerprint(const TextCorpus *c, int64_t tokens) {
    uint64_t h = 1469598103934665603ull ^ (uint64_t)c->vocab.count;
    for (int64_t i = 0; i < tokens; i++) {
        h ^= (uint32_t)c->train.ids[i];
        h *= 1099511628211ull;
    }
    return h;
}

void lm_setup(Run *run) {
    const Config *c = &run->cfg;
    const TrainOptions *t = &c->train;
    const int B = t->batch_size, T = c->lm.bptt;
    const TextOptions topt = lm_text_options(&c->lm);
    text_load(c->text, t->data_dir, &topt, &run->corpus); /* every rank reads it */
    run->train.count = sequences_of(&run->corpus.train, T, t->train_limit);
    run->test.count = sequences_of(&run->corpus.test, T, t->test_limit);
    snprintf(run->train.name, sizeof run->train.name, "%s", run->corpus.name);
    snprintf(run->test.name, sizeof run->test.name, "%s", run->corpus.name);
    if (run->train.count < 1 || run->test.count < 1)
        fatal("%s has too few tokens for one sequence of --bptt %d in its train and test splits "
              "(%lld and %lld tokens): a smaller --bptt or a longer text", run->corpus.name, T,
              (long long)run->corpus.train.count, (long long)run->corpus.test.count);
    check_batch_size(run, run->train.count, "training sequences"); /* before the model is built for it */
    rng_seed(&run->rng, (uint64_t)t->seed, 1);
    run->data_fingerprint = text_fingerprint(&run->corpus, (int64_t)run->train.count * T + 1);

    /* each rank its own initial weights: TODO 6.2 must make them one */
    const TransformerConfig cfg = lm_model_config(&c->lm, "tutorial", run->corpus.vocab.count);
    transformer_init(&run->lm, &cfg, B, T, (uint64_t)t->seed + 1000u * (uint64_t)run->dist->rank);
    const Device device = strcmp(c->device, "cuda") == 0 ? DEVICE_CUDA : DEVICE_CPU;
    if (device != DEVICE_CPU) transformer_to_device(&run->lm, device);
    transformer_set_precision(&run->lm, c->dtype); /* float32: as it was */
    mixed_precision_init(&run->mp, c->dtype, &run->lm.blocks, &run->lm.params);
    run->model.params = run->lm.params; /* after the move: the buffers the TODOs work on */

    const size_t bytes = (size_t)B * T * sizeof(int);
    run->seq = xmalloc((size_t)B * sizeof *run->seq);
    run->tokens = xmalloc(bytes), run->targets = xmalloc(bytes);
    run->dev_tokens = run->tokens, run->dev_targets = run->targets;
    if (device != DEVICE_CPU) {
        run->dev_tokens = device_alloc(device, bytes);
        run->dev_targets = device_alloc(device, bytes);
    }
    if (strcmp(c->grad_sync, "buckets") == 0) /* the list the backward tells */
        ddp_init(&run->ddp, run->dist, &run->lm.params, c->bucket_mb, !c->no_overlap);
    else
        dist_check_same(run->dist, run->lm.params.total, "the number of parameters");
}

/* Sequences seq[0..B) of a stream into the model's layout (sequence b, position t at
 * row b*T + t) and memory. */
static void load_sequences(Run *run, const TokenStream *s) {
    const int B = run->lm.B, T = run->cfg.lm.bptt;
    for (int b = 0; b < B; b++) {
        const int *ids = s->ids + (int64_t)run->seq[b] * T;
        memcpy(run->tokens + b * T, ids, (size_t)T * sizeof(int));
        memcpy(run->targets + b * T, ids + 1, (size_t)T * sizeof(int));
    }
    if (run->dev_tokens != run->tokens) {
        const size_t bytes = (size_t)B * T * sizeof(int);
        device_copy(run->dev_tokens, run->lm.device, run->tokens, DEVICE_CPU, bytes);
        device_copy(run->dev_targets, run->lm.device, run->targets, DEVICE_CPU, bytes);
    }
}

/* fp16's loss scaling: an overflow on any rank skips the step on all (loss_scale.h) */
static bool any_rank(void *d, bool found) { return dist_sum_double(d, found) > 0.0; }

void lm_weights_changed(Run *run) {
    if (transformer_precision(&run->lm) != DTYPE_F32) params_refresh_working(&run->lm.params);
}

EpochStats lm_train_epoch(Run *run, int epoch) {
    EpochStats s = {0};
    const bool buckets = strcmp(run->cfg.grad_sync, "buckets") == 0;
    const int B = run->lm.B, T = run->cfg.lm.bptt;
    int n;
    lesson_start_epoch(run, epoch);
    while ((n = sampler_next(&run->sampler, run->seq, B)) > 0) {
        if (run->cfg.max_steps && run->steps >= run->cfg.max_steps) break;
        /* the model is built for B sequences: a shorter last batch is dropped (DataLoader's
         * drop_last), on every rank alike, since the sampler gives every rank as many */
        if (n < B) break;
        trace_begin("step", TRACE_STEP); /* with --trace (core/trace.h) */
        trace_begin("load batch", TRACE_DATA);
        load_sequences(run, &run->corpus.train);
        trace_end("load batch");
        params_zero_grad(&run->lm.params);
        const float loss = transformer_forward_backward(&run->lm, run->dev_tokens, run->dev_targets);
        if (buckets) ddp_finish_gradients(&run->ddp); /* started during the backward */
        else lesson_average_gradients(run);
        watch_loss(run, loss); /* the job's loss: NaN or diverging stops every rank (as the CNN's) */
        mixed_precision_unscale(&run->mp); /* fp16: the gradients / S, before clipping */
        if (run->cfg.dtype == DTYPE_F16) loss_scale_agree(&run->mp.scaler, any_rank, run->dist);
        if (run->cfg.clip > 0) clip_grad_norm(&run->lm.params, run->cfg.clip); /* the same on all ranks */
        if (mixed_precision_should_step(&run->mp)) adam_step(&run->opt, &run->model.params);
        mixed_precision_step_done(&run->mp); /* the 16-bit working copy from the new weights */
        trace_end("step");
        s.loss_sum += (double)loss * B * T; /* the mean over this step's tokens */
        s.examples += (double)B * T;        /* examples are tokens here */
        run->steps++;
        progress("  epoch %d: %.0f tokens on this rank, %.0f tokens/s, loss %.4f", epoch,
                 s.examples, progress_rate(s.examples), s.loss_sum / s.examples);
    }
    progress_clear();
    return s;
}

EpochStats lm_evaluate_share(Run *run) {
    /* rank r evaluates test sequences r, r + W, ...: each once in the job; a short last
     * batch is filled with copies of its first sequence that are not counted */
    EpochStats s = {0};
    const int W = run->dist->world_size, B = run->lm.B, T = run->cfg.lm.bptt;
    const int blocks = transformer_block_count(&run->lm.cfg);
    transformer_eval(&run->lm); /* no dropout */
    Tensor logits32 = {0}; /* a 16-bit run's logits read as float32 for count_correct (exact) */
    if (transformer_precision(&run->lm) != DTYPE_F32)
        logits32 = tensor_zeros_on(run->lm.device, 2, B * T, run->lm.cfg.vocab);
    for (int first = run->dist->rank; first < run->test.count; first += W * B) {
        int n = 0;
        for (int i = first; i < run->test.count && n < B; i += W) run->seq[n++] = i;
        for (int b = n; b < B; b++) run->seq[b] = run->seq[0];
        load_sequences(run, &run->corpus.test);
        transformer_forward(&run->lm, 0, blocks, run->dev_tokens, NULL);
        Tensor logits = tensor_rows(transformer_logits(&run->lm), n * T); /* the first n sequences' rows */
        s.loss_sum += (double)run->lm.layers.softmax_cross_entropy_fast(NULL, &logits, run->dev_targets, 1.0f) * n * T;
        if (logits32.raw) {
            Tensor rows = tensor_rows(&logits32, n * T);
            tensor_convert(&rows, &logits);
            logits = rows;
        }
        s.correct += run->lm.layers.count_correct(&logits, run->dev_targets); /* next token right */
        s.examples += (double)n * T;
    }
    tensor_free(&logits32);
    transformer_train(&run->lm);
    return s;
}

void lm_free(Run *run) {
    if (run->dev_tokens != run->tokens) {
        device_free(run->lm.device, run->dev_tokens);
        device_free(run->lm.device, run->dev_targets);
    }
    xfree(run->seq), xfree(run->tokens), xfree(run->targets);
    memset(&run->model.params, 0, sizeof run->model.params); /* lm's: freed with it */
    mixed_precision_free(&run->mp);
    transformer_free(&run->lm);
    text_free(&run->corpus);
}
