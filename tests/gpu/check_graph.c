/* make check-gpu's CUDA graph part (check_graph.h): a transformer's training steps
 * replayed from CUDA graphs (models/block_graph.h) against the same steps launched one
 * kernel at a time, bit for bit; and what a recording refuses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/check.h"
#include "cuda/device.h"
#include "cuda/graph.h"
#include "framework/check.h"
#include "gpu/check_gpu16.h"
#include "gpu/check_graph.h"
#include "gpu/gpu_check.h"
#include "models/transformer.h"
#include "train/optim.h"

/* The lengths of the 7 steps, and how many of them the graphs should record, replay and
 * leave to the kernels, and how often drop (stale), in the two orders checked. */
typedef struct {
    const char *name;
    int T[7];
    int64_t recorded, replayed, eager, dropped;
} Order;
enum { B = 3, T = 13, STEPS = 7 };
/* An epoch's shorter last batch between full ones: no graph for it, and the full steps
 * after replay again, with the host's shapes made right again. */
static const Order SHORT_BETWEEN = {"a shorter batch between", {T, T, T, T, 9, T, T}, 1, 4, 2, 0};
/* Short steps recorded, then a longer one, which regrows the layers' scratch (frees and
 * allocates): the short steps' graphs name freed memory, are dropped and recorded anew.
 * The scratch is the process's: the longer step must be longer than any before it in
 * this program (check it last). */
static const Order LONGER_BETWEEN = {"a longer batch between", {9, 9, 2 * T, 9, 9, 9, 9}, 2, 2, 3, 1};

/* Steps of the tiny transformer with dropout, SGD and the working copy refreshed: one
 * model launching kernels, one replaying graphs, fed from one token buffer each (a new
 * batch copied in each step, as lesson 04 does), in the order's lengths. Every loss,
 * every parameter and the Rngs' states must agree, and the steps' kinds be the order's. */
static int compare_graphs(DType dtype, bool fused, uint64_t seed, const Order *order) {
    TransformerConfig c = {.vocab = 41, .d_model = 24, .heads = 3, .d_ff = 40, .layers = 2,
                           .max_len = 64, .dropout = 0.2f, .fused_attention = fused};
    int t_max = 1;
    for (int s = 0; s < STEPS; s++) t_max = order->T[s] > t_max ? order->T[s] : t_max;
    Transformer plain, graphed;
    transformer_init(&plain, &c, B, t_max, seed);
    transformer_init(&graphed, &c, B, t_max, seed);
    Transformer *m[2] = {&plain, &graphed};
    Sgd opt[2];
    int *tokens[2], *targets[2];
    for (int k = 0; k < 2; k++) {
        transformer_to_device(m[k], DEVICE_CUDA);
        transformer_set_precision(m[k], dtype);
        sgd_init(&opt[k], &m[k]->params, 0.5f, 0.0f, 0.0f);
        tokens[k] = cuda_malloc((size_t)(B * t_max) * sizeof(int));
        targets[k] = cuda_malloc((size_t)(B * t_max) * sizeof(int));
    }
    transformer_use_cuda_graphs(&graphed, true);
    bool ok = true;
    for (int s = 0; ok && s < STEPS; s++) {
        const int t = order->T[s];
        int *tk = random_tokens(B * t, c.vocab, seed + 10 + (uint64_t)s);
        int *tg = random_tokens(B * t, c.vocab, seed + 50 + (uint64_t)s);
        float loss[2];
        for (int k = 0; k < 2; k++) {
            cuda_copy_to_device(tokens[k], tk, (size_t)(B * t) * sizeof(int));
            cuda_copy_to_device(targets[k], tg, (size_t)(B * t) * sizeof(int));
            transformer_set_seq_len(m[k], t);
            params_zero_grad(&m[k]->params);
            loss[k] = transformer_forward_backward(m[k], tokens[k], targets[k]);
            sgd_step(&opt[k], &m[k]->params);
            if (dtype != DTYPE_F32) params_refresh_working(&m[k]->params);
        }
        ok = expect_true(memcmp(&loss[0], &loss[1], sizeof(float)) == 0,
                         "%s, step %d: loss %.9g launched, %.9g replayed", dtype_name(dtype),
                         s + 1, (double)loss[0], (double)loss[1]);
        xfree(tk), xfree(tg);
    }
    ok = ok && gpu_same_bits("parameters after the steps, replayed against launched", &plain.params.values, &graphed.params.values);
    ok = ok && gpu_same_bits("the last step's gradients, replayed against launched", &plain.params.grads, &graphed.params.grads);
    for (int b = 0; ok && b < plain.blocks.count; b++)
        ok = expect_true(memcmp(&plain.blocks.items[b].rng, &graphed.blocks.items[b].rng,
                                sizeof(Rng)) == 0, "block %d's Rng: another state after the "
                         "replays (keys not drawn as without graphs)", b);
    const BlockGraphs *g = &graphed.graphs;
    ok = ok && expect_true(g->recorded == order->recorded && g->replayed == order->replayed &&
                           g->eager == order->eager && g->dropped == order->dropped,
                           "%s, %s: %lld steps recorded, %lld replayed, %lld without graphs, "
                           "graphs dropped %lld times; expected %lld, %lld, %lld, %lld",
                           dtype_name(dtype), order->name, (long long)g->recorded,
                           (long long)g->replayed, (long long)g->eager, (long long)g->dropped,
                           (long long)order->recorded, (long long)order->replayed,
                           (long long)order->eager, (long long)order->dropped);
    if (ok)
        check_show("%s%s, %s: %lld recorded, %lld replayed, %lld without graphs, %lld dropped: "
                   "losses, parameters, gradients and Rngs the same bits", dtype_name(dtype),
                   fused ? ", fused attention" : "", order->name, (long long)g->recorded,
                   (long long)g->replayed, (long long)g->eager, (long long)g->dropped);
    for (int k = 0; k < 2; k++) {
        sgd_free(&opt[k]);
        cuda_free(tokens[k]), cuda_free(targets[k]);
        transformer_free(m[k]);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_graph_steps(void) {
    REQUIRE_GPU();
    if (compare_graphs(DTYPE_F32, false, 71, &SHORT_BETWEEN) != CHECK_PASS) return CHECK_FAIL;
    if (compare_graphs(DTYPE_F32, true, 72, &SHORT_BETWEEN) != CHECK_PASS) return CHECK_FAIL;
    if (compare_graphs(DTYPE_BF16, true, 73, &SHORT_BETWEEN) != CHECK_PASS) return CHECK_FAIL;
    return compare_graphs(DTYPE_F32, true, 74, &LONGER_BETWEEN);
}

/* A copy to the host inside a recording (a layer reading a loss back) stops the
 * program, naming the recording: on a GPU CUDA's error, on the emulator its own. */
static void host_read_body(void *arg) {
    (void)arg;
    char why[512];
    if (!cuda_init(why, sizeof why)) {
        printf(GPU_SKIP_PREFIX "%s\n", why);
        exit(CHECK_SKIP);
    }
    float *x = cuda_malloc(sizeof(float)), h = 0.0f;
    cuda_graph_begin();
    cuda_copy_to_host(&h, x, sizeof h);
    cuda_graph_end();
}

/* CUDA does not survive fork: the child starts it (and skips without a GPU), never this
 * process, or the child's first allocation fails with an initialisation error. */
static int check_graph_refuses(void) {
    ChildResult r;
    run_child(host_read_body, NULL, &r);
    if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == CHECK_SKIP) return CHECK_SKIP;
    return expect_exit("a copy to the host while a graph records", &r, 2, "graph",
                       (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

void check_graph(void) {
    check_run(NULL, "CUDA graphs: 7 transformer steps (float32, fused attention, bf16; dropout; a shorter batch between, a longer one that regrows scratch) replayed = launched kernel by kernel, bit for bit", GPU_CHECK(check_graph_steps), 180);
    check_run(NULL, "CUDA graphs: a copy to the host while recording stops with a message", GPU_CHECK(check_graph_refuses), 60);
}
