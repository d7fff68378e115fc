/* Unit tests of lib/core/image_info and what records it: the image's digest read from
 * its /etc/dl-course-image (here a file named by COURSE_IMAGE_INFO), the first line of
 * a --metrics file, and a checkpoint's metadata scalar image.digest (written inside an
 * image, skipped by a reader that does not ask for it, read by one that does). Outside
 * an image nothing changes. image_info reads once per process: each case runs in a
 * child of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/image_info.h"
#include "core/metrics.h"
#include "framework/check.h"
#include "train/checkpoint.h"
#include "train/checkpoint_meta.h"

static const char DIGEST[] = "sha256:0123456789abcdef00112233445566778899aabbccddeeff0011223344556677";

/* Writes dir/info with `text` (NULL: no file) and points COURSE_IMAGE_INFO at it. */
static void image_file(const char *dir, const char *text) {
    char path[512];
    path_in(path, sizeof path, dir, "info");
    if (text) {
        FILE *f = fopen(path, "w");
        fputs(text, f);
        fclose(f);
    }
    setenv("COURSE_IMAGE_INFO", path, 1);
}

static void good_image(const char *dir) {
    char text[256];
    snprintf(text, sizeof text, "digest %s\ncommit abc123+edits\nbuilt 2026-11-26\n", DIGEST);
    image_file(dir, text);
}

static int body_reads(const char *dir) {
    good_image(dir);
    const ImageInfo *im = image_info();
    if (!expect_true(im != NULL, "no image found in a well-formed file")) return CHECK_FAIL;
    return expect_true(strcmp(im->digest, DIGEST) == 0, "digest %s, want %s", im->digest, DIGEST) &&
                   expect_true(strcmp(im->commit, "abc123+edits") == 0, "commit '%s'", im->commit) &&
                   expect_true(im->digest64 == 0x0123456789abcdefull, "digest64 %016llx, want its first "
                               "16 hex digits", (unsigned long long)im->digest64)
               ? CHECK_PASS : CHECK_FAIL;
}
static int check_reads(void) { return with_tmpdir("image_info", body_reads); }

static void child_none(void *arg) {
    (void)arg;
    exit(image_info() == NULL ? 0 : 1);
}

static int body_none(const char *dir) {
    static const char *bad[] = {NULL, "", "digest sha256:0123\n", "commit abc\n",
                                "digest sha256:0123456789ABCDEF00112233445566778899aabbccddeeff0011223344556677\n",
                                "digest md5:0123456789abcdef00112233445566778899aabbccddeeff00112233445566\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char sub[32], d[512];
        snprintf(sub, sizeof sub, "case%zu", i);
        make_dir_in(d, sizeof d, dir, sub);
        image_file(d, bad[i]);
        ChildResult r;
        run_child(child_none, NULL, &r);
        char what[128];
        snprintf(what, sizeof what, "info file \"%s\" must mean no image", bad[i] ? bad[i] : "(none)");
        if (!expect_exit(what, &r, 0, (const char *)NULL)) return CHECK_FAIL;
    }
    setenv("COURSE_IMAGE_INFO", "", 1); /* empty: no image, whatever /etc holds */
    ChildResult r;
    run_child(child_none, NULL, &r);
    return expect_exit("COURSE_IMAGE_INFO=\"\" must mean no image", &r, 0, (const char *)NULL) ? CHECK_PASS : CHECK_FAIL;
}
static int check_none(void) { return with_tmpdir("image_info", body_none); }

/* The first line of a metrics file: the image, inside one; nothing outside. */
static int metrics_case(const char *dir, bool inside) {
    if (inside) good_image(dir);
    else setenv("COURSE_IMAGE_INFO", "", 1);
    char path[512];
    path_in(path, sizeof path, dir, "m.jsonl");
    MetricsFile *m = metrics_open(path);
    metrics_begin(m);
    metrics_int(m, "epoch", 1);
    metrics_end(m);
    metrics_close(m);
    char first[512] = "";
    FILE *f = fopen(path, "r");
    const bool read = f && fgets(first, sizeof first, f);
    if (f) fclose(f);
    if (!expect_true(read, "cannot read %s back", path)) return CHECK_FAIL;
    char want[256];
    snprintf(want, sizeof want, "{\"image\": \"%s\", \"image_commit\": \"abc123+edits\"}\n", DIGEST);
    return expect_true(strcmp(first, inside ? want : "{\"epoch\": 1}\n") == 0, "%s an image the first line is %s"
                       "want %s", inside ? "inside" : "outside", first, inside ? want : "{\"epoch\": 1}\n")
               ? CHECK_PASS : CHECK_FAIL;
}
static int body_metrics_in(const char *dir) { return metrics_case(dir, true); }
static int body_metrics_out(const char *dir) { return metrics_case(dir, false); }
static int check_metrics_in(void) { return with_tmpdir("image_info", body_metrics_in); }
static int check_metrics_out(void) { return with_tmpdir("image_info", body_metrics_out); }

/* A checkpoint of one scalar, encoded; its size checked against ckpt_encoded_size. */
static bool encode_one(int64_t value, uint8_t **buf, size_t *len) {
    Checkpoint c = {0};
    ckpt_add_i64(&c, "epoch", &value);
    ckpt_encode(&c, buf, len);
    const size_t want = ckpt_encoded_size(&c);
    ckpt_free(&c);
    return expect_true(*len == want, "encoded %zu bytes, ckpt_encoded_size says %zu", *len, want);
}

/* magic .. sizes (32), "epoch" as a scalar, the checksum: the file format's own sizes */
enum { PLAIN_SIZE = 32 + (2 + 5 + 1 + 8) + 8, META_SIZE = 2 + 12 + 1 + 8 };

static void child_outside(void *arg) {
    (void)arg;
    setenv("COURSE_IMAGE_INFO", "", 1);
    uint8_t *buf;
    size_t len;
    if (!encode_one(7, &buf, &len)) exit(1);
    const bool tagged = memmem(buf, len, CKPT_META_IMAGE, strlen(CKPT_META_IMAGE)) != NULL;
    if (len != PLAIN_SIZE || tagged) {
        printf("outside an image: %zu bytes (want %d)%s\n", len, PLAIN_SIZE, tagged ? ", with image.digest" : "");
        exit(1);
    }
    exit(0);
}

static int body_checkpoint(const char *dir) {
    ChildResult r;
    run_child(child_outside, NULL, &r);
    if (!expect_exit("a checkpoint written outside an image", &r, 0, (const char *)NULL)) return CHECK_FAIL;
    good_image(dir); /* this process is inside one from here on */
    uint8_t *buf;
    size_t len;
    if (!encode_one(7, &buf, &len)) return CHECK_FAIL;
    bool ok = expect_true(len == PLAIN_SIZE + META_SIZE, "inside an image: %zu bytes, want %d (one "
                          "scalar more)", len, PLAIN_SIZE + META_SIZE);
    int64_t epoch = 0;
    uint64_t digest = 0;
    CkptError err;
    Checkpoint reader = {0};
    ckpt_add_i64(&reader, "epoch", &epoch);
    ok = ok && expect_true(ckpt_decode(&reader, buf, len, "tagged", &err) == 0 && epoch == 7,
                           "a reader without image.digest: %s, epoch %lld", err.msg, (long long)epoch);
    ckpt_add_u64(&reader, CKPT_META_IMAGE, &digest);
    epoch = 0;
    ok = ok && expect_true(ckpt_decode(&reader, buf, len, "tagged", &err) == 0 && epoch == 7 &&
                               digest == 0x0123456789abcdefull,
                           "a reader asking for image.digest: %016llx, want 0123456789abcdef",
                           (unsigned long long)digest);
    ckpt_free(&reader);
    /* the same name with another type is no metadata: refused, checksum and all valid */
    uint8_t *at = memmem(buf, len, CKPT_META_IMAGE, strlen(CKPT_META_IMAGE));
    if (ok && expect_true(at != NULL, "no image.digest in the bytes")) {
        at[strlen(CKPT_META_IMAGE)] = CKPT_I64;
        const uint64_t h = ckpt_hash64(buf, len - 8, 0);
        for (int i = 0; i < 8; i++) buf[len - 8 + i] = (uint8_t)(h >> (8 * i));
        Checkpoint plain = {0};
        ckpt_add_i64(&plain, "epoch", &epoch);
        ok = expect_true(ckpt_decode(&plain, buf, len, "retyped", &err) != 0 && strstr(err.msg, CKPT_META_IMAGE),
                         "image.digest of type 'i' was accepted as metadata");
        ckpt_free(&plain);
    } else ok = false;
    free(buf);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_checkpoint(void) { return with_tmpdir("image_info", body_checkpoint); }

int main(void) {
    check_begin("lib/core/image_info");
    check_run(NULL, "the image's digest, commit and first 64 bits from its info file", check_reads, 10);
    check_run(NULL, "no file, an empty one, a short, upper-case or non-sha256 digest: no image", check_none, 10);
    check_run(NULL, "inside an image a metrics file starts with its digest and commit", check_metrics_in, 10);
    check_run(NULL, "outside one the metrics file is as before", check_metrics_out, 10);
    check_run(NULL, "checkpoint: image.digest written inside, skipped or read back outside", check_checkpoint, 10);
    return check_end();
}
