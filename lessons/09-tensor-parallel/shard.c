/* TODO 9.1: which rows a rank holds, and the q|k|v slicing.
 *
 * A column-parallel linear cuts its weight W [out, in] by rows: rank r computes output
 * columns [r out/t, (r+1) out/t) from the whole input, so the rows go to the ranks in
 * order, out/t each. The library asks this for every sliced weight and bias (linear1,
 * the vocabulary's rows of the embedding and the decoder) and, with n = the columns, for
 * a row-parallel weight's columns.
 *
 * The attention's in-projection is three weights in one: PyTorch's in_proj_weight
 * [3D, D] holds the queries' rows (0 .. D-1), then the keys' (D .. 2D-1), then the
 * values' (2D .. 3D-1), and head h uses rows h dh .. (h+1) dh - 1 of each (dh = D/H).
 * Rank r holds heads [r H/t, (r+1) H/t): the same D/t rows of each of the three. Its
 * slice [3D/t, D] must be laid out as the attention layer reads a fused q|k|v: its
 * queries, then its keys, then its values, so that the layer sees a smaller attention
 * with H/t heads. */
#include "lesson.h"

TpRange lesson_shard(int n, int t, int r) {
    /* TODO 9.1: the ranks take consecutive runs of rows in rank order, the same number
     * each: how long is a run, and how many rows belong to the ranks before r? */
    (void)n, (void)t, (void)r;
    TODO_STOP("9.1");
}

void lesson_qkv_rows(int D, int t, int r, int *rows) {
    /* TODO 9.1, part 2: rank r's heads are one run of D/t rows inside each of the three
     * blocks (q, k, v), at the same place in each. Where does the run start within a
     * block, and where does each block start in in_proj_weight? Fill rows[] with the q
     * run, then the k run, then the v run. */
    (void)D, (void)t, (void)r, (void)rows;
    TODO_STOP("9.1");
}
