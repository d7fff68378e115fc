/* A run's directory of checkpoints: the last K step checkpoints plus a separate best
 * one, and the newest one that loads, found when a run resumes. */
#ifndef TRAIN_CHECKPOINT_STORE_H
#define TRAIN_CHECKPOINT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "train/checkpoint_file.h"

typedef struct {
    char dir[CKPT_PATH_MAX];
    int keep;          /* step checkpoints kept (the newest ones), at least 1 */
    CkptWriteFn write; /* ckpt_write_atomic, or a lesson's own */
} CkptStore;

/* Creates dir (and its parents) when needed; a directory that cannot be made or
 * written is a fatal user error that names it. */
void ckpt_store_init(CkptStore *s, const char *dir, int keep);
/* dir/ckpt-<step, 12 digits>.ckpt */
void ckpt_store_path(const CkptStore *s, int64_t step, char *out, size_t cap);
/* dir/best.ckpt */
void ckpt_store_best_path(const CkptStore *s, char *out, size_t cap);

/* Saves dir/ckpt-<step>.ckpt, then deletes the older ones beyond keep (counting the
 * new one; checkpoints of later steps, left by a run that fell back past them, are
 * neither counted nor deleted) and leftover .tmp files. The path written goes to
 * path_out (may be NULL). 0 or -1 and err. */
int ckpt_store_save(const CkptStore *s, const Checkpoint *c, int64_t step, char *path_out,
                    size_t cap, CkptError *err);
int ckpt_store_save_best(const CkptStore *s, const Checkpoint *c, CkptError *err);

/* The steps of the checkpoints in dir, newest first (at most max); returns how many. */
int ckpt_store_list(const CkptStore *s, int64_t *steps, int max);

/* Loads the newest checkpoint that loads, trying older ones when a newer one is
 * damaged (each failure is printed to stderr as a warning). Returns 1 (loaded; its
 * path in path_out), 0 (the directory holds no checkpoint) or -1 (there are some,
 * but none loads: err says why for each). */
int ckpt_store_load_latest(const CkptStore *s, const Checkpoint *c, char *path_out, size_t cap,
                           CkptError *err);

#endif
