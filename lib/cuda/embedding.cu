// Token embedding on the GPU, as lib/layers/embedding.c.
//
// Forward: one thread per output element, out[n, d] = table[tokens[n], d] * scale
// (the CPU's product: exact).
//
// Backward without atomics, in the CPU's order: row tokens[n] of dtable receives the
// rows n of a token in increasing n. A first kernel links the rows of each token into
// a chain (next[n]: the next row with the same token; head[n]: no earlier row has it),
// comparing every row's token with every other's through shared memory: N^2
// comparisons for N = B*T rows, about 0.5 million for the tutorial's batch (20 x 35)
// and 270 million for 16,384 rows, small next to the step's GEMMs. A second kernel
// gives each (chain, column) one thread that adds the chain's rows into dtable in
// order (a vocabulary-parallel slice skips the other slices' words). So every run gives
// the same bits, and the CPU's (up to the fusing of
// acc + scale * dy into one FMA, which either compiler may or may not do).
//
// Tokens live in device memory. Both kernels also note the first row whose token is
// outside 0..V-1, and the host stops with the CPU's message: one small copy back per
// call (which waits for the GPU), the price of a bad token being a message rather than
// an illegal address.
//
// bfloat16 / float16 table and out (elem.cuh): table * scale rounded once; dout of the
// table's dtype, dtable float32 (a parameter gradient).
#include "cuda_check.h"
#include "graph.h"
#include "elem.cuh"
#include "launch.h"
extern "C" {
#include "core/check.h"
#include "cuda/device.h"
#include "kernels.h"
#include "layers/embedding.h"
}

// table holds rows [first, first + V) of a vocabulary of `vocab` words: another
// slice's word gives zeros.
template <class T>
static __global__ void embedding_forward_kernel(T *out, int *bad_row, const int *tokens,
                                                const T *table, int64_t n, int D, int V,
                                                float scale, int first, int vocab) {
    GRID_STRIDE_LOOP(i, n) {
        const int64_t row = i / D;
        const int token = tokens[row];
        if (token < 0 || token >= vocab) {
            atomicMin(bad_row, (int)row);
            continue;
        }
        const int local = token - first;
        elem_store(out, i,
                   local >= 0 && local < V ? elem_load(table, (int64_t)local * D + i % D) * scale
                                           : 0.0f);
    }
}

// One thread per row n (blocks of CUDA_THREADS; not a grid-stride loop: every thread of
// a block helps load each tile of tokens into shared memory).
static __global__ void token_chains_kernel(int *next, unsigned char *head, int *bad_row,
                                           const int *tokens, int N, int V) {
    __shared__ int tile[CUDA_THREADS];
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int token = n < N ? tokens[n] : -1;
    if (n < N && (token < 0 || token >= V)) atomicMin(bad_row, n);
    int after = -1;
    bool first = true;
    for (int base = 0; base < N; base += blockDim.x) {
        __syncthreads(); // the previous tile is read by every thread
        if (base + (int)threadIdx.x < N) tile[threadIdx.x] = tokens[base + threadIdx.x];
        __syncthreads();
        const int len = min((int)blockDim.x, N - base);
        for (int k = 0; k < len; k++)
            if (tile[k] == token) {
                const int m = base + k;
                if (m < n) first = false;
                else if (m > n && after < 0) after = m;
            }
    }
    if (n < N) {
        next[n] = after;
        head[n] = first;
    }
}

// One thread per (row, column); the rows that start a chain add it, in order of n.
template <class T>
static __global__ void embedding_backward_kernel(float *dtable, const T *dout,
                                                 const int *tokens, const int *next,
                                                 const unsigned char *head, int64_t n, int D,
                                                 float scale, int first, int V) {
    GRID_STRIDE_LOOP(i, n) {
        const int row = (int)(i / D);
        const int local = tokens[row] - first;
        if (!head[row] || local < 0 || local >= V) continue; // another slice's word
        const int d = (int)(i % D);
        float *g = dtable + (int64_t)local * D + d;
        float acc = *g;
        for (int m = row; m >= 0; m = next[m]) acc += scale * elem_load(dout, (int64_t)m * D + d);
        *g = acc;
    }
}

// The bad-row flag and the chains, kept between calls (grown when needed).
static int *g_bad_row;
static int *g_next;
static unsigned char *g_head;
static int g_rows;

// Before a kernel on N > 0 tokens: tokens must be device memory; the flag says no bad
// row yet (bytes 0x7f: 0x7f7f7f7f, above any row; set on the stream, so a graph records it);
// room for the chains of N rows when `chains`.
static void tokens_begin(const int *tokens, int N, bool chains) {
    CHECK_DEVICE_POINTER(tokens);
    if (!g_bad_row) g_bad_row = (int *)cuda_malloc(sizeof(int));
    CUDA_CHECK(cudaMemsetAsync(g_bad_row, 0x7f, sizeof(int), cuda_stream()));
    if (!chains || N <= g_rows) return;
    cuda_free(g_next);
    cuda_free(g_head);
    g_next = (int *)cuda_malloc((size_t)N * sizeof(int));
    g_head = (unsigned char *)cuda_malloc((size_t)N);
    g_rows = N;
}

// Stops, as embedding_check_tokens does, when a kernel found a token outside 0..V-1.
struct TokenCheck {
    const int *tokens;
    int N, V;
};

static void check_tokens(const void *ctx) {
    const TokenCheck *c = (const TokenCheck *)ctx;
    int bad_row = c->N;
    cuda_copy_to_host(&bad_row, g_bad_row, sizeof(int)); // waits for the kernel
    if (bad_row >= c->N) return;
    int token = 0;
    cuda_copy_to_host(&token, c->tokens + bad_row, sizeof(int));
    CHECK(false, "embedding: token %d at position %d is outside the vocabulary 0..%d", token,
          bad_row, c->V - 1);
}

// Now, or after each launch of a graph being recorded (which cannot wait for a flag).
static void stop_on_bad_token(const int *tokens, int N, int V) {
    const TokenCheck c = {tokens, N, V};
    cuda_graph_after(check_tokens, &c, sizeof c);
}

extern "C" void cuda_embedding_forward(Tensor *out, const int *tokens, const Tensor *table,
                                       float scale) {
    cuda_embedding_forward_rows(out, tokens, table, scale, 0, table->shape[0]);
}

extern "C" void cuda_embedding_backward(Tensor *dtable, const Tensor *dout, const int *tokens,
                                        float scale) {
    cuda_embedding_backward_rows(dtable, dout, tokens, scale, 0, dtable->shape[0]);
}

/* rows past the vocabulary are padding (a vocabulary split over ranks unevenly) */
static void check_slice(const Tensor *table, int first, int vocab) {
    CHECK(first >= 0 && vocab >= 1, "embedding: rows from %d of a vocabulary of %d", first, vocab);
    (void)table;
}

extern "C" void cuda_embedding_forward_rows(Tensor *out, const int *tokens, const Tensor *table,
                                            float scale, int first, int vocab) {
    const DType dt = ONE_DTYPE(out, table);
    embedding_check_forward(out, table);
    CHECK_ON_GPU(out);
    CHECK_ON_GPU(table);
    check_slice(table, first, vocab);
    const int N = out->shape[0], V = table->shape[0], D = table->shape[1];
    const int64_t n = (int64_t)N * D;
    if (N == 0) return;
    tokens_begin(tokens, N, false);
    if (n > 0) {
        elem_dispatch(dt, [&](auto tag) {
            using T = decltype(tag);
            embedding_forward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
                elems<T>(out), g_bad_row, tokens, elems<T>(table), n, D, V, scale, first, vocab);
            CUDA_CHECK_LAUNCH();
        });
    }
    stop_on_bad_token(tokens, N, vocab);
}

extern "C" void cuda_embedding_backward_rows(Tensor *dtable, const Tensor *dout,
                                             const int *tokens, float scale, int first,
                                             int vocab) {
    CHECK_FLOAT32(dtable);
    const DType dt = dout->dtype;
    embedding_check_backward(dtable, dout);
    CHECK_ON_GPU(dtable);
    CHECK_ON_GPU(dout);
    check_slice(dtable, first, vocab);
    const int N = dout->shape[0], V = dtable->shape[0], D = dtable->shape[1];
    if (N == 0) return;
    tokens_begin(tokens, N, true);
    token_chains_kernel<<<(N + CUDA_THREADS - 1) / CUDA_THREADS, CUDA_THREADS, 0, cuda_stream()>>>(
        g_next, g_head, g_bad_row, tokens, N, vocab);
    CUDA_CHECK_LAUNCH();
    // before any token indexes dtable. A recorded backward leaves it to the forward's
    // check, which runs after the forward's graph on the same tokens, before this one
    // (models/block_graph.h): a second would wait for the GPU after every step
    if (!cuda_graph_recording()) stop_on_bad_token(tokens, N, vocab);
    const int64_t n = (int64_t)N * D;
    if (n == 0) return;
    elem_dispatch(dt, [&](auto tag) {
        using T = decltype(tag);
        embedding_backward_kernel<T><<<cuda_blocks_for(n, CUDA_THREADS), CUDA_THREADS, 0, cuda_stream()>>>(
            dtable->data, elems<T>(dout), tokens, g_next, g_head, n, D, scale, first, V);
        CUDA_CHECK_LAUNCH();
    });
}
