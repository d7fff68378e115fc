/* Unit tests of lib/core/metrics: JSON lines read back with a small JSON reader (NaN and
 * infinities as null, 64-bit integers, escaped strings), no file without a path, and a
 * clear error for a file that cannot be written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/metrics.h"
#include "framework/check.h"

/* A small JSON reader, just enough to check one line: an object of string keys and
 * values that are numbers, strings or null. Fills keys/values (raw text, strings
 * unescaped) and returns the number of fields, or -1 when the line is not valid. */
typedef struct {
    char key[64];
    char value[128];
    int is_string, is_null;
} Field;

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

static const char *read_string(const char *p, char *out, size_t cap) {
    if (*p != '"') return NULL;
    size_t n = 0;
    for (p++; *p && *p != '"'; p++) {
        char ch = *p;
        if (ch == '\\') {
            p++;
            if (*p == '"' || *p == '\\' || *p == '/') ch = *p;
            else if (*p == 'n') ch = '\n';
            else if (*p == 't') ch = '\t';
            else return NULL;
        } else if ((unsigned char)ch < 0x20) {
            return NULL; /* raw control characters are not allowed in JSON strings */
        }
        if (n + 1 < cap) out[n++] = ch;
    }
    if (*p != '"') return NULL;
    out[n] = '\0';
    return p + 1;
}

static const char *read_number(const char *p, char *out, size_t cap) {
    /* JSON: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
    const char *s = p;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    size_t n = (size_t)(p - s) < cap - 1 ? (size_t)(p - s) : cap - 1;
    memcpy(out, s, n);
    out[n] = '\0';
    return p;
}

static int parse_json_line(const char *line, Field *fields, int cap) {
    const char *p = skip_ws(line);
    if (*p++ != '{') return -1;
    int n = 0;
    p = skip_ws(p);
    if (*p == '}') return *skip_ws(p + 1) == '\0' ? 0 : -1;
    for (;;) {
        if (n == cap) return -1;
        Field *f = &fields[n++];
        memset(f, 0, sizeof *f);
        p = read_string(skip_ws(p), f->key, sizeof f->key);
        if (!p) return -1;
        p = skip_ws(p);
        if (*p++ != ':') return -1;
        p = skip_ws(p);
        if (*p == '"') {
            f->is_string = 1;
            p = read_string(p, f->value, sizeof f->value);
        } else if (strncmp(p, "null", 4) == 0) {
            f->is_null = 1;
            p += 4;
        } else {
            p = read_number(p, f->value, sizeof f->value);
        }
        if (!p) return -1;
        p = skip_ws(p);
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p != '}') return -1;
        return *skip_ws(p + 1) == '\0' ? n : -1;
    }
}

static int check_metrics(void) {
    char path[] = "/tmp/test_core_metrics_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return expect_true(false, "mkstemp: %s", strerror(errno)) ? CHECK_PASS : CHECK_FAIL;
    close(fd);
    MetricsFile *m = metrics_open(path);
    bool ok = expect_true(m != NULL, "metrics_open(%s) returned NULL", path);
    if (!ok) return CHECK_FAIL;
    metrics_begin(m);
    metrics_int(m, "epoch", 1);
    metrics_num(m, "train_loss", 0.53);
    metrics_str(m, "dataset", "fashion-mnist");
    metrics_end(m);
    metrics_begin(m);
    metrics_int(m, "epoch", -2);
    metrics_num(m, "loss", NAN);
    metrics_num(m, "ppl", INFINITY);
    metrics_num(m, "neg", -INFINITY);
    metrics_num(m, "tiny", 1.25e-30);
    metrics_num(m, "big", -6.02e23);
    metrics_int(m, "count", 9007199254740993LL);
    metrics_str(m, "note", "say \"hi\" \\ back\tslash\n");
    metrics_end(m);
    metrics_begin(m);
    metrics_end(m);
    metrics_close(m);

    FILE *f = fopen(path, "r");
    char line[1024];
    Field fl[16];
    int nlines = 0;
    while (ok && f && fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        ok = expect_true(len > 0 && line[len - 1] == '\n', "line %d does not end in a newline",
                         nlines + 1);
        line[len - 1] = '\0';
        int n = parse_json_line(line, fl, 16);
        ok = ok && expect_true(n >= 0, "line %d is not a valid JSON object: %s", nlines + 1, line);
        if (ok && nlines == 0) {
            ok = expect_true(n == 3 && strcmp(fl[0].key, "epoch") == 0 && strcmp(fl[0].value, "1") == 0 &&
                                 strcmp(fl[1].key, "train_loss") == 0 &&
                                 strtod(fl[1].value, NULL) == 0.53 &&
                                 strcmp(fl[2].key, "dataset") == 0 && fl[2].is_string &&
                                 strcmp(fl[2].value, "fashion-mnist") == 0,
                             "line 1 read back wrong: %s", line);
        } else if (ok && nlines == 1) {
            ok = expect_true(n == 8, "line 2 has %d fields, expected 8: %s", n, line);
            ok = ok && expect_true(strcmp(fl[0].value, "-2") == 0, "epoch -2 read back as %s",
                                   fl[0].value);
            ok = ok && expect_true(fl[1].is_null && fl[2].is_null && fl[3].is_null,
                                   "NaN and infinities must be written as null: %s", line);
            ok = ok && expect_true(strtod(fl[4].value, NULL) == 1.25e-30 &&
                                       strtod(fl[5].value, NULL) == -6.02e23,
                                   "numbers read back as %s, %s", fl[4].value, fl[5].value);
            ok = ok && expect_true(strcmp(fl[6].value, "9007199254740993") == 0,
                                   "a 64-bit integer read back as %s", fl[6].value);
            /* control characters are dropped (or escaped); quotes and backslashes escaped */
            ok = ok && expect_true(fl[7].is_string &&
                                       (strcmp(fl[7].value, "say \"hi\" \\ backslash") == 0 ||
                                        strcmp(fl[7].value, "say \"hi\" \\ back\tslash\n") == 0),
                                   "string read back as \"%s\"", fl[7].value);
        } else if (ok && nlines == 2) {
            ok = expect_true(n == 0, "an empty record should be {}: %s", line);
        }
        nlines++;
    }
    ok = ok && expect_true(f && nlines == 3, "read %d lines back, expected 3", nlines);
    if (f) fclose(f);
    remove(path);

    /* no path: no file, and every call does nothing */
    MetricsFile *none = metrics_open(NULL);
    MetricsFile *empty = metrics_open("");
    ok = ok && expect_true(none == NULL && empty == NULL, "metrics_open(NULL or \"\") opened a file");
    metrics_begin(none);
    metrics_int(none, "a", 1);
    metrics_num(none, "b", 2);
    metrics_str(none, "c", "d");
    metrics_end(none);
    metrics_close(none);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_metrics_bad(void *arg) {
    (void)arg;
    metrics_open("/nonexistent-dir/metrics.jsonl");
}

static int check_metrics_unwritable(void) {
    ChildResult o;
    run_child(body_metrics_bad, NULL, &o);
    return expect_exit("metrics file in a missing directory", &o, 1, "/nonexistent-dir/metrics.jsonl",
                       (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

/* Issue 30, fault 2: --metrics naming a symbolic link (planted, or by mistake) stops
 * with a message instead of overwriting the link's target; a resumed run's rewrite
 * replaces a link planted at its .tmp name instead of writing through it. */
static void body_metrics_link(void *arg) { metrics_open((const char *)arg); }

static int body_links(const char *dir) {
    char target[512], link[512], tmp[600], text[64] = "";
    path_in(target, sizeof target, dir, "precious.txt");
    path_in(link, sizeof link, dir, "metrics.jsonl");
    FILE *f = fopen(target, "w");
    bool ok = expect_true(f && fputs("precious", f) >= 0 && fclose(f) == 0, "cannot write %s", target);
    ok = ok && expect_true(symlink(target, link) == 0, "symlink: %s", strerror(errno));
    ChildResult o;
    run_child(body_metrics_link, link, &o);
    ok = ok && expect_exit("--metrics naming a symbolic link", &o, 1, link, "symbolic link",
                           (const char *)NULL);
    f = fopen(target, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    ok = ok && expect_true(strcmp(text, "precious") == 0, "the link's target holds \"%s\"", text);
    /* a resumed run: the real file, and a link planted at its .tmp */
    unlink(link);
    MetricsFile *m = metrics_open(link);
    for (int e = 1; e <= 2; e++) {
        metrics_begin(m);
        metrics_int(m, "epoch", e);
        metrics_end(m);
    }
    metrics_close(m);
    snprintf(tmp, sizeof tmp, "%s.tmp", link);
    ok = ok && expect_true(symlink(target, tmp) == 0, "symlink: %s", strerror(errno));
    metrics_close(metrics_open_resumed(link, 2)); /* drops epoch 2: rewritten through .tmp */
    f = fopen(target, "r");
    n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    ok = ok && expect_true(strcmp(text, "precious") == 0, "the .tmp link's target holds \"%s\"", text);
    struct stat st;
    ok = ok && expect_true(lstat(link, &st) == 0 && S_ISREG(st.st_mode), "the metrics file is no "
                           "longer a regular file");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_metrics_links(void) { return with_tmpdir("test_metrics", body_links); }

/* The file's text (up to size - 1 bytes) in text; the file is removed. */
static void read_and_remove(const char *path, char *text, size_t size) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, size - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    unlink(path);
}

/* A resumed run keeps the lines of the epochs before it and drops the rest (written by
 * the run it continues after its last checkpoint), then appends. */
static int check_metrics_resumed(void) {
    char path[] = "/tmp/test_metrics_resumed_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return CHECK_FAIL;
    close(fd);
    MetricsFile *m = metrics_open(path);
    for (int e = 1; e <= 3; e++) {
        metrics_begin(m);
        metrics_int(m, "epoch", e);
        metrics_num(m, "train_loss", 1.0 / e);
        metrics_end(m);
    }
    metrics_close(m);
    m = metrics_open_resumed(path, 3); /* epoch 3 runs again */
    metrics_begin(m);
    metrics_int(m, "epoch", 3);
    metrics_num(m, "train_loss", 0.25);
    metrics_end(m);
    metrics_close(m);
    char text[512];
    read_and_remove(path, text, sizeof text);
    const char *want = "{\"epoch\": 1, \"train_loss\": 1}\n{\"epoch\": 2, \"train_loss\": 0.5}\n"
                       "{\"epoch\": 3, \"train_loss\": 0.25}\n";
    bool ok = expect_true(strcmp(text, want) == 0, "after a resume at epoch 3 the file holds:\n%s"
                          "expected:\n%s", text, want);
    ok = ok && expect_true(metrics_open_resumed(NULL, 1) == NULL, "a NULL path gives a file");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* metrics_also_num: queued keys join the next line, once; queued again before it, a key
 * keeps the last value (no pile-up when a line is skipped), and the queue is empty after. */
static int check_metrics_also(void) {
    char path[] = "/tmp/test_metrics_also_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return CHECK_FAIL;
    close(fd);
    MetricsFile *m = metrics_open(path);
    for (int e = 1; e <= 2 * METRICS_ALSO_MAX; e++) /* epochs whose lines were never written */
        metrics_also_num(m, "tokens_per_s", 100.0 * e), metrics_also_num(m, "test_ppl", e);
    metrics_begin(m);
    metrics_int(m, "epoch", 9);
    metrics_end(m);
    metrics_begin(m);
    metrics_int(m, "epoch", 10);
    metrics_end(m);
    metrics_close(m);
    char text[512];
    read_and_remove(path, text, sizeof text);
    const char *want = "{\"epoch\": 9, \"tokens_per_s\": 800, \"test_ppl\": 8}\n{\"epoch\": 10}\n";
    return expect_true(strcmp(text, want) == 0, "the file holds:\n%sexpected:\n%s", text, want)
               ? CHECK_PASS
               : CHECK_FAIL;
}

int main(void) {
    check_begin("core: metrics");
    check_run(NULL, "metrics: valid JSON lines, NaN as null, read back", check_metrics, 10);
    check_run(NULL, "metrics: unwritable file is a clear error", check_metrics_unwritable, 10);
    check_run(NULL, "metrics: a symbolic link at the file's name (or its .tmp) is never written through",
              check_metrics_links, 10);
    check_run(NULL, "metrics: a resumed run keeps earlier epochs' lines, drops later ones, appends", check_metrics_resumed, 10);
    check_run(NULL, "metrics: keys queued for the next line join it once, a key queued again keeps its last value", check_metrics_also, 10);
    return check_end();
}
