/* A training split on disk, read one sequence at a time: lesson 10's data loader.
 *
 *   token_file_write("train.tokens", &train_batches, why, sizeof why);   // once, rank 0
 *   TokenFile f;
 *   token_file_open(&f, "train.tokens", 500, why, sizeof why);          // 500 us a read
 *   token_file_read_batch(&f, i, bptt, col0, n, tokens, targets, why, sizeof why);
 *
 * The file holds the split as text_batchify lays it out (data/text.h): column c is the
 * c-th piece of the token stream, so the n sequences of a batch (get_batch's rows i to
 * i + bptt of columns col0 .. col0 + n) are n contiguous runs of bptt + 1 tokens, read
 * with one pread each, and they are text_get_batch's tokens bit for bit.
 *
 * read_latency_us stands for a parallel file system's latency on small reads (GPFS,
 * Lustre: some 0.1 to 1 ms each, where a local disk's page cache answers in a few
 * microseconds): a sleep before each read. It is not a measured file system: on a
 * cluster, put the file on the parallel file system with latency 0 for the real thing.
 *
 * Layout: "CTOKENS" and a 0 byte, then int64 version (1), rows, cols, then rows * cols
 * int32 tokens column by column, all little-endian as this machine writes them. */
#ifndef DATA_TOKEN_FILE_H
#define DATA_TOKEN_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/text.h"

typedef struct {
    int fd;
    int64_t rows;              /* tokens per column */
    int cols;                  /* columns: the batch size the split was batchified for */
    int64_t read_latency_us;   /* slept before each read (0: none) */
    char path[512];            /* for messages */
} TokenFile;

/* b into path (a temporary file beside it, synced, then put in path's place, as a
 * checkpoint is: no link is followed). Only a token file that an earlier run wrote is
 * replaced: anything else at path (a device such as /dev/null, a FIFO, a symbolic link,
 * a directory, another file of the user's) is refused by name and left as it is, before
 * anything is written; so is something that appears there while the file is written.
 * false with why. */
bool token_file_write(const char *path, const TextBatches *b, char *why, size_t cap);
bool token_file_open(TokenFile *f, const char *path, int64_t read_latency_us, char *why, size_t cap);
void token_file_close(TokenFile *f);
/* Sequences of batch row i (0 <= i, i + bptt < rows) for columns col0 .. col0 + n:
 * tokens and targets [n * bptt] batch-major (sequence s, position t at s * bptt + t),
 * one read of bptt + 1 tokens per sequence. false with why on a read error. */
bool token_file_read_batch(const TokenFile *f, int64_t i, int bptt, int col0, int n, int *tokens,
                           int *targets, char *why, size_t cap);

#endif
