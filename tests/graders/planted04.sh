#!/usr/bin/env bash
# Lesson 04's TODOs against the mistakes participants make, issue 39's trial among them:
# each is planted in a temporary copy of the solution, the grader is linked against it,
# and the TODO's check must FAIL with the hint that names the mistake. Among them the
# mistakes that only show past 9 positions (a bound on the row, an array of 10 or 16
# floats), which the checks' random shapes of 1 to 9 positions let through, and those
# whose hint blamed a neighbour (dropout for a stale sequence length, the out formula
# for a hard-coded eps, train_stop_if_diverged for weights that never moved or for a
# refused library twin). Only the planted TODO's own check runs (CHECK_ONLY); the stubs
# failing every check are tests/check-stubs.sh's. The machinery: planted_lib.sh. Needs
# `make all` first. Last line: "N passed, M failed".
#   tests/graders/planted04.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/graders/planted_lib.sh
. tests/graders/planted_lib.sh
planted_setup "${1:-build}" 04-transformer tests/graders/grade04.c

# TODO 4.1 (data.c): the hint names the stub's own variables (b->data, not d->data)
PLANTED_CHECKS="get_batch"
plant "the target the input's row" data.c 4.1 "target = row i + 1 (b->data + (i + 1) * b->cols)" \
    "batch.target = b->data + (i + 1) * b->cols;|||batch.target = b->data + i * b->cols;"

# TODO 4.2 (positional.c): the frequencies
PLANTED_CHECKS="positional table"
plant "-(2i)/D in integers" positional.c 4.2 "in integers is 0" \
    "exp(-(double)(2 * i) * log(10000.0) / D)|||exp(-(2 * i) / D * log(10000.0))"
plant "the exponent's sign flipped" positional.c 4.2 "the frequencies rise with i" \
    "exp(-(double)(2 * i) * log(10000.0) / D)|||exp((double)(2 * i) * log(10000.0) / D)"

# TODO 4.3 (attention.c): mistakes that set in past 9 positions (issue 39: all passed)
PLANTED_CHECKS="attention forward matches"
plant "rows from 9 on made uniform" attention.c 4.3 "wrong from row 9 on (T = 35 positions" \
    "        for (int j = 0; j <= i; j++) row[j] /= sum;|||        for (int j = 0; j <= i; j++) row[j] /= sum;
        if (i >= 9) for (int j = 0; j <= i; j++) row[j] = 1.0f / (i + 1);"
plant "the scores in a float sc[16], -inf past it" attention.c 4.3 "wrong from row 16 on" \
    "        float max = -INFINITY;|||        float max = -INFINITY, sc[16];" \
    "            row[j] = s * scale;
            max = row[j] > max ? row[j] : max;
        }|||            if (j < 16) sc[j] = s * scale;
            max = j < 16 && sc[j] > max ? sc[j] : max;
        }
        for (int j = 0; j <= i; j++) row[j] = j < 16 ? sc[j] : -INFINITY;"
plant "the exponentials in a float ex[10]" attention.c 4.3 "from row 10 on" \
    "        float sum = 0.0f;
        for (int j = 0; j <= i; j++) { /* exp(s - max) <= 1: never overflows */
            row[j] = expf(row[j] - max);
            sum += row[j];
        }
        for (int j = 0; j <= i; j++) row[j] /= sum;|||        float sum = 0.0f, ex[10];
        for (int j = 0; j <= i; j++) { /* exp(s - max) <= 1: never overflows */
            ex[j < 10 ? j : 9] = expf(row[j] - max);
            sum += ex[j < 10 ? j : 9];
        }
        for (int j = 0; j <= i; j++) row[j] = ex[j < 10 ? j : 9] / sum;"
# the same written past its end, as the trial had it (undefined behaviour: wrong numbers or
# a crash; either way the check fails, and names the case of 35 positions first)
plant "ex[10] written past its end" attention.c 4.3 "case: 1 sequences, 2 heads, 35 positions" \
    "        float sum = 0.0f;
        for (int j = 0; j <= i; j++) { /* exp(s - max) <= 1: never overflows */
            row[j] = expf(row[j] - max);
            sum += row[j];
        }
        for (int j = 0; j <= i; j++) row[j] /= sum;|||        float sum = 0.0f, ex[10];
        for (int j = 0; j <= i; j++) { /* exp(s - max) <= 1: never overflows */
            ex[j] = expf(row[j] - max);
            sum += ex[j];
        }
        for (int j = 0; j <= i; j++) row[j] = ex[j] / sum;"
# and the usual ones (the first two the sheet's example output)
plant "divided by sqrt(D)" attention.c 4.3 "divided by sqrt(D), the model width" \
    "    const float scale = 1.0f / sqrtf((float)dh);
    for (int i = 0; i < T; i++) {
        float *row|||    const float scale = 1.0f / sqrtf((float)(ld / 3));
    for (int i = 0; i < T; i++) {
        float *row"
plant "rows of dh, not of ld" attention.c 4.3 "read as rows of dh floats" \
    "const float *qi = q + (size_t)i * ld;|||const float *qi = q + (size_t)i * dh;" \
    "const float *kj = k + (size_t)j * ld;|||const float *kj = k + (size_t)j * dh;"
plant "the keys' rows of dh" attention.c 4.3 "the keys were read as rows of dh floats" \
    "const float *kj = k + (size_t)j * ld;|||const float *kj = k + (size_t)j * dh;"
plant "the masked entries in the sum" attention.c 4.3 "counted in the sum of exponentials" \
    "        float sum = 0.0f;
|||        float sum = (float)(T - 1 - i) * expf(-max); /* the future's scores as 0 */
"

# TODO 4.4 (attention.c): the backward
PLANTED_CHECKS="attention backward matches"
plant "the backward's rows stop at 9" attention.c 4.4 "wrong from position 9 on (T = 35 positions)" \
    "    for (int i = 0; i < T; i++) {
        const float *pi = p + (size_t)i * T;|||    for (int i = 0; i < T && i < 9; i++) {
        const float *pi = p + (size_t)i * T;"
plant "the sign flipped" attention.c 4.4 "have the wrong sign" \
    "const float g = di[j] * scale;|||const float g = -di[j] * scale;"
plant "times sqrt(dh)" attention.c 4.4 "multiplied by sqrt(dh)" \
    "const float g = di[j] * scale;|||const float g = di[j] * sqrtf((float)dh);"
plant "the dot product left out" attention.c 4.4 "lacks the row's dot product" \
    "di[j] = pi[j] * (di[j] - dot);|||di[j] = pi[j] * di[j];"
# the same bound inside the model (the program's 35 positions: a loss of 10.2819 for 10.3195)
PLANTED_CHECKS="your layers inside the model"
plant "the backward's rows stop at 9, in the model" attention.c 4.2-4.6 "does not (at 7 positions it matched): your backward (4.4, 4.6) goes wrong at this length" \
    "    for (int i = 0; i < T; i++) {
        const float *pi = p + (size_t)i * T;|||    for (int i = 0; i < T && i < 9; i++) {
        const float *pi = p + (size_t)i * T;"
plant "the forward's rows from 9 on uniform, in the model" attention.c 4.2-4.6 "at T = 37 positions" \
    "        for (int j = 0; j <= i; j++) row[j] /= sum;|||        for (int j = 0; j <= i; j++) row[j] /= sum;
        if (i >= 9) for (int j = 0; j <= i; j++) row[j] = 1.0f / (i + 1);"

# TODO 4.5 (layernorm.c)
PLANTED_CHECKS="layer norm forward"
plant_not "eps hard-coded to 1e-6" layernorm.c 4.5 "eps is the function's argument (here 0.5)" "out = (x - mean)" \
    "sqrt(sq / D + eps)|||sqrt(sq / D + 1e-6)"
plant "gamma forgotten" layernorm.c 4.5 "gamma is missing" \
    "* r * gamma->data[j] + beta->data[j]|||* r + beta->data[j]"

# TODO 4.6 (layernorm.c)
PLANTED_CHECKS="layer norm backward matches"
plant "din without the means" layernorm.c 4.6 "din lacks both mean terms" \
    "dx[j] += r * (dxhat - m1 - xhat * m2);|||dx[j] += r * dxhat + 0 * (m1 + xhat * m2);"
plant "din without the variance's term" layernorm.c 4.6 "din lacks the term - xhat_j * mean(dxhat * xhat)" \
    "dx[j] += r * (dxhat - m1 - xhat * m2);|||dx[j] += r * (dxhat - m1) + 0 * xhat * m2;"
plant "dxhat without gamma" layernorm.c 4.6 "dxhat lacks gamma" \
    "const float dxhat = g[j] * gamma->data[j], xhat = (x[j] - mu) * r;
            m1 += dxhat;|||const float dxhat = g[j], xhat = (x[j] - mu) * r;
            m1 += dxhat;" \
    "const float dxhat = g[j] * gamma->data[j], xhat = (x[j] - mu) * r;
            dx[j]|||const float dxhat = g[j], xhat = (x[j] - mu) * r;
            dx[j]"
plant "dgamma without xhat" layernorm.c 4.6 "dgamma lacks the factor xhat" \
    "dg += g * (in->data[(size_t)n * D + j] - mean->data[n]) * rstd->data[n];|||dg += g;"

# TODO 4.7 (train.c): the loop
PLANTED_CHECKS="train_epoch: the reference loop"
plant "zero_grad after the backward" train.c 4.7 "the weights did not change in 2 epochs" \
    "        params_zero_grad(&m->params);             /* the backward adds (+=) into the gradients */
|||" \
    "        const float norm = s->clip > 0|||        params_zero_grad(&m->params);
        const float norm = s->clip > 0"
plant "no clipping" train.c 4.7 "the gradients were not clipped" \
    "s->clip > 0 ? clip_grad_norm(&m->params, s->clip) : grad_norm(&m->params)|||grad_norm(&m->params)"
plant "no transformer_train" train.c 4.7 "the epochs trained with dropout off" \
    "    transformer_train(m); /* dropout on */
|||"
plant "the short last batch skipped" train.c 4.7 "the short last batch (2 rows of 5) was skipped" \
    "        TextBatch b = lesson_get_batch(train, i, s->bptt);
|||        TextBatch b = lesson_get_batch(train, i, s->bptt);
        if (b.seq_len < s->bptt) break;
"
PLANTED_CHECKS="max_steps stops"
plant "max_steps off by one" train.c 4.7 "one step too many" \
    "st.steps >= s->max_steps) break;|||st.steps > s->max_steps) break;"
PLANTED_CHECKS="a NaN loss stops"
plant_not "zero_grad after the backward, at lr 1e30" train.c 4.7 "the weights never moved" "hint: after the forward and backward, train_stop_if_diverged" \
    "        params_zero_grad(&m->params);             /* the backward adds (+=) into the gradients */
|||" \
    "        const float norm = s->clip > 0|||        params_zero_grad(&m->params);
        const float norm = s->clip > 0"
plant_not "the library's text_get_batch in the loop" train.c 4.7 "calls the library's text_get_batch" "train_stop_if_diverged" \
    "TextBatch b = lesson_get_batch(train, i, s->bptt);|||TextBatch b = text_get_batch(train, i, s->bptt);"
PLANTED_CHECKS="names the step from 1"
plant "the watch's steps from 0" train.c 4.7 "counted from 1: st.steps + 1" \
    "loss_watch_step(s->watch, loss, st.steps + 1, lr);|||loss_watch_step(s->watch, loss, st.steps, lr);"

# TODO 4.8 (train.c): the evaluation
PLANTED_CHECKS="evaluate: loss and perplexity"
plant_not "no transformer_set_seq_len" train.c 4.8 "transformer_set_seq_len(m, b.seq_len) before each forward" "is dropout off" \
    "        transformer_set_seq_len(m, b.seq_len);
        transformer_forward(m, 0, blocks, tb->tokens, NULL);|||        transformer_forward(m, 0, blocks, tb->tokens, NULL);"
plant_not "the loss before the forward" train.c 4.8 "taken before its forward" "is dropout off" \
    "        transformer_forward(m, 0, blocks, tb->tokens, NULL); /* no backward: nothing to learn */
        const int64_t n = (int64_t)b.seq_len * b.cols;
        loss_sum += (double)transformer_loss(m, tb->targets) * (double)n;|||        const int64_t n = (int64_t)b.seq_len * b.cols;
        loss_sum += (double)transformer_loss(m, tb->targets) * (double)n;
        transformer_forward(m, 0, blocks, tb->tokens, NULL);"
plant "dropout left on" train.c 4.8 "the loss with dropout on" \
    "    transformer_eval(m); /* dropout off: evaluation uses the whole model */
|||"

# issue 39's second trial: the escape and the hints that blamed a neighbour
PLANTED_CHECKS="attention backward matches"
plant "ds left unzeroed above the diagonal" attention.c 4.4 "ds[i][j] = 0 for j > i on return" \
    "        for (int j = i + 1; j < T; j++) di[j] = 0.0f;
|||"
PLANTED_CHECKS="attention forward matches"
plant_not "V read from K's columns (given code)" attention.c 4.3 "built from the keys' columns" "sqrt(dh)" \
    "const float *k = q + s.D, *v = q + 2 * s.D;|||const float *k = q + s.D, *v = q + s.D;"
plant "head h at column h, not h * dh (given code)" attention.c 4.3 "head h's columns were taken at h, not h * dh" \
    "const float *q = qkv->data + (size_t)b * T * s.ld + (size_t)h * s.dh;|||const float *q = qkv->data + (size_t)b * T * s.ld + (size_t)h;"
plant "q and k swapped" attention.c 4.3 "the queries and the keys are swapped" \
    "lesson_causal_softmax(p, q, k, T, s.dh, s.ld); /* TODO 4.3 */|||lesson_causal_softmax(p, k, q, T, s.dh, s.ld); /* TODO 4.3 */"
plant "the queries' stride ld / 3" attention.c 4.3 "the queries were read with a row stride of ld / 3" \
    "const float *qi = q + (size_t)i * ld;|||const float *qi = q + (size_t)i * (ld / 3);"
PLANTED_CHECKS="attention forward with dropout"
plant_not "dropout scaled by p, not 1/(1-p) (given code)" attention.c 4.3 "scaled by the dropout rate p" "p[i][j] = exp" \
    "const float keep_scale = dropout_p < 1.0f ? 1.0f / (1.0f - dropout_p) : 0.0f;|||const float keep_scale = dropout_p;"
PLANTED_CHECKS="the max trick"
plant_not "head h at column h, in the max-trick check" attention.c 4.3 "fails at scores of order 1 too" "subtract the" \
    "const float *q = qkv->data + (size_t)b * T * s.ld + (size_t)h * s.dh;|||const float *q = qkv->data + (size_t)b * T * s.ld + (size_t)h;"
plant_not "the future not zeroed, in the max-trick check" attention.c 4.3 "fails at scores of order 1 too" "sqrt(dh)" \
    "        for (int j = i + 1; j < T; j++) row[j] = 0.0f; /* the future gets no weight */
|||"
PLANTED_CHECKS="layer norm forward"
plant_not "one-pass float variance" layernorm.c 4.5 "one-pass" "1 / sqrt(var +" \
    "        double sum = 0.0, sq = 0.0; /* double: a habit (float passes too; see the sheet) */
        for (int j = 0; j < D; j++) sum += x[j];
        const double mu = sum / D;
        for (int j = 0; j < D; j++) sq += (x[j] - mu) * (x[j] - mu);
        const float r = (float)(1.0 / sqrt(sq / D + eps));|||        float sum = 0.0f, sq = 0.0f;
        for (int j = 0; j < D; j++) {
            sum += x[j];
            sq += x[j] * x[j];
        }
        const float mu = sum / D;
        const float r = 1.0f / sqrtf(sq / D - mu * mu + eps);"
PLANTED_CHECKS="a NaN loss stops"
plant_not "clip_grad_norm with 0, not s->clip" train.c 4.7 "pass the clip value, clip_grad_norm(&m->params, s->clip)" "train_stop_if_diverged" \
    "s->clip > 0 ? clip_grad_norm(&m->params, s->clip) : grad_norm(&m->params)|||clip_grad_norm(&m->params, 0)"
PLANTED_CHECKS="train_epoch: the reference loop"
plant "StepLR set after the epoch" train.c 4.7 "the rate was set after the epoch" \
    "    optimizer_set_lr(opt, lr);
    transformer_train(m);|||    transformer_train(m);" \
    "    progress_clear();
|||    progress_clear();
    optimizer_set_lr(opt, step_lr(opt->base_lr, s->gamma, 1, epoch));
"
plant "grad_norm per token" train.c 4.7 "divided by st.tokens" \
    "st.grad_norm = st.steps ? norm_sum / (double)st.steps : 0.0;|||st.grad_norm = st.tokens ? norm_sum / (double)st.tokens : 0.0;"
plant "the norm after clipping" train.c 4.7 "the gradient norm was taken after clipping" \
    "const float norm = s->clip > 0 ? clip_grad_norm(&m->params, s->clip) : grad_norm(&m->params);|||if (s->clip > 0) clip_grad_norm(&m->params, s->clip);
        const float norm = grad_norm(&m->params);"

# TODO 4.7 alone back to its stub: each of its checks, the new ones too, says so
PLANTED_CHECKS="train_epoch,max_steps,NaN loss,watch"
stub 4.7 train.c 1 -

planted_end
