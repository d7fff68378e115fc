/* Checkpoints: everything a training run needs to continue exactly where it stopped.
 *
 * A Checkpoint is a manifest: a list of named tensors (parameters, optimiser state)
 * and named scalars (epoch, step, RNG, sampler position, best metric), each pointing
 * at the program's own variables. The same manifest saves them and loads them back:
 *
 *   TrainState ts = {...};                       // train/train_state.h
 *   Checkpoint c = {0};
 *   ckpt_add_params(&c, "model", &model.params);
 *   ckpt_add_adam(&c, &opt, &model.params);
 *   ckpt_add_train_state(&c, &ts);
 *   ckpt_save(&c, "run/ckpt.ckpt", &err);        // train/checkpoint_file.h: atomic
 *   ckpt_load(&c, "run/ckpt.ckpt", &err);        // all checked before anything changes
 *   ckpt_free(&c);                               // the manifest, not the variables
 *
 * This file is the manifest and the file format; checkpoint_file.h writes and reads
 * files, checkpoint_store.h keeps a run's directory of them.
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
 *   Inside a container image the scalars end with metadata (train/checkpoint_meta.h:
 *   "image.digest"), which a reader without it in its manifest skips.
 *
 * Loading checks magic, version, size, checksum, then that the file holds exactly
 * the manifest's names with the same shapes; on any problem it returns -1 with a
 * message that says what, which file and how to fix it, and changes nothing. */
#ifndef TRAIN_CHECKPOINT_H
#define TRAIN_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "models/params.h"
#include "train/optim.h"

enum {
    CKPT_VERSION = 1,
    CKPT_NAME_MAX = 64,                     /* names, NUL included */
    CKPT_PATH_MAX = 1024,
    CKPT_ERROR_MAX = 2048,
};

typedef enum { CKPT_I64 = 'i', CKPT_U64 = 'u', CKPT_F64 = 'f' } CkptType;

typedef struct {
    char name[CKPT_NAME_MAX];
    Tensor tensor; /* a view of the program's tensor: saved from and loaded into its data */
} CkptTensor;

typedef struct {
    char name[CKPT_NAME_MAX];
    CkptType type;
    void *value; /* int64_t *, uint64_t * or double *, by type */
    /* What a loaded value must be (ckpt_expect_*): a value behind a valid checksum can
     * still be wrong (a bug of the writer, a hand-edited file), and a run must not go on
     * from a sampler position of -1. CKPT_I64: min..max; CKPT_U64: odd when `odd`;
     * CKPT_F64: never NaN, finite unless `allow_inf`, at least `fmin`; and, where
     * `not_above` is an index into the scalars (else -1), not above that scalar's loaded
     * value. `found` (not NULL): an optional entry, which a file may lack (one written
     * before it existed); *found says whether the last load had it. */
    int64_t min, max;
    double fmin;
    bool odd, allow_inf;
    int not_above;
    bool *found;
} CkptScalar;

typedef struct {
    CkptTensor *tensors;     /* ntensors entries (grown as needed) */
    int ntensors, tensors_cap;
    CkptScalar *scalars;     /* nscalars entries */
    int nscalars, scalars_cap;
    const char *ignore_prefix; /* a file's scalars named so that the manifest lacks are
                                * skipped on load (ckpt_ignore_unknown), NULL: none */
} Checkpoint;

void ckpt_free(Checkpoint *c);

typedef struct {
    char msg[CKPT_ERROR_MAX];
} CkptError;

/* Fills err->msg (when err is not NULL) as printf does; returns -1, so that a
 * failing function can `return ckpt_error(err, "cannot open %s: %s", ...)`. */
int ckpt_error(CkptError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ the manifest */

/* t's data is saved and loaded (on the CPU or a GPU); it must stay where it is. A
 * float32 tensor only (the file format's one type): another dtype stops by name. */
void ckpt_add_tensor(Checkpoint *c, const char *name, const Tensor *t);
void ckpt_add_i64(Checkpoint *c, const char *name, int64_t *v);
void ckpt_add_u64(Checkpoint *c, const char *name, uint64_t *v);
void ckpt_add_f64(Checkpoint *c, const char *name, double *v);

/* Limits checked on load, for the scalar `name` added before: an int64 in min..max, a
 * uint64 that must be odd (a PCG increment), a float64 that may be infinite (a "none
 * yet" marker; NaN is never accepted). A value outside is reported like damage. */
void ckpt_expect_range(Checkpoint *c, const char *name, int64_t min, int64_t max);
void ckpt_expect_odd(Checkpoint *c, const char *name);
void ckpt_expect_inf_allowed(Checkpoint *c, const char *name);
/* The int64 `name` may not be above the int64 `bound` of the same file (a sampler's
 * position past its count). */
void ckpt_expect_at_most(Checkpoint *c, const char *name, const char *bound);
/* The float64 `name` may not be below min. */
void ckpt_expect_f64_at_least(Checkpoint *c, const char *name, double min);
/* The scalar `name` may be missing from a file (written before the program had it):
 * loading such a file leaves its variable as it was and sets *found to false; a file
 * that holds it sets *found to true. Saving writes it as any other. */
void ckpt_expect_optional(Checkpoint *c, const char *name, bool *found);
/* A file's scalars whose names begin with `prefix` and that the manifest does not name
 * are skipped on load instead of refused: state that only some writers keep and a
 * reader without it can do without (fp16's loss scaler, read by a bf16 run). One prefix,
 * a string that outlives the manifest. */
void ckpt_ignore_unknown(Checkpoint *c, const char *prefix);

/* prefix.NAME for every parameter's value (not its gradient: recomputed every step). */
void ckpt_add_params(Checkpoint *c, const char *prefix, ParamList *params);
/* adam.m.NAME and adam.v.NAME per parameter (views of the flat state), and adam.step. */
void ckpt_add_adam(Checkpoint *c, Adam *opt, const ParamList *params);
/* sgd.momentum.NAME per parameter, and sgd.step. */
void ckpt_add_sgd(Checkpoint *c, Sgd *opt, const ParamList *params);

/* ------------------------------------------------------------ bytes */

/* A 64-bit hash (four multiply-rotate lanes over 8-byte words, then a mixing
 * finaliser): the checksum of the file and the parameter digest. Not cryptographic;
 * it catches truncation, bit flips and torn writes. */
uint64_t ckpt_hash64(const void *data, size_t len, uint64_t seed);

/* The digest printed as "parameter digest: %016llx": hash of every parameter's bytes
 * in list order (on any device), so two runs can be compared from the outside. */
uint64_t params_digest(const ParamList *params);

/* The size of the file c makes, in bytes. */
size_t ckpt_encoded_size(const Checkpoint *c);
/* The whole file in memory (malloc'ed; free with xfree). */
void ckpt_encode(const Checkpoint *c, uint8_t **buf, size_t *len);
/* The header first, before a file is read whole (a 10 GB file that is no checkpoint
 * must cost nothing): head holds the file's first min(32, file_size) bytes (head_len).
 * Checks the magic number, the version, and that the size the header records is
 * file_size; with max_size not 0, also that the file is at most max_size bytes. 0, or
 * -1 and err (the same messages as ckpt_decode's). */
int ckpt_check_header(const uint8_t *head, size_t head_len, uint64_t file_size, uint64_t max_size,
                      const char *source, CkptError *err);
/* Checks buf against the manifest and copies it into the variables only when all of
 * it is good; `source` names the file in messages. 0 on success, -1 and err. */
int ckpt_decode(const Checkpoint *c, const uint8_t *buf, size_t len, const char *source,
                CkptError *err);

#endif
