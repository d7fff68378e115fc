/* libFuzzer target: ckpt_decode (lib/train/checkpoint.h) on a fuzzed file.
 *
 * A mutated checkpoint almost never gets past the checksum, and a manifest fixed here
 * would stop the rest at the first unknown name. So each input is decoded three times:
 *   1. as it is, against a manifest read from the file's own entry table (the envelope:
 *      magic, version, sizes, checksum);
 *   2. with its size field and checksum made right, against that manifest (the entry
 *      parser and the copy into the program's variables);
 *   3. the same, against that manifest without its last entry (unknown names, a missing
 *      or surplus entry, shapes and types that differ).
 * The manifest holds what the table names as far as it makes sense (1 to 4 dimensions,
 * no more values than the file has bytes); this reader is deliberately simple, not a
 * second decoder. Seeds: the checkpoints the unit tests encode (tests/unit/test_checkpoint.c). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"
#include "train/checkpoint.h"

#define HEADER 32
#define MAX_ENTRIES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void put_le64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

typedef struct {
    Checkpoint c;
    Tensor tensors[MAX_ENTRIES];
    int ntensors;
    uint64_t scalars[MAX_ENTRIES]; /* int64, uint64 or double bits: 8 bytes each */
} Manifest;

static bool taken(const Checkpoint *c, const char *name) {
    for (int i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0) return true;
    for (int i = 0; i < c->nscalars; i++)
        if (strcmp(c->scalars[i].name, name) == 0) return true;
    return false;
}

/* A name at p[0..n) that ckpt_add_* accepts (1 to 63 characters, no NUL, not taken). */
static bool usable_name(const Checkpoint *c, const uint8_t *p, size_t n, char *out) {
    if (n < 1 || n >= CKPT_NAME_MAX || memchr(p, 0, n)) return false;
    memcpy(out, p, n);
    out[n] = '\0';
    return !taken(c, out);
}

/* The manifest the file's entry table describes, up to `entries` entries. */
static void manifest_from(const uint8_t *b, size_t len, int entries, Manifest *m) {
    memset(m, 0, sizeof *m);
    if (len < HEADER + 8) return;
    size_t at = HEADER, end = len - 8, budget = len / 4; /* values the file can hold */
    uint32_t nt = (uint32_t)le(b + 24, 4), ns = (uint32_t)le(b + 28, 4);
    for (uint32_t e = 0; e < nt + ns && m->ntensors + m->c.nscalars < entries; e++) {
        if (end - at < 2) return;
        size_t n = le(b + at, 2);
        at += 2;
        if (end - at < n) return;
        char name[CKPT_NAME_MAX];
        bool named = usable_name(&m->c, b + at, n, name);
        at += n;
        if (e >= nt) { /* a scalar: type, 8 bytes */
            if (end - at < 9) return;
            CkptType type = b[at] == 'u' ? CKPT_U64 : b[at] == 'f' ? CKPT_F64 : CKPT_I64;
            uint64_t *v = &m->scalars[m->c.nscalars];
            if (named && type == CKPT_U64) ckpt_add_u64(&m->c, name, v);
            else if (named && type == CKPT_F64) ckpt_add_f64(&m->c, name, (double *)v);
            else if (named) ckpt_add_i64(&m->c, name, (int64_t *)v);
            at += 9;
            continue;
        }
        if (end - at < 2) return; /* a tensor: ndim, type, shape, values */
        int ndim = b[at];
        at += 2;
        if (ndim < 1 || ndim > TENSOR_MAX_DIMS || end - at < 4 * (size_t)ndim) return;
        int dims[TENSOR_MAX_DIMS] = {1, 1, 1, 1};
        uint64_t values = 1;
        for (int k = 0; k < ndim; k++, at += 4) {
            uint64_t d = le(b + at, 4);
            dims[k] = d >= 1 && d <= budget ? (int)d : 0;
            values *= dims[k] ? d : 1;
            if (values > budget) values = budget + 1;
        }
        bool fits = values <= budget;
        for (int k = 0; k < ndim; k++) fits = fits && dims[k] > 0;
        if (named && fits) {
            Tensor *t = &m->tensors[m->ntensors++];
            *t = tensor_zeros(ndim, dims[0], dims[1], dims[2], dims[3]);
            ckpt_add_tensor(&m->c, name, t);
            budget -= values;
        }
        if (end - at < 4 * values) return;
        at += 4 * values;
    }
}

static void manifest_free(Manifest *m) {
    ckpt_free(&m->c);
    for (int i = 0; i < m->ntensors; i++) tensor_free(&m->tensors[i]);
}

static void decode(const uint8_t *b, size_t len, int entries) {
    Manifest m;
    manifest_from(b, len, entries, &m);
    CkptError err;
    err.msg[0] = '\0';
    if (ckpt_decode(&m.c, b, len, "fuzz.ckpt", &err) != 0 && !err.msg[0]) abort();
    manifest_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    decode(data, size, MAX_ENTRIES);
    if (size < HEADER + 8) return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed) abort();
    memcpy(fixed, data, size);
    put_le64(fixed + 16, size);
    put_le64(fixed + size - 8, ckpt_hash64(fixed, size - 8, 0));
    decode(fixed, size, MAX_ENTRIES);
    Manifest all;
    manifest_from(fixed, size, MAX_ENTRIES, &all);
    int n = all.ntensors + all.c.nscalars;
    manifest_free(&all);
    if (n > 0) decode(fixed, size, n - 1);
    free(fixed);
    return 0;
}
