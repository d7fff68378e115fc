/* Checkpoints: the manifest, the file format and the hash. Files are written and read in
 * checkpoint_file.c, a run's directory of them is checkpoint_store.c. */
#include "checkpoint.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "train/checkpoint_meta.h"

/* The ends of the messages: what to do about a damaged or a foreign file. */
#define FIX_DAMAGED                                                                        \
    "Delete it or move it away: with --resume the previous checkpoint in its directory is " \
    "used instead"
#define FIX_FOREIGN                                                                        \
    "Resume with the program and options (model, --dataset) that wrote it, or use a new "  \
    "--checkpoint-dir"

/* ------------------------------------------------------------ the manifest */

static void copy_name(char *dst, const char *name, const char *what) {
    size_t n = strlen(name);
    CHECK(n > 0 && n < CKPT_NAME_MAX, "checkpoint %s name '%s': 1 to %d characters", what, name,
          CKPT_NAME_MAX - 1);
    memcpy(dst, name, n + 1);
}

static bool name_taken(const Checkpoint *c, const char *name) {
    for (int i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0) return true;
    for (int i = 0; i < c->nscalars; i++)
        if (strcmp(c->scalars[i].name, name) == 0) return true;
    return false;
}

/* Room for one more entry in an array of `size`-byte entries (doubling). */
static void *grow(void *items, int count, int *cap, size_t size) {
    if (count < *cap) return items;
    int new_cap = *cap ? 2 * *cap : 32;
    void *bigger = xcalloc((size_t)new_cap, size);
    if (count) memcpy(bigger, items, (size_t)count * size);
    xfree(items);
    *cap = new_cap;
    return bigger;
}

void ckpt_add_tensor(Checkpoint *c, const char *name, const Tensor *t) {
    CHECK(!name_taken(c, name), "checkpoint entry '%s' added twice", name);
    CHECK(t && t->data, "checkpoint tensor '%s' without data", name);
    /* the format stores float32 (TYPE_F32): a 16-bit working copy is not state to keep */
    CHECK(t->dtype == DTYPE_F32, "checkpoint tensor '%s' is a %s tensor, but checkpoints hold "
          "float32 ones: save its float32 master copy (tensor_convert makes one)", name,
          dtype_name(t->dtype));
    c->tensors = grow(c->tensors, c->ntensors, &c->tensors_cap, sizeof *c->tensors);
    CkptTensor *e = &c->tensors[c->ntensors++];
    copy_name(e->name, name, "tensor");
    e->tensor = *t;
}

static void add_scalar(Checkpoint *c, const char *name, CkptType type, void *v) {
    CHECK(!name_taken(c, name), "checkpoint entry '%s' added twice", name);
    CHECK(v != NULL, "checkpoint scalar '%s' without a variable", name);
    c->scalars = grow(c->scalars, c->nscalars, &c->scalars_cap, sizeof *c->scalars);
    CkptScalar *e = &c->scalars[c->nscalars++];
    copy_name(e->name, name, "scalar");
    e->type = type;
    e->value = v;
    e->min = INT64_MIN;
    e->max = INT64_MAX;
    e->fmin = -INFINITY;
    e->odd = e->allow_inf = false;
    e->not_above = -1;
    e->found = NULL;
}

/* type 0: any */
static CkptScalar *scalar_named(Checkpoint *c, const char *name, CkptType type) {
    for (int i = 0; i < c->nscalars; i++)
        if (strcmp(c->scalars[i].name, name) == 0) {
            CHECK(!type || c->scalars[i].type == type, "checkpoint scalar '%s' has type '%c', not '%c'",
                  name, c->scalars[i].type, type);
            return &c->scalars[i];
        }
    CHECK(false, "no checkpoint scalar '%s' to set a limit on", name);
    return NULL;
}

void ckpt_expect_range(Checkpoint *c, const char *name, int64_t min, int64_t max) {
    CHECK(min <= max, "ckpt_expect_range('%s', %lld, %lld)", name, (long long)min, (long long)max);
    CkptScalar *s = scalar_named(c, name, CKPT_I64);
    s->min = min, s->max = max;
}
void ckpt_expect_odd(Checkpoint *c, const char *name) { scalar_named(c, name, CKPT_U64)->odd = true; }
void ckpt_expect_inf_allowed(Checkpoint *c, const char *name) {
    scalar_named(c, name, CKPT_F64)->allow_inf = true;
}
void ckpt_expect_at_most(Checkpoint *c, const char *name, const char *bound) {
    const CkptScalar *b = scalar_named(c, bound, CKPT_I64);
    scalar_named(c, name, CKPT_I64)->not_above = (int)(b - c->scalars);
}
void ckpt_expect_f64_at_least(Checkpoint *c, const char *name, double min) {
    CHECK(!isnan(min), "ckpt_expect_f64_at_least('%s', NaN)", name);
    scalar_named(c, name, CKPT_F64)->fmin = min;
}
void ckpt_ignore_unknown(Checkpoint *c, const char *prefix) {
    CHECK(prefix && prefix[0], "ckpt_ignore_unknown with an empty prefix: it would skip anything");
    c->ignore_prefix = prefix;
}
void ckpt_expect_optional(Checkpoint *c, const char *name, bool *found) {
    CHECK(found != NULL, "ckpt_expect_optional('%s') without a flag to set", name);
    scalar_named(c, name, (CkptType)0)->found = found;
}

/* Whether a loaded value meets its scalar's limits; else a message in err. */
static int check_value(const CkptScalar *s, uint64_t bits, const char *src, CkptError *err) {
    if (s->type == CKPT_I64) {
        int64_t v;
        memcpy(&v, &bits, 8);
        if (v < s->min || v > s->max)
            return ckpt_error(err, "checkpoint %s: '%s' is %lld, outside %lld..%lld: the file "
                                   "passed its checksum but its writer stored a wrong value. "
                                   FIX_DAMAGED ".", src, s->name, (long long)v, (long long)s->min,
                              (long long)s->max);
    } else if (s->type == CKPT_U64) {
        if (s->odd && bits % 2 == 0)
            return ckpt_error(err, "checkpoint %s: '%s' is %llu, but it must be odd (a random "
                                   "number generator's increment). " FIX_DAMAGED ".", src, s->name,
                              (unsigned long long)bits);
    } else {
        double v;
        memcpy(&v, &bits, 8);
        if (isnan(v) || (isinf(v) && !s->allow_inf))
            return ckpt_error(err, "checkpoint %s: '%s' is %g, not a finite number. " FIX_DAMAGED ".",
                              src, s->name, v);
        if (v < s->fmin)
            return ckpt_error(err, "checkpoint %s: '%s' is %g, below %g: the file passed its "
                                   "checksum but its writer stored a wrong value. " FIX_DAMAGED ".",
                              src, s->name, v, s->fmin);
    }
    return 0;
}

void ckpt_add_i64(Checkpoint *c, const char *name, int64_t *v) { add_scalar(c, name, CKPT_I64, v); }
void ckpt_add_u64(Checkpoint *c, const char *name, uint64_t *v) { add_scalar(c, name, CKPT_U64, v); }
void ckpt_add_f64(Checkpoint *c, const char *name, double *v) { add_scalar(c, name, CKPT_F64, v); }

void ckpt_free(Checkpoint *c) {
    xfree(c->tensors);
    xfree(c->scalars);
    memset(c, 0, sizeof *c);
}

static void add_prefixed(Checkpoint *c, const char *prefix, const char *name, const Tensor *t) {
    char full[CKPT_NAME_MAX];
    int n = snprintf(full, sizeof full, "%s.%s", prefix, name);
    CHECK(n > 0 && n < (int)sizeof full, "checkpoint name %s.%s too long", prefix, name);
    ckpt_add_tensor(c, full, t);
}

void ckpt_add_params(Checkpoint *c, const char *prefix, ParamList *params) {
    for (int i = 0; i < params->count; i++)
        add_prefixed(c, prefix, params->items[i]->name, &params->items[i]->value);
}

/* Parameter p's part of a flat optimiser state, in p's shape. */
static Tensor state_of(const Tensor *state, const Param *p) {
    Tensor t = p->value;
    t.data = state->data + p->offset;
    t.device = state->device;
    return t;
}

static void check_state(const Tensor *state, const ParamList *params, const char *what) {
    CHECK(state->size == params->total, "%s: optimiser state of %lld values for %lld parameters",
          what, (long long)state->size, (long long)params->total);
}

/* adam.m.NAME, adam.v.NAME, parameter after parameter (the order of the files that
 * per-parameter state wrote before the state was one buffer: the same bytes). */
void ckpt_add_adam(Checkpoint *c, Adam *opt, const ParamList *params) {
    check_state(&opt->m, params, "Adam");
    for (int i = 0; i < params->count; i++) {
        const Param *p = params->items[i];
        Tensor m = state_of(&opt->m, p), v = state_of(&opt->v, p);
        add_prefixed(c, "adam.m", p->name, &m);
        add_prefixed(c, "adam.v", p->name, &v);
    }
    ckpt_add_i64(c, "adam.step", &opt->step);
}

void ckpt_add_sgd(Checkpoint *c, Sgd *opt, const ParamList *params) {
    check_state(&opt->buf, params, "SGD");
    for (int i = 0; i < params->count; i++) {
        Tensor b = state_of(&opt->buf, params->items[i]);
        add_prefixed(c, "sgd.momentum", params->items[i]->name, &b);
    }
    ckpt_add_i64(c, "sgd.step", &opt->step);
}

/* ------------------------------------------------------------ little-endian bytes */

/* The format is little-endian and floats are copied as they are in memory. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints are written with the host's byte order, which must be little-endian"
#endif

static uint64_t load_le(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static void store_le(uint8_t *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++, v >>= 8) p[i] = (uint8_t)v;
}

static uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ------------------------------------------------------------ the hash */

static const uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL,
                      P3 = 0x165667B19E3779F9ULL;

static uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t mix_word(uint64_t acc, uint64_t w) { return rotl64(acc + w * P2, 31) * P1; }

uint64_t ckpt_hash64(const void *data, size_t len, uint64_t seed) {
    const uint8_t *p = data;
    size_t i = 0;
    /* four independent lanes: the multiplications overlap, about 1 byte per cycle */
    uint64_t a = seed + P1 + P2, b = seed + P2, c = seed, d = seed - P1;
    for (; i + 32 <= len; i += 32) {
        a = mix_word(a, load64(p + i));
        b = mix_word(b, load64(p + i + 8));
        c = mix_word(c, load64(p + i + 16));
        d = mix_word(d, load64(p + i + 24));
    }
    uint64_t h = rotl64(a, 1) + rotl64(b, 7) + rotl64(c, 12) + rotl64(d, 18) + (uint64_t)len * P3;
    for (; i + 8 <= len; i += 8) h = rotl64(h ^ mix_word(0, load64(p + i)), 27) * P1 + P3;
    for (; i < len; i++) h = rotl64(h ^ (p[i] * P3), 11) * P1;
    /* final mixing (SplitMix64's): every input bit reaches every output bit */
    h ^= h >> 30;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 27;
    h *= 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
}

uint64_t params_digest(const ParamList *params) {
    const bool on_cpu = params->values.device == DEVICE_CPU;
    Tensor host = on_cpu ? params->values : tensor_to(&params->values, DEVICE_CPU);
    uint64_t h = 0; /* one hash per parameter, chained: the digests of earlier versions */
    for (int i = 0; i < params->count; i++) {
        const Param *p = params->items[i];
        h = ckpt_hash64(host.data + p->offset, (size_t)p->value.size * 4, h);
    }
    if (!on_cpu) tensor_free(&host);
    return h;
}

/* ------------------------------------------------------------ encode */

static const uint8_t MAGIC[8] = {0x89, 'C', 'K', 'P', '\r', '\n', 0x1a, '\n'};
enum { HEADER_SIZE = 32, TYPE_F32 = 1 };

size_t ckpt_encoded_size(const Checkpoint *c) {
    size_t size = HEADER_SIZE + 8 + ckpt_meta_size(); /* + the image, inside one */
    for (int i = 0; i < c->ntensors; i++) {
        const Tensor *t = &c->tensors[i].tensor;
        size += 2 + strlen(c->tensors[i].name) + 2 + 4 * (size_t)t->ndim + 4 * (size_t)t->size;
    }
    for (int i = 0; i < c->nscalars; i++) size += 2 + strlen(c->scalars[i].name) + 1 + 8;
    return size;
}

void ckpt_encode(const Checkpoint *c, uint8_t **buf, size_t *len) {
    size_t size = ckpt_encoded_size(c);

    uint8_t *b = xmalloc(size), *p = b;
    memcpy(p, MAGIC, 8);
    store_le(p + 8, CKPT_VERSION, 4);
    store_le(p + 12, HEADER_SIZE, 4);
    store_le(p + 16, size, 8);
    store_le(p + 24, (uint64_t)c->ntensors, 4);
    store_le(p + 28, (uint64_t)c->nscalars + ckpt_meta_count(), 4);
    p += HEADER_SIZE;
    for (int i = 0; i < c->ntensors; i++) {
        const Tensor *t = &c->tensors[i].tensor;
        size_t n = strlen(c->tensors[i].name);
        store_le(p, n, 2);
        memcpy(p + 2, c->tensors[i].name, n);
        p += 2 + n;
        *p++ = (uint8_t)t->ndim;
        *p++ = TYPE_F32;
        for (int k = 0; k < t->ndim; k++, p += 4) store_le(p, (uint64_t)t->shape[k], 4);
        device_copy(p, DEVICE_CPU, t->data, t->device, 4 * (size_t)t->size); /* from a GPU too */
        p += 4 * (size_t)t->size;
    }
    for (int i = 0; i < c->nscalars; i++) {
        const CkptScalar *s = &c->scalars[i];
        size_t n = strlen(s->name);
        store_le(p, n, 2);
        memcpy(p + 2, s->name, n);
        p += 2 + n;
        *p++ = (uint8_t)s->type;
        uint64_t bits;
        memcpy(&bits, s->value, 8); /* int64, uint64 and double: 8 bytes each */
        store_le(p, bits, 8);
        p += 8;
    }
    p = ckpt_meta_write(p); /* train/checkpoint_meta.h */
    store_le(p, ckpt_hash64(b, size - 8, 0), 8);
    CHECK(p + 8 == b + size, "checkpoint size computed as %zu, wrote %zu", size,
          (size_t)(p + 8 - b));
    *buf = b;
    *len = size;
}

/* ------------------------------------------------------------ decode */

int ckpt_error(CkptError *err, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A bounds-checked cursor: a read past the end sets bad and returns zeros. */
typedef struct {
    const uint8_t *p;
    size_t len, pos;
    bool bad;
} Reader;

static const uint8_t *take(Reader *r, size_t n) {
    if (r->bad || n > r->len - r->pos) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *q = r->p + r->pos;
    r->pos += n;
    return q;
}

static uint64_t take_le(Reader *r, int bytes) {
    const uint8_t *q = take(r, (size_t)bytes);
    return q ? load_le(q, bytes) : 0;
}

/* Reads a name into out; false when it is not 1..63 printable characters. */
static bool take_name(Reader *r, char out[CKPT_NAME_MAX]) {
    size_t n = take_le(r, 2);
    const uint8_t *q = (n > 0 && n < CKPT_NAME_MAX) ? take(r, n) : NULL;
    if (!q) return false;
    for (size_t i = 0; i < n; i++)
        if (q[i] < 0x20 || q[i] > 0x7e) return false;
    memcpy(out, q, n);
    out[n] = '\0';
    return true;
}

static const char *shape_str(int ndim, const uint32_t *shape, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int k = 0; k < ndim && used < cap; k++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%u", k ? ", " : "", shape[k]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

int ckpt_check_header(const uint8_t *head, size_t head_len, uint64_t file_size, uint64_t max_size,
                      const char *source, CkptError *err) {
    const char *src = source ? source : "(memory)";
    const unsigned long long n = (unsigned long long)file_size;
    if (file_size == 0)
        return ckpt_error(err, "checkpoint %s is empty (0 bytes): it was never written. " FIX_DAMAGED ".",
                          src);
    if (head_len < 8 || memcmp(head, MAGIC, 8) != 0)
        return ckpt_error(err, "%s is not a checkpoint of this course (its first bytes are not the "
                               "checkpoint magic number): another program's file? " FIX_FOREIGN ".", src);
    if (head_len < HEADER_SIZE)
        return ckpt_error(err, "checkpoint %s is truncated: only %llu bytes, less than its %d-byte "
                               "header (the write was cut short). " FIX_DAMAGED ".", src, n, HEADER_SIZE);
    uint32_t version = (uint32_t)load_le(head + 8, 4);
    if (version != CKPT_VERSION)
        return ckpt_error(err, "checkpoint %s has format version %u; this program reads version %d. "
                               "Resume with the program that wrote it, or start afresh in a new "
                               "--checkpoint-dir.", src, version, CKPT_VERSION);
    uint64_t size = load_le(head + 16, 8);
    if (load_le(head + 12, 4) != HEADER_SIZE || size < HEADER_SIZE + 8)
        return ckpt_error(err, "checkpoint %s has a damaged header. " FIX_DAMAGED ".", src);
    if (file_size < size)
        return ckpt_error(err, "checkpoint %s is truncated: %llu of its %llu bytes are there (the write "
                               "was cut short: killed, disk full or over quota?). " FIX_DAMAGED ".",
                          src, n, (unsigned long long)size);
    if (file_size > size)
        return ckpt_error(err, "checkpoint %s has %llu bytes but its header says %llu: something was "
                               "appended or the header is damaged. " FIX_DAMAGED ".",
                          src, n, (unsigned long long)size);
    if (max_size && size > max_size)
        return ckpt_error(err, "checkpoint %s is %llu bytes, far more than the %llu this program's "
                               "model and optimiser make: written by a larger model? " FIX_FOREIGN ".",
                          src, n, (unsigned long long)max_size);
    return 0;
}

/* Checks the header, the size and the checksum. */
static int check_envelope(const uint8_t *buf, size_t len, const char *src, CkptError *err) {
    if (ckpt_check_header(buf, len, len, 0, src, err) != 0) return -1;
    const uint64_t size = len;
    uint64_t stored = load_le(buf + size - 8, 8), actual = ckpt_hash64(buf, size - 8, 0);
    if (stored != actual)
        return ckpt_error(err, "checkpoint %s is damaged: its checksum does not match its contents "
                               "(stored %016llx, computed %016llx; a bit flip, a torn write or a "
                               "broken copy). " FIX_DAMAGED ".", src, (unsigned long long)stored,
                          (unsigned long long)actual);
    return 0;
}

/* Where each manifest entry's data sits in the buffer, found before anything is
 * copied: arrays of ntensors and nscalars entries. */
typedef struct {
    size_t *tensor_at, *scalar_at;
    bool *tensor_seen, *scalar_seen;
} Placement;

static int find_tensor(const Checkpoint *c, const char *name) {
    for (int i = 0; i < c->ntensors; i++)
        if (strcmp(c->tensors[i].name, name) == 0) return i;
    return -1;
}

static int find_scalar(const Checkpoint *c, const char *name) {
    for (int i = 0; i < c->nscalars; i++)
        if (strcmp(c->scalars[i].name, name) == 0) return i;
    return -1;
}

static int place_tensors(const Checkpoint *c, Reader *r, uint32_t count, Placement *pl,
                         const char *src, CkptError *err) {
    for (uint32_t e = 0; e < count; e++) {
        char name[CKPT_NAME_MAX];
        if (!take_name(r, name))
            return ckpt_error(err, "checkpoint %s: tensor %u has a damaged name. " FIX_DAMAGED ".", src, e);
        int ndim = (int)take_le(r, 1), type = (int)take_le(r, 1);
        uint32_t shape[TENSOR_MAX_DIMS] = {0};
        if (r->bad || ndim < 1 || ndim > TENSOR_MAX_DIMS || type != TYPE_F32)
            return ckpt_error(err, "checkpoint %s: tensor '%s' has %d dimensions of type %d (1 to %d "
                                   "dimensions of float32 expected). " FIX_DAMAGED ".",
                              src, name, ndim, type, TENSOR_MAX_DIMS);
        uint64_t count_values = 1;
        for (int k = 0; k < ndim; k++) {
            shape[k] = (uint32_t)take_le(r, 4);
            count_values *= shape[k];
            if (count_values > r->len) count_values = r->len + 1; /* no overflow: too big anyway */
        }
        char sf[96], sm[96];
        shape_str(ndim, shape, sf, sizeof sf);
        int i = find_tensor(c, name);
        if (i < 0)
            return ckpt_error(err, "checkpoint %s holds tensor '%s' %s, which this program does not "
                                   "have: it was written by another program, model or optimiser. "
                                   FIX_FOREIGN ".", src, name, sf);
        if (pl->tensor_seen[i])
            return ckpt_error(err, "checkpoint %s holds tensor '%s' twice. " FIX_DAMAGED ".", src, name);
        const Tensor *t = &c->tensors[i].tensor;
        uint32_t want[TENSOR_MAX_DIMS];
        for (int k = 0; k < t->ndim; k++) want[k] = (uint32_t)t->shape[k];
        shape_str(t->ndim, want, sm, sizeof sm);
        if (strcmp(sf, sm) != 0)
            return ckpt_error(err, "checkpoint %s: tensor '%s' is %s in the file but %s in this program: "
                                   "it was written for another model or data set (--dataset?). "
                                   FIX_FOREIGN ".", src, name, sf, sm);
        pl->tensor_seen[i] = true;
        pl->tensor_at[i] = r->pos;
        if (!take(r, 4 * (size_t)count_values))
            return ckpt_error(err, "checkpoint %s: tensor '%s' runs past the end of the file. "
                                   FIX_DAMAGED ".", src, name);
    }
    return 0;
}

static int place_scalars(const Checkpoint *c, Reader *r, uint32_t count, Placement *pl,
                         const char *src, CkptError *err) {
    for (uint32_t e = 0; e < count; e++) {
        char name[CKPT_NAME_MAX];
        if (!take_name(r, name))
            return ckpt_error(err, "checkpoint %s: scalar %u has a damaged name. " FIX_DAMAGED ".", src, e);
        int type = (int)take_le(r, 1);
        int i = find_scalar(c, name);
        if (i < 0 && ckpt_meta_name(name, type) && take(r, 8)) continue; /* metadata */
        if (i < 0 && c->ignore_prefix && strncmp(name, c->ignore_prefix, strlen(c->ignore_prefix)) == 0 &&
            take(r, 8))
            continue; /* state this reader does without */
        if (i < 0)
            return ckpt_error(err, "checkpoint %s holds '%s', which this program does not have: it was "
                                   "written by another program. " FIX_FOREIGN ".", src, name);
        if (pl->scalar_seen[i])
            return ckpt_error(err, "checkpoint %s holds '%s' twice. " FIX_DAMAGED ".", src, name);
        if (type != (int)c->scalars[i].type) { /* a damaged type byte may be 0: shown in hex */
            char shown[8];
            snprintf(shown, sizeof shown, type > ' ' && type < 127 ? "'%c'" : "0x%02x", type);
            return ckpt_error(err, "checkpoint %s: '%s' has type %s in the file but '%c' in this "
                                   "program. " FIX_FOREIGN ".", src, name, shown, c->scalars[i].type);
        }
        pl->scalar_seen[i] = true;
        pl->scalar_at[i] = r->pos;
        if (!take(r, 8))
            return ckpt_error(err, "checkpoint %s: '%s' runs past the end of the file. " FIX_DAMAGED ".",
                              src, name);
        if (check_value(&c->scalars[i], load_le(r->p + pl->scalar_at[i], 8), src, err) != 0)
            return -1;
    }
    return 0;
}

int ckpt_decode(const Checkpoint *c, const uint8_t *buf, size_t len, const char *source,
                CkptError *err) {
    const char *src = source ? source : "(memory)";
    if (check_envelope(buf, len, src, err) != 0) return -1;
    Reader r = {.p = buf, .len = len - 8, .pos = HEADER_SIZE}; /* the checksum is not data */
    uint32_t ntensors = (uint32_t)load_le(buf + 24, 4), nscalars = (uint32_t)load_le(buf + 28, 4);
    Placement place = {
        xcalloc((size_t)c->ntensors + 1, sizeof(size_t)), xcalloc((size_t)c->nscalars + 1, sizeof(size_t)),
        xcalloc((size_t)c->ntensors + 1, sizeof(bool)), xcalloc((size_t)c->nscalars + 1, sizeof(bool))};
    Placement *pl = &place;
    int rc = place_tensors(c, &r, ntensors, pl, src, err);
    if (rc == 0) rc = place_scalars(c, &r, nscalars, pl, src, err);
    if (rc == 0 && r.pos != r.len)
        rc = ckpt_error(err, "checkpoint %s has %zu stray bytes after its last entry. " FIX_DAMAGED ".",
                        src, r.len - r.pos);
    for (int i = 0; rc == 0 && i < c->ntensors; i++)
        if (!pl->tensor_seen[i])
            rc = ckpt_error(err, "checkpoint %s lacks tensor '%s', which this program needs (written "
                                 "without optimiser state, or by another model or optimiser?). "
                                 FIX_FOREIGN ".", src, c->tensors[i].name);
    for (int i = 0; rc == 0 && i < c->nscalars; i++)
        if (!pl->scalar_seen[i] && !c->scalars[i].found)
            rc = ckpt_error(err, "checkpoint %s lacks '%s', which this program needs (written by "
                                 "another program?). " FIX_FOREIGN ".", src, c->scalars[i].name);
    for (int i = 0; rc == 0 && i < c->nscalars; i++) { /* limits between two values */
        const CkptScalar *s = &c->scalars[i];
        if (s->not_above < 0 || !pl->scalar_seen[i] || !pl->scalar_seen[s->not_above]) continue;
        const int64_t v = (int64_t)load_le(buf + pl->scalar_at[i], 8);
        const int64_t bound = (int64_t)load_le(buf + pl->scalar_at[s->not_above], 8);
        if (v > bound)
            rc = ckpt_error(err, "checkpoint %s: '%s' is %lld, above '%s' (%lld): the file passed "
                                 "its checksum but its writer stored a wrong value. " FIX_DAMAGED ".",
                            src, s->name, (long long)v, c->scalars[s->not_above].name, (long long)bound);
    }
    if (rc == 0) { /* all good: only now change the program's variables */
        for (int i = 0; i < c->ntensors; i++)
            device_copy(c->tensors[i].tensor.data, c->tensors[i].tensor.device,
                        buf + pl->tensor_at[i], DEVICE_CPU, 4 * (size_t)c->tensors[i].tensor.size);
        for (int i = 0; i < c->nscalars; i++) {
            if (c->scalars[i].found) *c->scalars[i].found = pl->scalar_seen[i];
            if (!pl->scalar_seen[i]) continue; /* an optional one the file lacks */
            uint64_t bits = load_le(buf + pl->scalar_at[i], 8);
            memcpy(c->scalars[i].value, &bits, 8);
        }
    }
    xfree(place.tensor_at);
    xfree(place.scalar_at);
    xfree(place.tensor_seen);
    xfree(place.scalar_seen);
    return rc;
}
