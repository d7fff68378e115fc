/* Unit tests of lib/train/checkpoint: the round trip (bit for bit, special floats
 * too), every kind of damage (empty, foreign, other version, truncated at every
 * length, appended, any flipped byte, other shapes, missing and extra entries),
 * that a failed load changes neither the variables nor the file, garbage with a
 * valid header and checksum (the parser on its own), keep-K rotation and the best
 * checkpoint, falling back to an older checkpoint, the atomic write killed halfway,
 * the fatal wrappers, the hash, and the training data's fingerprint. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/check.h"
#include "core/timer.h"
#include "framework/check.h"
#include "fuzz/seed.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "models/cnn.h"
#include "models/transformer.h"
#include "train/checkpoint_store.h"
#include "train/train_state.h"

/* ------------------------------------------------------------ a state to save */

typedef struct {
    ParamList params;
    Adam adam;
    Sgd sgd;
    TrainState ts;
    int64_t extra;
    Checkpoint c;
} State;

/* Two parameters, Adam and SGD state, the training state and one extra scalar, all
 * filled from seed. shape0 changes the first parameter's shape (a "different model"). */
static void state_init(State *s, uint64_t seed, int shape0) {
    memset(s, 0, sizeof *s);
    params_add(&s->params, "conv.weight", 4, (int[]){shape0, 2, 3, 3});
    params_add(&s->params, "fc.bias", 1, (int[]){7});
    params_allocate(&s->params);
    adam_init(&s->adam, &s->params, 0.01f);
    sgd_init(&s->sgd, &s->params, 0.1f, 0.9f, 0.0f);
    ckpt_add_params(&s->c, "model", &s->params);
    ckpt_add_adam(&s->c, &s->adam, &s->params);
    ckpt_add_sgd(&s->c, &s->sgd, &s->params);
    ckpt_add_train_state(&s->c, &s->ts);
    ckpt_add_i64(&s->c, "extra.counter", &s->extra);
    const int64_t n = s->params.total;
    fill_uniform(s->params.values.data, n, seed, -1, 1);
    fill_uniform(s->adam.m.data, n, seed + 10, -1, 1);
    fill_uniform(s->adam.v.data, n, seed + 20, 0, 1);
    fill_uniform(s->sgd.buf.data, n, seed + 30, -1, 1);
    s->adam.step = (int64_t)seed;
    s->sgd.step = (int64_t)seed + 1;
    s->ts = (TrainState){.epoch = 3, .step = (int64_t)seed % 11, .global_step = (int64_t)seed * 7,
                         .rng_state = 0xFEDCBA9876543210ULL ^ seed, .rng_inc = 2 * seed + 1,
                         .sampler_seed = seed, .sampler_epoch = 3, .sampler_position = 40,
                         .sampler_count = 100, .loss_sum = seed / 3.0, .examples = 40,
                         .best_metric = -INFINITY, .best_epoch = 0};
    s->extra = -(int64_t)seed;
}

/* Frees what state_init allocated: the manifest, the optimisers' state, the parameters. */
static void state_free(State *s) {
    ckpt_free(&s->c);
    adam_free(&s->adam);
    sgd_free(&s->sgd);
    params_free(&s->params);
}

/* Everything the manifest points at, as bytes (encode is itself tested by the round trip). */
static uint64_t state_hash(const State *s) {
    uint8_t *buf;
    size_t len;
    ckpt_encode(&s->c, &buf, &len);
    uint64_t h = ckpt_hash64(buf, len, 3);
    xfree(buf);
    return h;
}

static uint64_t file_hash(const char *path) {
    uint8_t *buf;
    size_t len;
    CkptError err;
    if (ckpt_read_file(path, &buf, &len, &err) != 0) return 0;
    uint64_t h = ckpt_hash64(buf, len, 5);
    xfree(buf);
    return h;
}

static bool write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(data, 1, len, f) == len;
    if (f) ok = fclose(f) == 0 && ok;
    return ok;
}

/* ------------------------------------------------------------ round trip */

static int body_round_trip(const char *dir) {
    State a, b;
    state_init(&a, 17, 4);
    state_init(&b, 99, 4);
    /* floats that a careless text or double round trip would change */
    float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-45f, 3.4028235e38f, 0.1f};
    memcpy(a.params.items[1]->value.data, special, sizeof special);
    char path[512];
    path_in(path, sizeof path, dir, "a.ckpt");
    CkptError err;
    bool ok = expect_true(ckpt_save(&a.c, path, &err) == 0, "save: %s", err.msg);
    struct stat st;
    ok = ok && expect_true(stat(path, &st) == 0 && (size_t)st.st_size == ckpt_encoded_size(&a.c),
                           "file size %lld, ckpt_encoded_size %zu", (long long)st.st_size,
                           ckpt_encoded_size(&a.c));
    ok = ok && expect_true(ckpt_load(&b.c, path, &err) == 0, "load: %s", err.msg);
    ok = ok && expect_true(state_hash(&a) == state_hash(&b), "the loaded state differs from the saved one");
    ok = ok && expect_true(memcmp(a.params.items[1]->value.data, b.params.items[1]->value.data,
                                  sizeof special) == 0, "NaN, inf, -0 or denormals changed");
    ok = ok && expect_true(isinf(b.ts.best_metric) && b.ts.best_metric < 0 && b.adam.step == 17 &&
                               b.sgd.step == 18 && b.extra == -17 && b.ts.rng_state == a.ts.rng_state,
                           "scalars not restored");
    ok = ok && expect_true(params_digest(&a.params) == params_digest(&b.params), "digests differ");
    state_free(&a);
    state_free(&b);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_round_trip(void) { return with_tmpdir("test_ckpt", body_round_trip); }

static int check_encode_deterministic(void) {
    State a, b;
    state_init(&a, 5, 4);
    state_init(&b, 5, 4);
    uint8_t *x, *y;
    size_t nx, ny;
    ckpt_encode(&a.c, &x, &nx);
    ckpt_encode(&b.c, &y, &ny);
    bool ok = expect_true(nx == ny && memcmp(x, y, nx) == 0, "the same state encodes differently") &&
              expect_true(nx == ckpt_encoded_size(&a.c), "encoded %zu bytes, size says %zu", nx,
                          ckpt_encoded_size(&a.c));
    xfree(x);
    xfree(y);
    state_free(&a);
    state_free(&b);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ damage */

/* Decoding buf must fail with a message containing want, and change nothing. */
static bool expect_rejected(const char *what, const uint8_t *buf, size_t len, const char *want) {
    State s;
    state_init(&s, 77, 4);
    uint64_t before = state_hash(&s);
    CkptError err = {{0}};
    int rc = ckpt_decode(&s.c, buf, len, "test.ckpt", &err);
    bool ok = expect_true(rc == -1, "%s: decode returned %d, expected -1", what, rc) &&
              expect_true(!want || strstr(err.msg, want), "%s: the message lacks \"%s\": %s", what,
                          want ? want : "", err.msg) &&
              expect_true(strstr(err.msg, "test.ckpt") != NULL, "%s: the message does not name "
                          "the file: %s", what, err.msg) &&
              expect_true(state_hash(&s) == before, "%s: a failed load changed the variables", what);
    state_free(&s);
    return ok;
}

static void good_bytes(uint8_t **buf, size_t *len) {
    State s;
    state_init(&s, 11, 4);
    ckpt_encode(&s.c, buf, len);
    state_free(&s);
    fuzz_seed_save("ckpt", *buf, *len);
}

/* Values no run can have had, behind a valid checksum: each refused by name, nothing
 * changed (and a store falls back past such a file like past any damage). */
static int check_impossible_values(void) {
    const struct {
        const char *name, *want;
    } cases[] = {{"train.epoch", "outside 1.."}, {"sampler.position", "outside 0.."},
                 {"rng.inc", "must be odd"}, {"train.loss_sum", "not a finite number"},
                 {"sampler.position", "is 500, above 'sampler.count' (200)"}};
    bool ok = true;
    for (int k = 0; k < 5 && ok; k++) {
        State s;
        state_init(&s, 11, 4);
        if (k == 0) s.ts.epoch = -3;
        if (k == 1) s.ts.sampler_position = -1;
        if (k == 2) s.ts.rng_inc = 0;
        if (k == 3) s.ts.loss_sum = NAN;
        if (k == 4) s.ts.sampler_position = 500, s.ts.sampler_count = 200;
        uint8_t *buf;
        size_t len;
        ckpt_encode(&s.c, &buf, &len);
        state_free(&s);
        char what[96];
        snprintf(what, sizeof what, "%s out of its range", cases[k].name);
        ok = expect_rejected(what, buf, len, cases[k].name) &&
             expect_rejected(what, buf, len, cases[k].want);
        xfree(buf);
    }
    /* a type byte of 0 (valid checksum): named in hex, the message not cut short */
    {
        State z;
        state_init(&z, 11, 4);
        uint8_t *zb;
        size_t zlen;
        ckpt_encode(&z.c, &zb, &zlen);
        state_free(&z);
        const uint8_t *at = memmem(zb, zlen, "extra.counter", 13);
        if (!expect_true(at != NULL, "test setup: no 'extra.counter' in the file")) {
            xfree(zb);
            return CHECK_FAIL;
        }
        zb[at - zb + 13] = 0;
        uint64_t sum = ckpt_hash64(zb, zlen - 8, 0);
        for (int k = 0; k < 8; k++) zb[zlen - 8 + k] = (uint8_t)(sum >> (8 * k));
        ok = ok && expect_rejected("type byte 0", zb, zlen, "has type 0x00 in the file") &&
             expect_rejected("type byte 0", zb, zlen, "Resume with the program");
        xfree(zb);
    }
    /* -infinity is best.metric's "no evaluation yet": accepted */
    State s, t;
    state_init(&s, 11, 4);
    state_init(&t, 12, 4);
    s.ts.best_metric = -INFINITY;
    uint8_t *buf;
    size_t len;
    ckpt_encode(&s.c, &buf, &len);
    CkptError err = {{0}};
    ok = ok && expect_true(ckpt_decode(&t.c, buf, len, "test.ckpt", &err) == 0 &&
                               isinf(t.ts.best_metric), "best.metric = -inf refused: %s", err.msg);
    xfree(buf);
    state_free(&s);
    state_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_empty_foreign_version(void) {
    uint8_t *buf;
    size_t len;
    good_bytes(&buf, &len);
    const char *text = "epoch,loss\n1,0.5\n";
    bool ok = expect_rejected("empty", buf, 0, "empty") &&
              expect_rejected("a CSV file", (const uint8_t *)text, strlen(text), "not a checkpoint");
    buf[8] = 2; /* version 2 */
    ok = ok && expect_rejected("version 2", buf, len, "format version 2");
    xfree(buf);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_truncated(void) {
    uint8_t *buf;
    size_t len;
    good_bytes(&buf, &len);
    bool ok = true;
    for (size_t n = 1; n < len && ok; n += (n < 64 ? 1 : 97)) {
        char what[64];
        snprintf(what, sizeof what, "cut to %zu of %zu bytes", n, len);
        ok = expect_rejected(what, buf, n, n < 8 ? "not a checkpoint" : "truncated");
    }
    ok = ok && expect_rejected("one byte short", buf, len - 1, "truncated");
    uint8_t *longer = xcalloc(len + 3, 1);
    memcpy(longer, buf, len);
    ok = ok && expect_rejected("3 bytes appended", longer, len + 3, "header says");
    xfree(longer);
    xfree(buf);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Every byte flipped in turn (a sample of them in the data): always rejected. */
static int check_flipped_bytes(void) {
    uint8_t *buf;
    size_t len;
    good_bytes(&buf, &len);
    bool ok = true;
    for (size_t i = 0; i < len && ok; i += (i < 400 || i > len - 400 ? 1 : 61)) {
        buf[i] ^= 0x04;
        char what[64];
        snprintf(what, sizeof what, "byte %zu of %zu flipped", i, len);
        ok = expect_rejected(what, buf, len, NULL);
        buf[i] ^= 0x04;
    }
    buf[len / 2] ^= 1;
    ok = ok && expect_rejected("a bit flipped in the data", buf, len, "checksum");
    xfree(buf);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_mismatched(void) {
    uint8_t *buf;
    size_t len;
    good_bytes(&buf, &len); /* conv.weight [4, 2, 3, 3] */
    State other;
    state_init(&other, 1, 5); /* [5, 2, 3, 3]: another model */
    CkptError err;
    bool ok = expect_true(ckpt_decode(&other.c, buf, len, "x.ckpt", &err) == -1 &&
                              strstr(err.msg, "[4, 2, 3, 3] in the file but [5, 2, 3, 3]"),
                          "another shape: %s", err.msg);
    /* a program that expects one more entry: "lacks" */
    State more;
    state_init(&more, 1, 4);
    int64_t spare = 0;
    ckpt_add_i64(&more.c, "extra.spare", &spare);
    uint64_t before = state_hash(&more);
    ok = ok && expect_true(ckpt_decode(&more.c, buf, len, "x.ckpt", &err) == -1 &&
                               strstr(err.msg, "lacks 'extra.spare'"), "a missing entry: %s", err.msg) &&
         expect_true(state_hash(&more) == before, "a failed load changed the variables");
    /* a program without SGD: the file's sgd tensors are foreign to it */
    State fewer;
    memset(&fewer, 0, sizeof fewer);
    params_add(&fewer.params, "conv.weight", 4, (int[]){4, 2, 3, 3});
    params_add(&fewer.params, "fc.bias", 1, (int[]){7});
    params_allocate(&fewer.params);
    adam_init(&fewer.adam, &fewer.params, 0.01f);
    ckpt_add_params(&fewer.c, "model", &fewer.params);
    ckpt_add_adam(&fewer.c, &fewer.adam, &fewer.params);
    ok = ok && expect_true(ckpt_decode(&fewer.c, buf, len, "x.ckpt", &err) == -1 &&
                               strstr(err.msg, "'sgd.momentum.conv.weight'") &&
                               strstr(err.msg, "does not have"), "an extra entry: %s", err.msg);
    /* a scalar of another type */
    Checkpoint typed = {0};
    double as_double = 0;
    State t;
    state_init(&t, 1, 4);
    typed = t.c;
    for (int i = 0; i < typed.nscalars; i++)
        if (strcmp(typed.scalars[i].name, "extra.counter") == 0) {
            typed.scalars[i].type = CKPT_F64;
            typed.scalars[i].value = &as_double;
        }
    ok = ok && expect_true(ckpt_decode(&typed, buf, len, "x.ckpt", &err) == -1 &&
                               strstr(err.msg, "type 'i' in the file but 'f'"), "another type: %s",
                           err.msg);
    state_free(&t); /* typed was a copy of t.c: freed with it */
    ckpt_free(&fewer.c);
    adam_free(&fewer.adam);
    params_free(&fewer.params);
    state_free(&more);
    state_free(&other);
    xfree(buf);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Random bodies behind a valid header and a valid checksum: only the parser stands
 * between them and the variables. Run under ASan by make asan-tests. */
static int check_garbage(void) {
    Rng rng;
    rng_seed(&rng, 2024, 0);
    uint8_t *good;
    size_t good_len;
    good_bytes(&good, &good_len);
    bool ok = true;
    for (int trial = 0; trial < 3000 && ok; trial++) {
        size_t len = 40 + rng_below(&rng, 600);
        uint8_t *buf = xmalloc(len);
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rng_u32(&rng);
        if (trial % 2) { /* half: a real start (header, first names), random after */
            size_t keep = 32 + rng_below(&rng, (uint32_t)(len - 39)); /* 32..len-8 */
            memcpy(buf, good, keep);
        } else {
            memcpy(buf, good, 32);
            buf[24] = (uint8_t)rng_below(&rng, 4); /* few entries: deeper into the parser */
            buf[25] = buf[26] = buf[27] = 0;
        }
        for (int k = 0; k < 8; k++) buf[16 + k] = (uint8_t)((uint64_t)len >> (8 * k));
        uint64_t h = ckpt_hash64(buf, len - 8, 0);
        for (int k = 0; k < 8; k++) buf[len - 8 + k] = (uint8_t)(h >> (8 * k));
        ok = expect_rejected("random contents with a valid checksum", buf, len, NULL);
        xfree(buf);
    }
    for (int trial = 0; trial < 2000 && ok; trial++) { /* and plain random bytes */
        size_t len = rng_below(&rng, 200);
        uint8_t buf[200];
        for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rng_u32(&rng);
        if (len >= 8 && trial % 2) memcpy(buf, good, 8);
        ok = expect_rejected("random bytes", buf, len, NULL);
    }
    xfree(good);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int body_file_untouched(const char *dir) {
    uint8_t *buf;
    size_t len;
    good_bytes(&buf, &len);
    char path[512];
    path_in(path, sizeof path, dir, "bad.ckpt");
    buf[len - 100] ^= 0xff;
    bool written = write_file(path, buf, len);
    xfree(buf);
    if (!written) return CHECK_FAIL;
    uint64_t before = file_hash(path);
    struct stat st0, st1;
    stat(path, &st0);
    State s;
    state_init(&s, 3, 4);
    CkptError err;
    bool ok = expect_true(ckpt_load(&s.c, path, &err) == -1, "a damaged file loaded");
    stat(path, &st1);
    ok = ok && expect_true(file_hash(path) == before && st0.st_ino == st1.st_ino &&
                               st0.st_mtime == st1.st_mtime, "the damaged file changed on disk") &&
         expect_true(access(path, F_OK) == 0, "the damaged file was removed");
    path_in(path, sizeof path, dir, "missing.ckpt");
    ok = ok && expect_true(ckpt_load(&s.c, path, &err) == -1 && strstr(err.msg, "missing.ckpt"),
                           "a missing file: %s", err.msg);
    state_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_file_untouched(void) { return with_tmpdir("test_ckpt", body_file_untouched); }

/* ------------------------------------------------------------ the store */

static int count_files(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "exit $(ls -A '%s' | wc -l)", dir);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int body_rotation(const char *dir) {
    char sub[512], p[1024];
    path_in(sub, sizeof sub, dir, "run/a/b"); /* made by ckpt_store_init */
    CkptStore store;
    ckpt_store_init(&store, sub, 2);
    State s;
    state_init(&s, 1, 4);
    CkptError err;
    /* a writer killed earlier left these */
    path_in(p, sizeof p, sub, "ckpt-000000000003.ckpt.tmp");
    write_file(p, "x", 1);
    path_in(p, sizeof p, sub, "notes.txt"); /* not ours: stays */
    write_file(p, "keep me", 7);
    bool ok = expect_true(ckpt_store_save_best(&store, &s.c, &err) == 0, "best: %s", err.msg);
    for (int64_t step = 5; step <= 25 && ok; step += 5) {
        s.ts.global_step = step;
        char written[1024];
        ok = expect_true(ckpt_store_save(&store, &s.c, step, written, sizeof written, &err) == 0,
                         "save %lld: %s", (long long)step, err.msg);
        ckpt_store_path(&store, step, p, sizeof p);
        ok = ok && expect_true(strcmp(written, p) == 0, "path_out %s, expected %s", written, p);
    }
    int64_t steps[8];
    int n = ckpt_store_list(&store, steps, 8);
    ok = ok && expect_true(n == 2 && steps[0] == 25 && steps[1] == 20,
                           "after saves at 5..25 with keep 2: %d checkpoints (newest %lld)", n,
                           (long long)(n ? steps[0] : -1)) &&
         expect_true(count_files(sub) == 4, "expected the 2 newest, best.ckpt and notes.txt: %d "
                     "files (a leftover .tmp not removed?)", count_files(sub));
    ckpt_store_best_path(&store, p, sizeof p);
    ok = ok && expect_true(access(p, F_OK) == 0, "best.ckpt went with the rotation");
    path_in(p, sizeof p, sub, "ckpt-000000000009.ckpt.bak"); /* only exact names count */
    write_file(p, "x", 1);
    ok = ok && expect_true(ckpt_store_list(&store, steps, 8) == 2, "a .bak file was listed");
    state_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_rotation(void) { return with_tmpdir("test_ckpt", body_rotation); }

/* A run that resumed from an older checkpoint (the newer ones are damaged) saves a
 * step below theirs: the rotation must keep what it just wrote, and the older good
 * checkpoints before it, not the damaged newer ones. */
static int body_rotation_after_fallback(const char *dir) {
    CkptStore store;
    ckpt_store_init(&store, dir, 1);
    State s, t;
    state_init(&s, 3, 4);
    state_init(&t, 77, 4);
    CkptError err;
    char p[1024], got[1024];
    bool ok = expect_true(ckpt_store_save(&store, &s.c, 50, NULL, 0, &err) == 0, "save 50: %s", err.msg);
    ckpt_store_path(&store, 100, p, sizeof p); /* a torn newer checkpoint */
    write_file(p, "damaged", 7);
    state_free(&s);
    state_init(&s, 4, 4);
    uint64_t want = state_hash(&s);
    ok = ok && expect_true(ckpt_store_save(&store, &s.c, 60, NULL, 0, &err) == 0, "save 60: %s", err.msg);
    ckpt_store_path(&store, 60, p, sizeof p);
    ok = ok && expect_true(access(p, F_OK) == 0, "keep 1 with a damaged ckpt-100 present: the "
                           "rotation deleted the checkpoint it had just written (step 60)");
    ok = ok && expect_true(ckpt_store_load_latest(&store, &t.c, got, sizeof got, &err) == 1,
                           "no checkpoint loads after the save at step 60: %s", err.msg) &&
         expect_true(state_hash(&t) == want && strstr(got, "ckpt-000000000060.ckpt"),
                     "resumed from %s, expected step 60", got);
    state_free(&s);
    state_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_rotation_after_fallback(void) {
    return with_tmpdir("test_ckpt", body_rotation_after_fallback);
}

static int body_latest(const char *dir) {
    CkptStore store;
    ckpt_store_init(&store, dir, 3);
    State s, t;
    state_init(&s, 1, 4);
    state_init(&t, 50, 4);
    char got[1024], p[1024];
    CkptError err;
    bool ok = expect_true(ckpt_store_load_latest(&store, &t.c, got, sizeof got, &err) == 0,
                          "an empty directory did not return 0");
    uint64_t h[3];
    for (int k = 0; k < 3; k++) {
        state_free(&s);
        state_init(&s, 10 + (uint64_t)k, 4);
        h[k] = state_hash(&s);
        ckpt_store_save(&store, &s.c, 100 + k, NULL, 0, &err);
    }
    /* a FIFO named like the newest checkpoint: refused at once, never waited on */
    ckpt_store_path(&store, 103, p, sizeof p);
    if (mkfifo(p, 0600) != 0) return CHECK_FAIL;
    ok = ok && expect_true(ckpt_store_load_latest(&store, &t.c, got, sizeof got, &err) == 1 &&
                               strstr(got, "ckpt-000000000102.ckpt"),
                           "a FIFO named like the newest checkpoint: loaded %s, expected step 102",
                           got);
    unlink(p);
    ckpt_store_path(&store, 102, p, sizeof p);
    if (truncate(p, 500) != 0) return CHECK_FAIL;
    ok = ok && expect_true(ckpt_store_load_latest(&store, &t.c, got, sizeof got, &err) == 1,
                           "newest truncated: did not fall back") &&
         expect_true(state_hash(&t) == h[1] && strstr(got, "ckpt-000000000101.ckpt"),
                     "fell back to %s, expected step 101", got);
    ckpt_store_path(&store, 101, p, sizeof p);
    if (truncate(p, 40) != 0) return CHECK_FAIL;
    ckpt_store_path(&store, 100, p, sizeof p);
    if (truncate(p, 0) != 0) return CHECK_FAIL;
    ok = ok && expect_true(ckpt_store_load_latest(&store, &t.c, got, sizeof got, &err) == -1,
                           "all damaged: did not return -1") &&
         expect_true(strstr(err.msg, "none of the 3") && strstr(err.msg, "ckpt-000000000100.ckpt") &&
                         strstr(err.msg, "ckpt-000000000102.ckpt"), "the message: %s", err.msg) &&
         expect_true(state_hash(&t) == h[1], "failed loads changed the variables");
    state_free(&s);
    state_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_latest(void) { return with_tmpdir("test_ckpt", body_latest); }

/* ------------------------------------------------------------ the atomic write */

static int body_write_killed(const char *dir) {
    char path[512], log[512];
    path_in(path, sizeof path, dir, "c.ckpt");
    path_in(log, sizeof log, dir, "log");
    State s;
    state_init(&s, 8, 4);
    CkptError err;
    if (ckpt_save(&s.c, path, &err) != 0) return CHECK_FAIL;
    uint64_t old = file_hash(path);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(log, "w", stderr)) _exit(2);
        setenv("COURSE_CKPT_STALL", "1", 1);
        State t;
        state_init(&t, 9, 4);
        ckpt_save(&t.c, path, &err);
        _exit(0);
    }
    bool stalled = false;
    for (double end = now_seconds() + 10; !stalled && now_seconds() < end; usleep(2000)) {
        FILE *f = fopen(log, "r");
        char line[256] = "";
        if (f) {
            stalled = fgets(line, sizeof line, f) && strstr(line, "COURSE_CKPT_STALL");
            fclose(f);
        }
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    struct stat st;
    bool ok = expect_true(stalled, "the writer never reached the test hook") &&
              expect_true(file_hash(path) == old, "the old checkpoint changed") &&
              expect_true(stat(tmp, &st) == 0 && (size_t)st.st_size == ckpt_encoded_size(&s.c) / 2,
                          "expected a half-written %s", tmp) &&
              expect_true(ckpt_load(&s.c, path, &err) == 0, "the old checkpoint no longer loads: %s",
                          err.msg);
    state_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_write_killed(void) { return with_tmpdir("test_ckpt", body_write_killed); }

static int body_write_errors(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "nope/x.ckpt");
    State s;
    state_init(&s, 8, 4);
    CkptError err;
    bool ok = expect_true(ckpt_save(&s.c, path, &err) == -1 && strstr(err.msg, "nope/x.ckpt.tmp"),
                          "a missing directory: %s", err.msg);
    path_in(path, sizeof path, dir, "x.ckpt");
    make_dirs(dir, "x.ckpt"); /* a directory in the way of the rename */
    ok = ok && expect_true(ckpt_save(&s.c, path, &err) == -1 && strstr(err.msg, "rename"),
                           "renaming over a directory: %s", err.msg);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    ok = ok && expect_true(access(tmp, F_OK) != 0, "a failed write left %s behind", tmp);
    state_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_write_errors(void) { return with_tmpdir("test_ckpt", body_write_errors); }

/* Issue 30, fault 2: a link planted at the temporary file's name (x.ckpt.tmp -> a file
 * elsewhere) is replaced, never written through: the target keeps its bytes and the
 * checkpoint is a regular file that loads, not a link. */
static int body_planted_link(const char *dir) {
    char path[512], tmp[600], target[512];
    path_in(path, sizeof path, dir, "ckpt-000003.ckpt");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    path_in(target, sizeof target, dir, "precious.txt");
    FILE *f = fopen(target, "w");
    bool ok = expect_true(f && fputs("precious", f) >= 0 && fclose(f) == 0, "cannot write %s", target);
    ok = ok && expect_true(symlink(target, tmp) == 0, "symlink: %s", strerror(errno));
    State s, back;
    state_init(&s, 21, 4);
    state_init(&back, 22, 4);
    CkptError err;
    ok = ok && expect_true(ckpt_save(&s.c, path, &err) == 0, "save beside a planted link: %s", err.msg);
    char text[64] = "";
    f = fopen(target, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    ok = ok && expect_true(strcmp(text, "precious") == 0, "the link's target was overwritten: it "
                           "holds %zu bytes now", n);
    struct stat st;
    ok = ok && expect_true(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file "
                           "(a link to the target?)", path);
    ok = ok && expect_true(access(tmp, F_OK) != 0, "%s is left", tmp);
    ok = ok && expect_true(ckpt_load(&back.c, path, &err) == 0 && state_hash(&back) == state_hash(&s),
                           "the checkpoint does not load back: %s", err.msg);
    state_free(&s);
    state_free(&back);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_planted_link(void) { return with_tmpdir("test_ckpt", body_planted_link); }

static long peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* A 10 GB sparse file at a checkpoint's name, starting with head (n bytes). */
static bool make_sparse(const char *path, const uint8_t *head, size_t n) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool ok = fd >= 0 && (n == 0 || write(fd, head, n) == (ssize_t)n) &&
              ftruncate(fd, (off_t)10 << 30) == 0;
    if (fd >= 0) close(fd);
    return expect_true(ok, "cannot make the sparse file %s: %s", path, strerror(errno));
}

/* Issue 30, fault 3: the header is checked against the file's size before the file is
 * read: a 10 GB sparse file is refused at once (well under a second, no 10 GB of
 * memory), whether it has no magic number, a header whose size disagrees, or a header
 * that records all 10 GB (more than twice what this program's checkpoint takes). */
static int body_sparse(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "ckpt-000001.ckpt");
    uint8_t *good;
    size_t len;
    good_bytes(&good, &len);
    uint8_t head[32];
    memcpy(head, good, sizeof head);
    xfree(good);
    State s;
    state_init(&s, 3, 4);
    CkptError err;
    const long rss0 = peak_rss_kb();
    const double t0 = now_seconds();
    bool ok = make_sparse(path, NULL, 0);
    ok = ok && expect_true(ckpt_load(&s.c, path, &err) == -1 && strstr(err.msg, path) &&
                               strstr(err.msg, "not a checkpoint"), "zeros: %s", err.msg);
    ok = ok && make_sparse(path, head, sizeof head); /* records the small file's size */
    ok = ok && expect_true(ckpt_load(&s.c, path, &err) == -1 && strstr(err.msg, "header says"),
                           "a small header on 10 GB: %s", err.msg);
    for (int i = 0; i < 8; i++) head[16 + i] = (uint8_t)((((uint64_t)10 << 30) >> (8 * i)) & 0xff);
    ok = ok && make_sparse(path, head, sizeof head); /* records 10 GB: the file's own size */
    ok = ok && expect_true(ckpt_load(&s.c, path, &err) == -1 && strstr(err.msg, "10737418240 bytes") &&
                               strstr(err.msg, "far more than"), "a header of 10 GB: %s", err.msg);
    const double seconds = now_seconds() - t0;
    const long grew_kb = peak_rss_kb() - rss0;
    ok = ok && expect_true(seconds < 2.0 && grew_kb < 64 * 1024, "three refusals took %.1f s and "
                           "%ld MB of memory: was the file read?", seconds, grew_kb / 1024);
    state_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_sparse(void) { return with_tmpdir("test_ckpt", body_sparse); }

/* ------------------------------------------------------------ the fatal wrappers */

static const char *g_path;
static void load_or_die_bad(void *arg) {
    (void)arg;
    State s;
    state_init(&s, 1, 4);
    ckpt_load_or_die(&s.c, g_path);
}
static void store_init_on_file(void *arg) {
    (void)arg;
    CkptStore st;
    ckpt_store_init(&st, g_path, 2);
}

static int body_fatal(const char *dir) {
    char path[512];
    path_in(path, sizeof path, dir, "junk.ckpt");
    write_file(path, "hello", 5);
    g_path = path;
    ChildResult r;
    run_child(load_or_die_bad, NULL, &r);
    bool ok = expect_exit("ckpt_load_or_die on a foreign file", &r, 1, "junk.ckpt",
                          "not a checkpoint", (const char *)NULL);
    char below[600];
    snprintf(below, sizeof below, "%s/sub", path); /* a file where a directory should be */
    g_path = below;
    run_child(store_init_on_file, NULL, &r);
    ok = ok && expect_exit("ckpt_store_init below a file", &r, 1, "--checkpoint-dir",
                           (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_fatal(void) { return with_tmpdir("test_ckpt", body_fatal); }

/* ------------------------------------------------------------ the hash */

static int check_hash(void) {
    uint8_t buf[100];
    for (int i = 0; i < 100; i++) buf[i] = (uint8_t)(i * 31 + 7);
    uint64_t base = ckpt_hash64(buf, sizeof buf, 0);
    bool ok = true;
    for (int bit = 0; bit < 800 && ok; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        ok = expect_true(ckpt_hash64(buf, sizeof buf, 0) != base, "flipping bit %d keeps the hash", bit);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    for (size_t n = 0; n < 99 && ok; n++)
        ok = expect_true(ckpt_hash64(buf, n, 0) != ckpt_hash64(buf, n + 1, 0),
                         "lengths %zu and %zu hash alike", n, n + 1);
    ok = ok && expect_true(ckpt_hash64(buf, 100, 1) != base, "the seed changes nothing") &&
         expect_true(ckpt_hash64(buf, 100, 0) == base, "the hash is not deterministic");
    State a, b;
    state_init(&a, 4, 4);
    state_init(&b, 4, 4);
    ok = ok && expect_true(params_digest(&a.params) == params_digest(&b.params), "equal parameters, "
                           "different digests");
    b.params.items[1]->value.data[6] = nextafterf(b.params.items[1]->value.data[6], 2.0f);
    ok = ok && expect_true(params_digest(&a.params) != params_digest(&b.params),
                           "one ulp in the last parameter: same digest");
    state_free(&a);
    state_free(&b);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ real models */

/* The checkpoint a lesson writes for a model (parameters, Adam or none, the training
 * state, the data fingerprint) saved from `a` and loaded into `b`, a model of the same
 * shapes from another seed: b must end with a's parameters and optimiser state, bit for
 * bit. Each encoded file is also a fuzz seed (make fuzz: fuzz_ckpt). */
static bool model_round_trip(const char *what, ParamList *a, ParamList *b, bool adam) {
    Adam oa = {0}, ob = {0};
    TrainState ta = {.epoch = 2, .step = 5, .global_step = 17, .rng_state = 99, .rng_inc = 7,
                     .sampler_seed = 3, .sampler_epoch = 2, .sampler_position = 500,
                     .sampler_count = 600, .loss_sum = 123.5, .examples = 500,
                     .best_metric = 0.75, .best_epoch = 1};
    TrainState tb = {0};
    uint64_t fa = 0x1234abcd5678ef90ULL, fb = 0;
    Checkpoint ca = {0}, cb = {0};
    ckpt_add_params(&ca, "model", a);
    ckpt_add_params(&cb, "model", b);
    if (adam) {
        adam_init(&oa, a, 1e-3f);
        adam_init(&ob, b, 1e-3f);
        fill_uniform(oa.m.data, oa.m.size, 5, -1, 1);
        fill_uniform(oa.v.data, oa.v.size, 6, 0, 1);
        oa.step = 17;
        ckpt_add_adam(&ca, &oa, a);
        ckpt_add_adam(&cb, &ob, b);
    }
    ckpt_add_train_state(&ca, &ta);
    ckpt_add_train_state(&cb, &tb);
    ckpt_add_u64(&ca, "data.fingerprint", &fa);
    ckpt_add_u64(&cb, "data.fingerprint", &fb);
    uint8_t *buf;
    size_t len;
    ckpt_encode(&ca, &buf, &len);
    fuzz_seed_save("ckpt", buf, len);
    CkptError err = {{0}};
    bool ok = expect_true(params_digest(a) != params_digest(b), "%s: test setup: both models "
                          "start with the same parameters", what) &&
              expect_true(ckpt_decode(&cb, buf, len, "model.ckpt", &err) == 0, "%s: %s", what,
                          err.msg) &&
              expect_true(params_digest(a) == params_digest(b), "%s: the loaded parameters differ "
                          "from the saved ones", what) &&
              expect_true(memcmp(&ta, &tb, sizeof ta) == 0 && fa == fb, "%s: the training state "
                          "or the fingerprint changed on the way", what);
    if (ok && adam)
        ok = expect_true(ob.step == 17 && memcmp(oa.m.data, ob.m.data, (size_t)oa.m.size * 4) == 0 &&
                             memcmp(oa.v.data, ob.v.data, (size_t)oa.v.size * 4) == 0,
                         "%s: Adam's m, v or step changed on the way", what);
    printf("%s: %zu bytes\n", what, len); /* shown on failure */
    xfree(buf);
    ckpt_free(&ca);
    ckpt_free(&cb);
    if (adam) {
        adam_free(&oa);
        adam_free(&ob);
    }
    return ok;
}

/* The CNN on MNIST's and CIFAR-10's shapes (parameters and training state: a lesson 03
 * checkpoint less Adam, under the fuzz seeds' 1 MB) and a small transformer with Adam. */
static int check_models(void) {
    bool ok = true;
    static const int shapes[2][3] = {{1, 28, 28}, {3, 32, 32}};
    for (int k = 0; ok && k < 2; k++) {
        Rng r1, r2;
        rng_seed(&r1, 1, 0);
        rng_seed(&r2, 2, 0);
        Cnn a, b;
        cnn_init(&a, shapes[k][0], shapes[k][1], shapes[k][2], 10, 1, &r1);
        cnn_init(&b, shapes[k][0], shapes[k][1], shapes[k][2], 10, 1, &r2);
        char what[64];
        snprintf(what, sizeof what, "the CNN on %dx%dx%d images", shapes[k][0], shapes[k][1],
                 shapes[k][2]);
        ok = model_round_trip(what, &a.params, &b.params, false);
        cnn_free(&a);
        cnn_free(&b);
    }
    const TransformerConfig cfg = {.vocab = 40, .d_model = 16, .heads = 2, .d_ff = 24, .layers = 2,
                                   .max_len = 16, .dropout = 0.1f};
    Transformer a, b;
    transformer_init(&a, &cfg, 2, 8, 1);
    transformer_init(&b, &cfg, 2, 8, 2);
    ok = ok && model_round_trip("a 2-layer transformer with Adam", &a.params, &b.params, true);
    transformer_free(&a);
    transformer_free(&b);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the data fingerprint */

/* A small hand-made training set: 70 examples of 1x4x4, 10 classes. */
static Dataset tiny_set(void) {
    Dataset d = {.count = 70, .channels = 1, .height = 4, .width = 4, .num_classes = 10};
    d.images = xcalloc(70 * 16, sizeof *d.images);
    d.labels = xcalloc(70, 1);
    for (int i = 0; i < 70 * 16; i++) d.images[i] = (float)(i % 251) / 251.0f;
    for (int i = 0; i < 70; i++) d.labels[i] = (uint8_t)(i % 10);
    return d;
}

/* train_data_fingerprint (what lessons 03 and 06 record as "data.fingerprint" and compare
 * on --resume): the same data, the same value, from one build to the next (a changed
 * hash would refuse every checkpoint written before); other pixels, labels or sizes, or
 * another data set of the same sizes, another value. Only the first 64 examples are
 * hashed (train_state.h): a change after them goes unseen by design. */
static int check_data_fingerprint(void) {
    Dataset d = tiny_set();
    const uint64_t base = train_data_fingerprint(&d);
    bool ok = expect_true(base == 0x4b05d36eefbf06fcULL, "the fingerprint of the tiny set is %016llx, "
                          "it was 4b05d36eefbf06fc: checkpoints written before would not resume",
                          (unsigned long long)base);
    struct {
        const char *what;
        float *pixel;
        uint8_t *label;
        int *size;
        bool seen;
    } changes[] = {{"a pixel of example 0", &d.images[5], NULL, NULL, true},
                   {"a pixel of example 63", &d.images[63 * 16 + 15], NULL, NULL, true},
                   {"the label of example 10", NULL, &d.labels[10], NULL, true},
                   {"the count (69 examples)", NULL, NULL, &d.count, true},
                   {"the number of classes", NULL, NULL, &d.num_classes, true},
                   {"a pixel of example 64 (not hashed)", &d.images[64 * 16], NULL, NULL, false}};
    for (size_t k = 0; ok && k < sizeof changes / sizeof changes[0]; k++) {
        float keep_pixel = changes[k].pixel ? *changes[k].pixel : 0;
        uint8_t keep_label = changes[k].label ? *changes[k].label : 0;
        int keep_size = changes[k].size ? *changes[k].size : 0;
        if (changes[k].pixel) *changes[k].pixel = nextafterf(keep_pixel, 2.0f);
        if (changes[k].label) *changes[k].label = (uint8_t)((keep_label + 1) % 10);
        if (changes[k].size) *changes[k].size = keep_size - 1;
        uint64_t got = train_data_fingerprint(&d);
        ok = expect_true((got != base) == changes[k].seen, "%s changed: the fingerprint %s",
                         changes[k].what, changes[k].seen ? "stayed the same" : "changed");
        if (changes[k].pixel) *changes[k].pixel = keep_pixel;
        if (changes[k].label) *changes[k].label = keep_label;
        if (changes[k].size) *changes[k].size = keep_size;
    }
    ok = ok && expect_true(train_data_fingerprint(&d) == base, "the same data again: another value");
    dataset_free(&d);
    /* two synthetic sets of the same sizes, other seeds; and the same seed twice */
    Dataset a, b, c;
    dataset_make_synthetic(100, 1, 28, 1, &a);
    dataset_make_synthetic(100, 1, 28, 2, &b);
    dataset_make_synthetic(100, 1, 28, 1, &c);
    ok = ok && expect_true(train_data_fingerprint(&a) != train_data_fingerprint(&b),
                           "two synthetic sets of the same sizes (seeds 1 and 2) have one fingerprint") &&
         expect_true(train_data_fingerprint(&a) == train_data_fingerprint(&c),
                     "the same synthetic set made twice: two fingerprints");
    dataset_free(&a);
    dataset_free(&b);
    dataset_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The format holds float32 only: a 16-bit tensor in the manifest stops at once, by
 * its entry's name, before anything is written. */
static void body_bf16_entry(void *arg) {
    (void)arg;
    Checkpoint c = {0};
    Tensor w = tensor_zeros(1, 3), h = tensor_zeros_typed(DEVICE_CPU, DTYPE_BF16, 1, 3);
    ckpt_add_tensor(&c, "fc1.weight", &w);
    ckpt_add_tensor(&c, "fc1.weight_bf16", &h);
}

static int check_refuses_16_bit(void) {
    ChildResult r;
    run_child(body_bf16_entry, NULL, &r);
    return expect_exit("a bfloat16 tensor in a checkpoint", &r, 2, "checkpoint.c",
                       "'fc1.weight_bf16' is a bfloat16 tensor", "float32", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("lib/train/checkpoint");
    check_run(NULL, "round trip: parameters, Adam, SGD, training state, NaN/inf/-0, bit for bit", check_round_trip, 20);
    check_run(NULL, "encoding is deterministic and ckpt_encoded_size is its size", check_encode_deterministic, 20);
    check_run(NULL, "empty, foreign and other-version files are rejected, naming the file", check_empty_foreign_version, 20);
    check_run(NULL, "truncated at every length and appended: rejected, nothing changed", check_truncated, 30);
    check_run(NULL, "any flipped byte is rejected (checksum, header)", check_flipped_bytes, 30);
    check_run(NULL, "other shapes, missing and extra entries, other types: rejected with the names", check_mismatched, 20);
    check_run(NULL, "garbage behind a valid header and checksum: rejected, no crash", check_garbage, 60);
    check_run(NULL, "impossible values behind a valid checksum (epoch -3, position -1 or past the count, even increment, NaN, type 0): rejected by name", check_impossible_values, 20);
    check_run(NULL, "a failed load leaves the file on disk as it was", check_file_untouched, 20);
    check_run(NULL, "store: keep-K rotation, best.ckpt kept, leftover .tmp removed, mkdir -p", check_rotation, 20);
    check_run(NULL, "store: a save below a damaged newer checkpoint keeps itself (keep 1)", check_rotation_after_fallback, 20);
    check_run(NULL, "store: newest that loads, falling back (past a FIFO too); 0 when empty; -1 naming every file", check_latest, 20);
    check_run(NULL, "atomic write killed halfway: the old checkpoint stays and loads", check_write_killed, 20);
    check_run(NULL, "write errors: missing directory, rename failure, no .tmp left", check_write_errors, 20);
    check_run(NULL, "a link planted at the .tmp name is replaced, never written through", check_planted_link, 20);
    check_run(NULL, "a 10 GB sparse file is refused from its header, at once, without reading it", check_sparse, 20);
    check_run(NULL, "ckpt_load_or_die and ckpt_store_init: exit 1 with a message", check_fatal, 20);
    check_run(NULL, "hash: every bit and length counts; parameter digest", check_hash, 20);
    check_run(NULL, "real models: the CNN (MNIST, CIFAR-10 shapes) and a transformer with Adam round-trip bit for bit", check_models, 30);
    check_run(NULL, "data fingerprint: the same data the same value (pinned); pixels, labels, sizes, another set change it", check_data_fingerprint, 20);
    check_run(NULL, "a bfloat16 tensor is refused by its entry's name (the format holds float32)", check_refuses_16_bit, 20);
    return check_end();
}
