/* Unit tests of lib/core/tensor: zeros, views, rows, fill and copy, shape strings, and the
 * shape checks that stop a wrong program (each in a child process of its own, with its
 * output captured: exit status 2, file, line and both shapes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/tensor.h"
#include "framework/check.h"

static int check_tensor_zeros(void) {
    bool ok = true;
    Tensor a = tensor_zeros(1, 7);
    Tensor b = tensor_zeros(2, 3, 5);
    Tensor c = tensor_zeros(3, 2, 3, 4);
    Tensor d = tensor_zeros(4, 100, 1, 28, 28);
    Tensor *all[] = {&a, &b, &c, &d};
    const int64_t sizes[] = {7, 15, 24, 78400};
    for (int i = 0; i < 4; i++) {
        Tensor *t = all[i];
        ok = ok && expect_true(t->ndim == i + 1 && t->size == sizes[i] && t->device == DEVICE_CPU &&
                                   t->data != NULL,
                               "tensor %d: ndim %d, size %lld, device %d", i, t->ndim,
                               (long long)t->size, (int)t->device);
        for (int64_t k = 0; ok && k < t->size; k++)
            ok = expect_true(t->data[k] == 0.0f, "tensor %d: entry %lld is %g, not 0", i,
                             (long long)k, t->data[k]);
    }
    ok = ok && expect_true(d.shape[0] == 100 && d.shape[1] == 1 && d.shape[2] == 28 &&
                               d.shape[3] == 28 && b.shape[0] == 3 && b.shape[1] == 5,
                           "shapes not stored as given");
    /* 64-byte aligned, as the allocator promises */
    ok = ok && expect_true(((uintptr_t)d.data & 63) == 0, "data not 64-byte aligned");
    Tensor z = tensor_zeros_like(&c);
    ok = ok && expect_true(tensor_same_shape(&z, &c) && z.size == c.size && z.data != c.data,
                           "zeros_like: wrong shape or shared data");
    tensor_fill(&c, 2.5f);
    for (int64_t k = 0; ok && k < c.size; k++)
        ok = expect_true(c.data[k] == 2.5f, "fill: entry %lld is %g", (long long)k, c.data[k]);
    tensor_copy(&z, &c);
    ok = ok && expect_close("copy", z.data, c.data, z.size, 0, 0);
    ok = ok && expect_true(!tensor_same_shape(&b, &c) && tensor_same_shape(&c, &c),
                           "same_shape is wrong");
    Tensor e = tensor_zeros(2, 5, 3);
    ok = ok && expect_true(!tensor_same_shape(&b, &e), "[3, 5] and [5, 3] called the same shape");
    tensor_free(&e);
    tensor_free(&z);
    for (int i = 0; i < 4; i++) tensor_free(all[i]);
    ok = ok && expect_true(a.data == NULL && a.size == 0, "tensor_free left data behind");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_tensor_view_rows(void) {
    Tensor t = tensor_zeros(4, 6, 2, 3, 4);
    for (int64_t i = 0; i < t.size; i++) t.data[i] = (float)i;
    Tensor v = tensor_view(&t, 2, 6, 24);
    bool ok = expect_true(v.data == t.data && v.ndim == 2 && v.shape[0] == 6 && v.shape[1] == 24 &&
                              v.size == t.size,
                          "view [6, 24]: ndim %d, shape [%d, %d], size %lld, shares data: %d",
                          v.ndim, v.shape[0], v.shape[1], (long long)v.size, v.data == t.data);
    v.data[30] = -1.0f;
    ok = ok && expect_true(t.data[30] == -1.0f, "a write through the view is not seen");
    Tensor flat = tensor_view(&t, 1, 144);
    ok = ok && expect_true(flat.ndim == 1 && flat.size == 144 && flat.data == t.data, "flatten");
    Tensor r = tensor_rows(&t, 4);
    ok = ok && expect_true(r.data == t.data && r.ndim == 4 && r.shape[0] == 4 && r.shape[1] == 2 &&
                               r.shape[2] == 3 && r.shape[3] == 4 && r.size == 96,
                           "rows(4): shape [%d, %d, %d, %d], size %lld", r.shape[0], r.shape[1],
                           r.shape[2], r.shape[3], (long long)r.size);
    Tensor r6 = tensor_rows(&t, 6);
    ok = ok && expect_true(r6.size == t.size && tensor_same_shape(&r6, &t), "rows(all)");
    Tensor r1 = tensor_rows(&v, 1);
    ok = ok && expect_true(r1.size == 24 && r1.shape[0] == 1 && r1.shape[1] == 24, "rows(1) of 2-D");
    tensor_free(&t);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_view_bad(void *arg) {
    (void)arg;
    Tensor t = tensor_zeros(2, 3, 4);
    tensor_view(&t, 2, 5, 3);
}
static void body_rows_bad(void *arg) {
    Tensor t = tensor_zeros(2, 3, 4);
    tensor_rows(&t, *(int *)arg);
}
static void body_zeros_bad(void *arg) {
    (void)arg;
    tensor_zeros(2, 3, 0);
}
static void body_copy_bad(void *arg) {
    (void)arg;
    Tensor a = tensor_zeros(1, 3), b = tensor_zeros(1, 4);
    tensor_copy(&a, &b);
}

static int check_tensor_misuse(void) {
    ChildResult o;
    run_child(body_view_bad, NULL, &o);
    bool ok = expect_exit("view of 12 elements as 15", &o, 2, "tensor.c", "[3, 4]", "12", "15",
                          (const char *)NULL);
    int n = 4;
    run_child(body_rows_bad, &n, &o);
    ok = ok && expect_exit("rows(4) of 3", &o, 2, "tensor.c", (const char *)NULL);
    n = 0;
    run_child(body_rows_bad, &n, &o);
    ok = ok && expect_exit("rows(0)", &o, 2, "tensor.c", (const char *)NULL);
    run_child(body_zeros_bad, NULL, &o);
    ok = ok && expect_exit("a zero dimension", &o, 2, "tensor.c", "positive", (const char *)NULL);
    run_child(body_copy_bad, NULL, &o);
    ok = ok && expect_exit("copy of 4 into 3", &o, 2, "tensor.c", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_shape_str(void) {
    char buf[64];
    Tensor a = tensor_zeros(4, 100, 1, 28, 28);
    Tensor b = tensor_zeros(1, 7);
    Tensor c = tensor_zeros(2, 3, 5);
    bool ok = expect_true(strcmp(tensor_shape_str(&a, buf, 64), "[100, 1, 28, 28]") == 0,
                          "got \"%s\", expected \"[100, 1, 28, 28]\"", buf);
    ok = ok && expect_true(strcmp(tensor_shape_str(&b, buf, 64), "[7]") == 0,
                           "got \"%s\", expected \"[7]\"", buf);
    ok = ok && expect_true(strcmp(tensor_shape_str(&c, buf, 64), "[3, 5]") == 0,
                           "got \"%s\", expected \"[3, 5]\"", buf);
    /* a buffer too small is cut short, never overrun: the bytes after it stay as they were */
    for (int len = 1; ok && len < 20; len++) {
        char small[32];
        memset(small, 'x', sizeof small);
        const char *r = tensor_shape_str(&a, small, len);
        ok = expect_true(r == small, "does not return its buffer");
        ok = ok && expect_true(memchr(small, '\0', (size_t)len) != NULL,
                               "buffer of %d bytes: no terminating NUL", len);
        for (int k = len; ok && k < 32; k++)
            ok = expect_true(small[k] == 'x', "buffer of %d bytes: byte %d overwritten", len, k);
        ok = ok && expect_true(strncmp(small, "[100, 1, 28, 28]", strlen(small)) == 0,
                               "buffer of %d bytes: \"%s\" is not a prefix", len, small);
    }
    tensor_free(&a);
    tensor_free(&b);
    tensor_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_check_shape(void *arg) {
    (void)arg;
    Tensor images = tensor_zeros(2, 3, 5);
    CHECK_SHAPE(&images, 3, -1, 4);
}
static void body_check_shape_dim(void *arg) {
    (void)arg;
    Tensor images = tensor_zeros(2, 3, 5);
    CHECK_SHAPE(&images, 3, 5, -1);
}
static void body_check_same_shape(void *arg) {
    (void)arg;
    Tensor logits = tensor_zeros(2, 100, 10);
    Tensor dlogits = tensor_zeros(2, 100, 9);
    CHECK_SAME_SHAPE(&dlogits, &logits);
}
/* Right shapes pass silently; the child exits 0 after them. */
static void body_shapes_fine(void *arg) {
    (void)arg;
    Tensor t = tensor_zeros(4, 2, 3, 4, 5);
    Tensor u = tensor_zeros_like(&t);
    CHECK_SHAPE(&t, 2, 3, 4, 5);
    CHECK_SHAPE(&t, -1, 3, -1, 5);
    CHECK_SHAPE(&t, -1, -1, -1, -1);
    CHECK_SAME_SHAPE(&t, &u);
    printf("all fine\n");
    tensor_free(&t);
    tensor_free(&u);
}

static int check_shape_checks(void) {
    ChildResult o;
    run_child(body_shapes_fine, NULL, &o);
    bool ok = expect_exit("matching shapes", &o, 0, "all fine", (const char *)NULL);
    run_child(body_check_shape, NULL, &o);
    ok = ok && expect_exit("CHECK_SHAPE([3, 5], 3, *, 4)", &o, 2, "test_core_tensor.c:", "&images",
                           "[3, 5]", "[3, *, 4]", (const char *)NULL);
    run_child(body_check_shape_dim, NULL, &o);
    ok = ok && expect_exit("CHECK_SHAPE of 2-D against 3-D", &o, 2, "test_core_tensor.c:", "[3, 5]",
                           "[3, 5, *]", (const char *)NULL);
    run_child(body_check_same_shape, NULL, &o);
    ok = ok && expect_exit("CHECK_SAME_SHAPE", &o, 2, "test_core_tensor.c:", "&dlogits", "&logits",
                           "[100, 9]", "[100, 10]", (const char *)NULL);
    /* the line number is there too: "test_core_tensor.c:NNN:" */
    const char *at = strstr(o.out, "test_core_tensor.c:");
    size_t file = strlen("test_core_tensor.c:");
    ok = ok && expect_true(at && at[file] >= '1' && at[file] <= '9', "no line number after the file");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: tensor");
    check_run(NULL, "tensor: zeros, zeros_like, fill, copy, same_shape, free", check_tensor_zeros, 10);
    check_run(NULL, "tensor: view and rows share data with the right sizes", check_tensor_view_rows, 10);
    check_run(NULL, "tensor: bad view, rows, dimension, copy stop with status 2", check_tensor_misuse, 10);
    check_run(NULL, "tensor: shape strings, cut short without overrun", check_shape_str, 10);
    check_run(NULL, "CHECK_SHAPE / CHECK_SAME_SHAPE: status 2, file, line, shapes", check_shape_checks, 10);
    return check_end();
}
