/* Launch arithmetic, plain host code (in every build, so it is tested everywhere). */
#include "core/check.h"
#include "launch.h"

/* Enough blocks to fill any current GPU many times over (132 SMs x 8 blocks of 256
 * threads on an H100 is about 1,000); beyond this the kernels' grid-stride loops
 * take the rest, so one thread may handle several elements. */
enum { MAX_BLOCKS = 65535 };

int cuda_blocks_for(int64_t n, int threads) {
    CHECK(n >= 0 && threads >= 1 && threads <= 1024, "cuda_blocks_for(%lld, %d)", (long long)n,
          threads);
    int64_t blocks = (n + threads - 1) / threads; /* round up: the last block is partial */
    if (blocks < 1) blocks = 1;                   /* a grid of 0 blocks is a launch error */
    return blocks > MAX_BLOCKS ? MAX_BLOCKS : (int)blocks;
}

int cuda_blocks_for_rows(int64_t rows, int threads) {
    CHECK(rows >= 0 && threads % 32 == 0, "cuda_blocks_for_rows(%lld, %d): threads must be whole warps",
          (long long)rows, threads);
    CHECK(rows <= INT64_MAX / 32, "cuda_blocks_for_rows: %lld rows", (long long)rows);
    return cuda_blocks_for(rows * 32, threads);
}
