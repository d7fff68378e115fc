/* Checkpoints: everything a training run needs to continue exactly where it stopped.
 *
 * A Checkpoint is a manifest: a list of named tensors (parameters, optimiser state)
 * and named scalars (epoch, step, RNG, sampler position, best metric), each pointing
 * at the program's own variables. The same manifest saves them and loads them back:
 *
 *   TrainState ts = {...};
 *   Checkpoint c = {0};
 *   ckpt_add_params(&c, "model", &model.params);
 *   ckpt_add_adam(&c, &opt, &model.params);
 *   ckpt_add_train_state(&c, &ts);
 *   ckpt_save(&c, "run/ckpt.ckpt", &err);        // atomic: temp file, fsync, rename
 *   ckpt_load(&c, "run/ckpt.ckpt", &err);        // all checked before anything changes
 *
 * The file (all integers and floats little-endian):
 *
 *   magic "\x89CKP\r\n\x1a\n", u32 version, u32 header size (32), u64 file size,
 *   u32 tensor count, u32 scalar count
 *   per tensor: u16 name length, name, u8 ndim (1-4), u8 type (1: float32),
 *               u32 shape[ndim], float32 data[product of shape]
 *   per scalar: u16 name length, name, u8 type ('i' int64, 'u' uint64, 'f' float64),
 *               8 bytes value
 *   u64 checksum (ckpt_hash64 of every byte before it)
 *
 * Loading checks magic, version, size, checksum, then that the file holds exactly
 * the manifest's names with the same shapes; on any problem it returns -1 with a
 * message that says what, which file and how to fix it, and changes nothing (not the
 * variables, not the file). A CkptStore keeps the last K checkpoints of a run in a
 * directory, plus a separate best one, and finds the newest one that loads. */
#ifndef TRAIN_CHECKPOINT_H
#define TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "core/tensor.h"
#include "train/optim.h"
#include "train/params.h"

enum {
    CKPT_VERSION = 1,
    CKPT_NAME_MAX = 64,                     /* names, NUL included */
    CKPT_MAX_TENSORS = 4 * PARAMS_MAX,      /* parameters + optimiser state + extras */
    CKPT_MAX_SCALARS = 64,
    CKPT_PATH_MAX = 1024,
    CKPT_ERROR_MAX = 2048,
};

/* Exit status of a program that stopped early to be requeued (EX_TEMPFAIL of
 * sysexits.h: "try again later"). The sbatch scripts map it to `scontrol requeue`. */
#define EXIT_REQUEUE 75

typedef enum { CKPT_I64 = 'i', CKPT_U64 = 'u', CKPT_F64 = 'f' } CkptType;

typedef struct {
    char name[CKPT_NAME_MAX];
    Tensor *tensor; /* not owned: saved from and loaded into */
} CkptTensor;

typedef struct {
    char name[CKPT_NAME_MAX];
    CkptType type;
    void *value; /* int64_t *, uint64_t * or double *, by type */
} CkptScalar;

typedef struct {
    CkptTensor tensors[CKPT_MAX_TENSORS];
    int ntensors;
    CkptScalar scalars[CKPT_MAX_SCALARS];
    int nscalars;
} Checkpoint;

typedef struct {
    char msg[CKPT_ERROR_MAX];
} CkptError;

/* Fills err->msg (when err is not NULL) as printf does; returns -1, so that a
 * failing function can `return ckpt_error(err, "cannot open %s: %s", ...)`. */
int ckpt_error(CkptError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ the manifest */

void ckpt_add_tensor(Checkpoint *c, const char *name, Tensor *t);
void ckpt_add_i64(Checkpoint *c, const char *name, int64_t *v);
void ckpt_add_u64(Checkpoint *c, const char *name, uint64_t *v);
void ckpt_add_f64(Checkpoint *c, const char *name, double *v);

/* prefix.NAME for every parameter's value (not its gradient: recomputed every step). */
void ckpt_add_params(Checkpoint *c, const char *prefix, ParamList *params);
/* adam.m.NAME and adam.v.NAME per parameter, and adam.step. */
void ckpt_add_adam(Checkpoint *c, Adam *opt, const ParamList *params);
/* sgd.momentum.NAME per parameter, and sgd.step. */
void ckpt_add_sgd(Checkpoint *c, Sgd *opt, const ParamList *params);

/* Where the training loop is, beyond model and optimiser. */
typedef struct {
    int64_t epoch;            /* the epoch in progress, from 1 */
    int64_t step;             /* steps done in that epoch */
    int64_t global_step;      /* steps done in all epochs */
    uint64_t rng_state, rng_inc; /* the training Rng (augmentation, dropout) */
    uint64_t sampler_seed;    /* the sampler's order is rebuilt from seed and epoch */
    int64_t sampler_epoch, sampler_position, sampler_count;
    double loss_sum;          /* running sums of the epoch in progress, so its */
    int64_t examples;         /* printed mean loss covers every step */
    double best_metric;       /* best evaluation so far (-INFINITY: none yet) */
    int64_t best_epoch;
} TrainState;

/* train.epoch, train.step, ..., rng.state, sampler.position, best.metric ... */
void ckpt_add_train_state(Checkpoint *c, TrainState *s);

/* ------------------------------------------------------------ bytes */

/* A 64-bit hash (four multiply-rotate lanes over 8-byte words, then a mixing
 * finaliser): the checksum of the file and the parameter digest. Not cryptographic;
 * it catches truncation, bit flips and torn writes. */
uint64_t ckpt_hash64(const void *data, size_t len, uint64_t seed);

/* The digest printed as "parameter digest: %016llx": hash of every parameter's bytes
 * in list order, so two runs can be compared from the outside. */
uint64_t params_digest(const ParamList *params);

/* The size of the file c makes, in bytes. */
size_t ckpt_encoded_size(const Checkpoint *c);
/* The whole file in memory (malloc'ed; free with xfree). */
void ckpt_encode(const Checkpoint *c, uint8_t **buf, size_t *len);
/* Checks buf against the manifest and copies it into the variables only when all of
 * it is good; `source` names the file in messages. 0 on success, -1 and err. */
int ckpt_decode(const Checkpoint *c, const uint8_t *buf, size_t len, const char *source,
                CkptError *err);

/* ------------------------------------------------------------ files */

/* write(2) until all len bytes are written (retrying short writes and EINTR); 0 or
 * -1 with errno. The test hook: with COURSE_CKPT_STALL=K in the environment, the
 * K-th call in this process writes half, says so on stderr and stops for good
 * (until killed), so a test can kill a writer in the middle of a checkpoint. */
int ckpt_write_all(int fd, const void *buf, size_t len);

/* The atomic write: path.tmp in the same directory, written, fsync'ed, renamed over
 * path, then the directory fsync'ed. A crash at any moment leaves either the old
 * file or the new one at path, never a mix. 0 or -1 and err. */
int ckpt_write_atomic(const char *path, const uint8_t *buf, size_t len, CkptError *err);
typedef int (*CkptWriteFn)(const char *path, const uint8_t *buf, size_t len, CkptError *err);

/* Reads a whole file (malloc'ed; free with xfree). 0 or -1 and err. */
int ckpt_read_file(const char *path, uint8_t **buf, size_t *len, CkptError *err);

int ckpt_save(const Checkpoint *c, const char *path, CkptError *err);
int ckpt_load(const Checkpoint *c, const char *path, CkptError *err);
/* ckpt_load, or a fatal error (exit 1) with its message. */
void ckpt_load_or_die(const Checkpoint *c, const char *path);

/* ------------------------------------------------------------ a run's directory */

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
