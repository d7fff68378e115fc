// Fused causal attention on the GPU, as lib/layers/flash_attention.c: no [T, T] buffer,
// three kernels, each launched on the default stream (in order with the other layers).
//
// Shapes of work. A block is 4 warps (128 threads); warp w owns R consecutive rows of
// the block's tile (queries in the forward and dQ, keys in dK/dV), so a tile has 4R
// rows; the other side (keys, or queries) streams through shared memory 32 at a time,
// one per lane. Head columns stream in chunks of 32 (one per lane): each chunk is a
// [32][33] float array (padded: lane l reading row l, and lane l reading column l, hit
// 32 different banks), so shared memory stays under the 48 KiB of a static allocation
// for heads up to 256 wide. The rows a block owns stay in shared memory whole (read by
// all lanes of a warp at once: broadcasts, as float4), the accumulators per lane in
// registers: lane l holds columns l, l + 32, ... of each of its warp's R rows, so a head
// of DH columns (32, 64, 128 or 256, the next up from dh; the rest zero) costs R DH / 32
// registers per accumulator. R = 8 (forward, dQ; 4 for DH = 256) or 8, 4, 2 (dK/dV, for
// DH up to 64, 128, 256): 12 to 45 KiB of shared memory per block. ptxas (sm_90) gives
// 138 to 252 registers a thread and no spills: 2 to 3 blocks, 8 to 12 warps, per SM, a
// low occupancy that a GPU run should weigh (__launch_bounds__ would trade it for spills).
//
// Forward (flash_forward_kernel), block = 4R queries of one (sequence, head), heaviest
// (latest) tiles first: Q tile into shared memory, then for each key tile up to the
// diagonal: s = Q K^T over the column chunks of K, lane j holding key j's score of each
// row; the row's maximum over the tile by a warp butterfly, the running maximum m,
// the factor a = exp(m_old - m), p = exp(s - m), the lane's share of l rescaled and
// added to, the output rescaled, then o += p V over the chunks of V (p, zero where the
// mask drops the weight, through shared memory, read as float4 broadcasts). At the end
// l is summed over the lanes, ctx = o keep_scale / l, lse = m + log l.
//
// Backward, two kernels rather than one with atomics: dK/dV then dQ. Each recomputes
// the scores and dp = dctx V^T of its pairs (the work of the forward twice more), but
// every gradient entry is owned by one thread that sums in a fixed order and adds it
// to dqkv once: no atomics (the same bits every run, like every kernel here), no float
// buffer for dQ in a 16-bit run (dqkv is rounded once per entry, as on the CPU), no
// workspace at all (delta = dctx . ctx is recomputed per row in both).
//   flash_dkdv_kernel, block = 4R keys (its K and V rows in shared memory), lane = query
//     of a 32-query tile, tiles from the diagonal to the end: per column chunk of Q,
//     dctx and ctx, s, dp and delta; then p = exp(s - lse), w = p mask,
//     ds = p (mask dp - delta) to shared memory; then, lane = column, dV += w^T dctx and
//     dK += ds^T Q over the chunks again (the first phase's chunk reused when the head
//     fits in one).
//   flash_dq_kernel, block = 4R queries (Q and dctx rows in shared memory, delta and lse
//     per row), lane = key of a 32-key tile up to the diagonal: s, dp, ds as above;
//     then, lane = column, dQ += ds K over the chunks of K.
//
// What a tensor-core (WMMA / mma.sync) version would change: Q K^T, P V, dctx V^T,
// ds^T Q, w^T dctx and ds K become 16 x 8 x 16 bf16 fragments with float32
// accumulators (the issue's 989 TFLOP/s against float32's 67), so P and ds are rounded
// to bfloat16 before their products (the CPU twin would round there too, and the
// tolerances of tests/unit/test_layers_flash.c grow by the weights' 2^-8); tiles become
// 64 x 64 or bigger, held in shared memory as bf16 with a swizzled layout rather than
// padding, loaded asynchronously (cp.async / TMA) into double buffers; a warp's Q rows
// live in registers as fragments instead of being broadcast from shared memory per
// product; exp2 with log2(e) folded into the scale instead of expf. The recomputation
// split (dK/dV, then dQ) would stay, or dQ move to atomics into a float32 buffer as
// flash-attention 2 does (faster, but no longer the same bits every run).
#include <math.h>

#include "cuda_check.h"
#include "graph.h"
#include "elem.cuh"
#include "reduce.cuh"
extern "C" {
#include "core/check.h"
#include "core/dtype.h"
#include "kernels.h"
#include "layers/dropout.h"
#include "layers/flash_attention.h"
}

#ifdef __CUDACC__
#define FLASH_UNROLL _Pragma("unroll")
#else
#define FLASH_UNROLL
#endif

enum { WARPS = 4, THREADS = 32 * WARPS, CHUNK = 32 };

// Elements of qkv, ctx, dctx, dqkv: each kernel is a template on their storage E (float,
// Bf16 or Fp16; elem.cuh): elem_load reads a value exactly as float32, elem_store rounds
// once, elem_add adds to the old value and rounds once (the CPU's rounding points).

struct FlashArgs {
    int T, H, D, dh, chunks; // chunks: column chunks of a head, ceil(dh / 32)
    float scale;             // 1 / sqrt(dh)
    FlashDropout drop;
};

// The multiplier of weight (query i, key j) of head bh = b H + h: 0 or keep_scale (1
// without dropout), the index of attention.c's weights [B, H, T, T].
static __device__ float mask_at(const FlashArgs &a, int bh, int i, int j) {
    if (!a.drop.active) return 1.0f;
    const uint64_t k = ((uint64_t)bh * a.T + (uint64_t)i) * a.T + (uint64_t)j;
    return dropout_keeps(a.drop.key, dropout_index(a.drop.window, k), a.drop.threshold)
               ? a.drop.keep_scale : 0.0f;
}

// dst[r][e] = element (row0 + r, col0 + e) of a head's q, k, v, ctx or dctx (src: its
// row 0, column 0; row stride ld), 0 outside the sequence and the head: a [32][33] chunk.
template <class E>
static __device__ void load_chunk(float (*dst)[CHUNK + 1], const E *src, int row0,
                                  int col0, int64_t ld, const FlashArgs &a) {
    for (int x = threadIdx.x; x < CHUNK * CHUNK; x += THREADS) {
        const int r = x / CHUNK, e = x % CHUNK, i = row0 + r, col = col0 + e;
        dst[r][e] = i < a.T && col < a.dh ? elem_load(src, (int64_t)i * ld + col) : 0.0f;
    }
}

// dst[r][e] for r < rows, e < DH: element (row0 + r, e) of src (row stride ld), 0 outside.
template <class E, int DH>
static __device__ void load_rows(float (*dst)[DH], int rows, const E *src, int row0,
                                 int64_t ld, const FlashArgs &a) {
    for (int x = threadIdx.x; x < rows * DH; x += THREADS) {
        const int r = x / DH, e = x % DH, i = row0 + r;
        dst[r][e] = i < a.T && e < a.dh ? elem_load(src, (int64_t)i * ld + e) : 0.0f;
    }
}

static __device__ inline float4 at4(const float *p) { return *reinterpret_cast<const float4 *>(p); }

// acc += x . (y0, y1, y2, y3), in that order
static __device__ inline float dot4(float acc, float4 x, float y0, float y1, float y2, float y3) {
    return fmaf(x.w, y3, fmaf(x.z, y2, fmaf(x.y, y1, fmaf(x.x, y0, acc))));
}

// ---------------------------------------------------------------- forward

template <class E, int DH, int R>
static __global__ void flash_forward_kernel(E *ctx, float *lse,
                                            const E *qkv, FlashArgs a) {
    constexpr int BQ = WARPS * R, C = DH / CHUNK;
    if (a.drop.key_at) a.drop.key = *a.drop.key_at; // a replayed graph's key (cuda/graph.h)
    __shared__ __align__(16) float Qs[BQ][DH];
    __shared__ float Kc[CHUNK][CHUNK + 1]; // a chunk of K, then of V
    __shared__ __align__(16) float Ps[BQ][CHUNK];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, bh = blockIdx.y;
    const int b = bh / a.H, h = bh % a.H;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ; // the longest rows first
    const int64_t ld = 3 * (int64_t)a.D;
    const E *q = qkv + (int64_t)b * a.T * ld + h * a.dh; // (b, 0, head h)
    load_rows<E, DH>(Qs, BQ, q, q0, ld, a);
    float o[R][C], m[R], l[R]; // l: this lane's share of the row's sum
    FLASH_UNROLL
    for (int r = 0; r < R; r++) {
        m[r] = -INFINITY, l[r] = 0.0f;
        FLASH_UNROLL
        for (int c = 0; c < C; c++) o[r][c] = 0.0f;
    }
    const int tiles = (min(q0 + BQ, a.T) - 1) / CHUNK + 1; // keys up to the block's last row
    for (int t = 0; t < tiles; t++) {
        const int k0 = t * CHUNK, j = k0 + lane;
        float s[R];
        FLASH_UNROLL
        for (int r = 0; r < R; r++) s[r] = 0.0f;
        for (int c = 0; c < a.chunks; c++) { // s = Q K^T, lane j: key k0 + j
            __syncthreads(); // Kc and Ps are free
            load_chunk<E>(Kc, q + a.D, k0, c * CHUNK, ld, a);
            __syncthreads();
            for (int e = 0; e < CHUNK; e += 4) {
                const float k0_ = Kc[lane][e], k1 = Kc[lane][e + 1], k2 = Kc[lane][e + 2],
                            k3 = Kc[lane][e + 3];
                FLASH_UNROLL
                for (int r = 0; r < R; r++)
                    s[r] = dot4(s[r], at4(&Qs[warp * R + r][c * CHUNK + e]), k0_, k1, k2, k3);
            }
        }
        FLASH_UNROLL
        for (int r = 0; r < R; r++) { // online softmax of row i over this tile
            const int i = q0 + warp * R + r;
            const bool valid = j <= i && i < a.T;
            const float sc = valid ? s[r] * a.scale : -INFINITY;
            const float mn = fmaxf(m[r], warp_max(sc));
            const float alpha = mn == m[r] ? 1.0f : expf(m[r] - mn); // 0 on the first tile
            const float p = valid ? expf(sc - mn) : 0.0f;
            l[r] = l[r] * alpha + p;
            FLASH_UNROLL
            for (int c = 0; c < C; c++) o[r][c] *= alpha;
            Ps[warp * R + r][lane] = valid && mask_at(a, bh, i, j) != 0.0f ? p : 0.0f;
            m[r] = mn;
        }
        FLASH_UNROLL
        for (int c = 0; c < C; c++) { // o += P V, lane: column c * 32 + lane
            if (c >= a.chunks) break;
            __syncthreads();
            load_chunk<E>(Kc, q + 2 * a.D, k0, c * CHUNK, ld, a);
            __syncthreads();
            for (int jj = 0; jj < CHUNK; jj += 4) {
                const float v0 = Kc[jj][lane], v1 = Kc[jj + 1][lane], v2 = Kc[jj + 2][lane],
                            v3 = Kc[jj + 3][lane];
                FLASH_UNROLL
                for (int r = 0; r < R; r++)
                    o[r][c] = dot4(o[r][c], at4(&Ps[warp * R + r][jj]), v0, v1, v2, v3);
            }
        }
    }
    FLASH_UNROLL
    for (int r = 0; r < R; r++) {
        const int i = q0 + warp * R + r;
        const float sum = warp_sum(l[r]);
        if (i >= a.T) continue;
        const float inv = a.drop.keep_scale / sum;
        const int64_t row = ((int64_t)b * a.T + i) * a.D + h * a.dh;
        FLASH_UNROLL
        for (int c = 0; c < C; c++)
            if (c * CHUNK + lane < a.dh) elem_store(ctx, row + c * CHUNK + lane, o[r][c] * inv);
        if (lane == 0) lse[(int64_t)bh * a.T + i] = m[r] + logf(sum);
    }
}

// ---------------------------------------------------------------- backward: dK, dV

template <class E, int DH, int R>
static __global__ void flash_dkdv_kernel(E *dqkv, const E *qkv,
                                         const E *ctx, const E *dctx,
                                         const float *lse, FlashArgs a) {
    constexpr int BK = WARPS * R, C = DH / CHUNK;
    if (a.drop.key_at) a.drop.key = *a.drop.key_at; // a replayed graph's key (cuda/graph.h)
    __shared__ __align__(16) float Ks[BK][DH];
    __shared__ __align__(16) float Vs[BK][DH];
    __shared__ float Qc[CHUNK][CHUNK + 1], Gc[CHUNK][CHUNK + 1], Oc[CHUNK][CHUNK + 1];
    __shared__ __align__(16) float Ws[BK][CHUNK]; // p mask of (key row, query lane)
    __shared__ __align__(16) float Ss[BK][CHUNK]; // ds
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, bh = blockIdx.y;
    const int b = bh / a.H, h = bh % a.H;
    const int k0 = blockIdx.x * BK; // the first keys have the most queries: first
    const int64_t ld = 3 * (int64_t)a.D;
    const E *q = qkv + (int64_t)b * a.T * ld + h * a.dh;
    const E *g = dctx + (int64_t)b * a.T * a.D + h * a.dh;
    const E *o = ctx + (int64_t)b * a.T * a.D + h * a.dh;
    load_rows<E, DH>(Ks, BK, q + a.D, k0, ld, a);
    load_rows<E, DH>(Vs, BK, q + 2 * a.D, k0, ld, a);
    float dk[R][C], dv[R][C];
    FLASH_UNROLL
    for (int r = 0; r < R; r++)
        FLASH_UNROLL
        for (int c = 0; c < C; c++) dk[r][c] = dv[r][c] = 0.0f;
    for (int q0 = k0 / CHUNK * CHUNK; q0 < a.T; q0 += CHUNK) {
        const int i = q0 + lane;
        float s[R], dp[R], delta = 0.0f;
        FLASH_UNROLL
        for (int r = 0; r < R; r++) s[r] = dp[r] = 0.0f;
        for (int c = 0; c < a.chunks; c++) { // lane: query i
            __syncthreads();
            load_chunk<E>(Qc, q, q0, c * CHUNK, ld, a);
            load_chunk<E>(Gc, g, q0, c * CHUNK, a.D, a);
            load_chunk<E>(Oc, o, q0, c * CHUNK, a.D, a);
            __syncthreads();
            for (int e = 0; e < CHUNK; e += 4) {
                const float q0_ = Qc[lane][e], q1 = Qc[lane][e + 1], q2 = Qc[lane][e + 2],
                            q3 = Qc[lane][e + 3];
                const float g0 = Gc[lane][e], g1 = Gc[lane][e + 1], g2 = Gc[lane][e + 2],
                            g3 = Gc[lane][e + 3];
                delta = fmaf(g3, Oc[lane][e + 3], fmaf(g2, Oc[lane][e + 2],
                        fmaf(g1, Oc[lane][e + 1], fmaf(g0, Oc[lane][e], delta))));
                FLASH_UNROLL
                for (int r = 0; r < R; r++) {
                    s[r] = dot4(s[r], at4(&Ks[warp * R + r][c * CHUNK + e]), q0_, q1, q2, q3);
                    dp[r] = dot4(dp[r], at4(&Vs[warp * R + r][c * CHUNK + e]), g0, g1, g2, g3);
                }
            }
        }
        const float lse_i = i < a.T ? lse[(int64_t)bh * a.T + i] : 0.0f;
        FLASH_UNROLL
        for (int r = 0; r < R; r++) {
            const int j = k0 + warp * R + r;
            const bool valid = j <= i && i < a.T;
            const float p = valid ? expf(s[r] * a.scale - lse_i) : 0.0f;
            const float mult = valid ? mask_at(a, bh, i, j) : 0.0f;
            Ws[warp * R + r][lane] = p * mult;
            Ss[warp * R + r][lane] = p * (mult * dp[r] - delta);
        }
        FLASH_UNROLL
        for (int c = 0; c < C; c++) { // lane: column c * 32 + lane
            if (c >= a.chunks) break;
            __syncthreads();
            if (a.chunks > 1) { // else the chunk above is still there
                load_chunk<E>(Qc, q, q0, c * CHUNK, ld, a);
                load_chunk<E>(Gc, g, q0, c * CHUNK, a.D, a);
            }
            __syncthreads();
            for (int ii = 0; ii < CHUNK; ii += 4) {
                const float g0 = Gc[ii][lane], g1 = Gc[ii + 1][lane], g2 = Gc[ii + 2][lane],
                            g3 = Gc[ii + 3][lane];
                const float q0_ = Qc[ii][lane], q1 = Qc[ii + 1][lane], q2 = Qc[ii + 2][lane],
                            q3 = Qc[ii + 3][lane];
                FLASH_UNROLL
                for (int r = 0; r < R; r++) {
                    dv[r][c] = dot4(dv[r][c], at4(&Ws[warp * R + r][ii]), g0, g1, g2, g3);
                    dk[r][c] = dot4(dk[r][c], at4(&Ss[warp * R + r][ii]), q0_, q1, q2, q3);
                }
            }
        }
    }
    FLASH_UNROLL
    for (int r = 0; r < R; r++) {
        const int j = k0 + warp * R + r;
        if (j >= a.T) continue;
        const int64_t row = ((int64_t)b * a.T + j) * ld + h * a.dh;
        FLASH_UNROLL
        for (int c = 0; c < C; c++) {
            const int e = c * CHUNK + lane;
            if (e >= a.dh) continue;
            const int64_t at_k = row + a.D + e, at_v = row + 2 * a.D + e;
            elem_add(dqkv, at_k, dk[r][c] * a.scale);
            elem_add(dqkv, at_v, dv[r][c]);
        }
    }
}

// ---------------------------------------------------------------- backward: dQ

template <class E, int DH, int R>
static __global__ void flash_dq_kernel(E *dqkv, const E *qkv,
                                       const E *ctx, const E *dctx,
                                       const float *lse, FlashArgs a) {
    constexpr int BQ = WARPS * R, C = DH / CHUNK;
    if (a.drop.key_at) a.drop.key = *a.drop.key_at; // a replayed graph's key (cuda/graph.h)
    __shared__ __align__(16) float Qs[BQ][DH];
    __shared__ __align__(16) float Gs[BQ][DH]; // dctx
    __shared__ float Kc[CHUNK][CHUNK + 1], Vc[CHUNK][CHUNK + 1];
    __shared__ __align__(16) float Ss[BQ][CHUNK]; // ds of (query row, key lane)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, bh = blockIdx.y;
    const int b = bh / a.H, h = bh % a.H;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * BQ; // the longest rows first
    const int64_t ld = 3 * (int64_t)a.D;
    const E *q = qkv + (int64_t)b * a.T * ld + h * a.dh;
    const E *g = dctx + (int64_t)b * a.T * a.D + h * a.dh;
    const E *o = ctx + (int64_t)b * a.T * a.D + h * a.dh;
    load_rows<E, DH>(Qs, BQ, q, q0, ld, a);
    load_rows<E, DH>(Gs, BQ, g, q0, a.D, a);
    __syncthreads();
    float dq[R][C], delta[R], lse_r[R];
    FLASH_UNROLL
    for (int r = 0; r < R; r++) { // delta = dctx . ctx of each row
        const int i = q0 + warp * R + r;
        float part = 0.0f;
        FLASH_UNROLL
        for (int c = 0; c < C; c++) {
            const int e = c * CHUNK + lane;
            dq[r][c] = 0.0f;
            if (i < a.T && e < a.dh) part = fmaf(Gs[warp * R + r][e], elem_load(o, (int64_t)i * a.D + e), part);
        }
        delta[r] = warp_sum(part);
        lse_r[r] = i < a.T ? lse[(int64_t)bh * a.T + i] : 0.0f;
    }
    const int tiles = (min(q0 + BQ, a.T) - 1) / CHUNK + 1;
    for (int t = 0; t < tiles; t++) {
        const int k0 = t * CHUNK, j = k0 + lane;
        float s[R], dp[R];
        FLASH_UNROLL
        for (int r = 0; r < R; r++) s[r] = dp[r] = 0.0f;
        for (int c = 0; c < a.chunks; c++) { // lane: key j
            __syncthreads();
            load_chunk<E>(Kc, q + a.D, k0, c * CHUNK, ld, a);
            load_chunk<E>(Vc, q + 2 * a.D, k0, c * CHUNK, ld, a);
            __syncthreads();
            for (int e = 0; e < CHUNK; e += 4) {
                const float k0_ = Kc[lane][e], k1 = Kc[lane][e + 1], k2 = Kc[lane][e + 2],
                            k3 = Kc[lane][e + 3];
                const float v0 = Vc[lane][e], v1 = Vc[lane][e + 1], v2 = Vc[lane][e + 2],
                            v3 = Vc[lane][e + 3];
                FLASH_UNROLL
                for (int r = 0; r < R; r++) {
                    s[r] = dot4(s[r], at4(&Qs[warp * R + r][c * CHUNK + e]), k0_, k1, k2, k3);
                    dp[r] = dot4(dp[r], at4(&Gs[warp * R + r][c * CHUNK + e]), v0, v1, v2, v3);
                }
            }
        }
        FLASH_UNROLL
        for (int r = 0; r < R; r++) {
            const int i = q0 + warp * R + r;
            const bool valid = j <= i && i < a.T;
            const float p = valid ? expf(s[r] * a.scale - lse_r[r]) : 0.0f;
            const float mult = valid ? mask_at(a, bh, i, j) : 0.0f;
            Ss[warp * R + r][lane] = p * (mult * dp[r] - delta[r]);
        }
        FLASH_UNROLL
        for (int c = 0; c < C; c++) { // lane: column c * 32 + lane
            if (c >= a.chunks) break;
            __syncthreads();
            if (a.chunks > 1) load_chunk<E>(Kc, q + a.D, k0, c * CHUNK, ld, a);
            __syncthreads();
            for (int jj = 0; jj < CHUNK; jj += 4) {
                const float k0_ = Kc[jj][lane], k1 = Kc[jj + 1][lane], k2 = Kc[jj + 2][lane],
                            k3 = Kc[jj + 3][lane];
                FLASH_UNROLL
                for (int r = 0; r < R; r++)
                    dq[r][c] = dot4(dq[r][c], at4(&Ss[warp * R + r][jj]), k0_, k1, k2, k3);
            }
        }
    }
    FLASH_UNROLL
    for (int r = 0; r < R; r++) {
        const int i = q0 + warp * R + r;
        if (i >= a.T) continue;
        const int64_t row = ((int64_t)b * a.T + i) * ld + h * a.dh;
        FLASH_UNROLL
        for (int c = 0; c < C; c++) {
            const int e = c * CHUNK + lane;
            if (e < a.dh) elem_add(dqkv, row + e, dq[r][c] * a.scale);
        }
    }
}

// ---------------------------------------------------------------- launches

// The register tile: the head's columns rounded up to 32, 64, 128 or 256.
static int head_tile(int dh) { return dh <= 32 ? 32 : dh <= 64 ? 64 : dh <= 128 ? 128 : 256; }

// What the kernels take: heads up to FLASH_MAX_HEAD wide, B H rows of blocks.
static void check_limits(const AttentionSizes *s) {
    CHECK(s->dh <= FLASH_MAX_HEAD, "flash attention on the GPU: heads of %d columns; the kernels "
          "take at most %d (d_model %d / %d heads): use more heads", s->dh, FLASH_MAX_HEAD,
          s->D, s->H);
    CHECK(s->B * s->H <= 65535, "flash attention on the GPU: %d sequences x %d heads, more than "
          "a grid's 65,535 rows of blocks", s->B, s->H);
}

static FlashArgs args_of(const AttentionSizes *s, const FlashDropout &d) {
    FlashArgs a;
    a.T = s->T, a.H = s->H, a.D = s->D, a.dh = s->dh;
    a.chunks = (s->dh + CHUNK - 1) / CHUNK;
    a.scale = 1.0f / sqrtf((float)s->dh);
    a.drop = d;
    return a;
}

static dim3 grid_of(const AttentionSizes *s, int rows_per_block) {
    return dim3((unsigned)((s->T + rows_per_block - 1) / rows_per_block), (unsigned)(s->B * s->H));
}

template <class E, int DH> static void forward_as(const AttentionSizes *s, const FlashArgs &a,
                                                  Tensor *ctx, Tensor *lse, const Tensor *qkv) {
    constexpr int R = DH <= 128 ? 8 : 4;
    flash_forward_kernel<E, DH, R><<<grid_of(s, WARPS * R), THREADS, 0, cuda_stream()>>>(
        elems<E>(ctx), lse->data, elems<E>(qkv), a);
    CUDA_CHECK_LAUNCH();
}

template <class E, int DH> static void backward_as(const AttentionSizes *s, const FlashArgs &a,
                                                   Tensor *dqkv, const Tensor *dctx,
                                                   const Tensor *qkv, const Tensor *ctx,
                                                   const Tensor *lse) {
    constexpr int RK = DH <= 64 ? 8 : DH <= 128 ? 4 : 2, RQ = DH <= 128 ? 8 : 4;
    flash_dkdv_kernel<E, DH, RK><<<grid_of(s, WARPS * RK), THREADS, 0, cuda_stream()>>>(
        elems<E>(dqkv), elems<E>(qkv), elems<E>(ctx), elems<E>(dctx), lse->data, a);
    CUDA_CHECK_LAUNCH();
    flash_dq_kernel<E, DH, RQ><<<grid_of(s, WARPS * RQ), THREADS, 0, cuda_stream()>>>(
        elems<E>(dqkv), elems<E>(qkv), elems<E>(ctx), elems<E>(dctx), lse->data, a);
    CUDA_CHECK_LAUNCH();
}

template <class E> static void forward_typed(const AttentionSizes *s, const FlashArgs &a,
                                             Tensor *ctx, Tensor *lse, const Tensor *qkv) {
    switch (head_tile(s->dh)) {
    case 32: forward_as<E, 32>(s, a, ctx, lse, qkv); break;
    case 64: forward_as<E, 64>(s, a, ctx, lse, qkv); break;
    case 128: forward_as<E, 128>(s, a, ctx, lse, qkv); break;
    default: forward_as<E, 256>(s, a, ctx, lse, qkv); break;
    }
}

template <class E> static void backward_typed(const AttentionSizes *s, const FlashArgs &a,
                                              Tensor *dqkv, const Tensor *dctx, const Tensor *qkv,
                                              const Tensor *ctx, const Tensor *lse) {
    switch (head_tile(s->dh)) {
    case 32: backward_as<E, 32>(s, a, dqkv, dctx, qkv, ctx, lse); break;
    case 64: backward_as<E, 64>(s, a, dqkv, dctx, qkv, ctx, lse); break;
    case 128: backward_as<E, 128>(s, a, dqkv, dctx, qkv, ctx, lse); break;
    default: backward_as<E, 256>(s, a, dqkv, dctx, qkv, ctx, lse); break;
    }
}

extern "C" void cuda_flash_attention_forward(Tensor *ctx, Tensor *lse, FlashDropout *drop,
                                             const Tensor *qkv, float dropout_p, bool training,
                                             Rng *rng, DropoutWindow window) {
    const AttentionSizes s =
        flash_attention_check_forward(ctx, lse, qkv, dropout_p, training, rng, window);
    CHECK_ON_GPU(ctx);
    CHECK_ON_GPU(lse);
    CHECK_ON_GPU(qkv);
    check_limits(&s); // before anything is drawn
    // the key as flash_attention_draw draws it, and where a replayed graph keeps it
    uint64_t key = 0;
    const uint64_t *key_at =
        dropout_active(dropout_p, training) ? cuda_graph_key(rng, &key) : NULL;
    FlashDropout d = flash_attention_dropout(dropout_p, training, key, window);
    d.key_at = key_at;
    if (drop) *drop = d;
    if (s.B * s.T == 0) return;
    const FlashArgs a = args_of(&s, d);
    elem_dispatch(qkv->dtype, [&](auto tag) { forward_typed<decltype(tag)>(&s, a, ctx, lse, qkv); });
}

extern "C" void cuda_flash_attention_backward(Tensor *dqkv, const Tensor *dctx, const Tensor *qkv,
                                              const Tensor *ctx, const Tensor *lse,
                                              const FlashDropout *drop) {
    const AttentionSizes s = flash_attention_check_backward(dqkv, dctx, qkv, ctx, lse, drop);
    CHECK_ON_GPU(dqkv);
    CHECK_ON_GPU(dctx);
    CHECK_ON_GPU(qkv);
    CHECK_ON_GPU(ctx);
    CHECK_ON_GPU(lse);
    check_limits(&s);
    const FlashArgs a =
        args_of(&s, drop ? *drop : flash_attention_dropout(0.0f, false, 0, DROPOUT_WHOLE));
    if (s.B * s.T == 0) return;
    elem_dispatch(qkv->dtype, [&](auto tag) {
        backward_typed<decltype(tag)>(&s, a, dqkv, dctx, qkv, ctx, lse);
    });
}
