/* Unit tests of lib/data/token_file and prefetch: the file's batches are text_get_batch's
 * bit for bit (every row, any columns); a file that is not one refused; only an earlier
 * token file replaced (a device, FIFO, link, directory or other file left as it is); the loader
 * thread hands out the batches asked for, in order, reads the next one while the caller
 * works (its read starts before the caller's work ends), puts its reads on the trace's
 * "data loader" track, and a read error reaches the host as one message. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"
#include "core/rng.h"
#include "core/trace.h"
#include "core/trace_load.h"
#include "data/prefetch.h"
#include "data/token_file.h"
#include "framework/check.h"

enum { ROWS = 50, COLS = 5, BPTT = 7 };

static TextBatches split(void) {
    TextBatches s = {.rows = ROWS, .cols = COLS, .data = xmalloc(ROWS * COLS * sizeof(int))};
    Rng rng;
    rng_seed(&rng, 3, 1);
    for (int i = 0; i < ROWS * COLS; i++) s.data[i] = (int)rng_below(&rng, 1000);
    return s;
}

/* batch row i, columns col0 .. col0 + n, as get_batch gives it, batch-major */
static bool same_as_get_batch(const TextBatches *s, int64_t i, int col0, int n, const int *tok, const int *tgt) {
    const TextBatch b = text_get_batch(s, i, BPTT);
    for (int c = 0; c < n; c++)
        for (int t = 0; t < BPTT; t++)
            if (tok[c * BPTT + t] != b.input[t * b.cols + col0 + c] || tgt[c * BPTT + t] != b.target[t * b.cols + col0 + c])
                return expect_true(false, "row %lld column %d position %d differs from get_batch", (long long)i, col0 + c, t);
    return true;
}

static int body_read(const char *dir) {
    TextBatches s = split();
    char path[300], why[512];
    path_in(path, sizeof path, dir, "train.tokens");
    TokenFile f;
    bool ok = expect_true(token_file_write(path, &s, why, sizeof why), "write: %s", why) &&
              expect_true(token_file_open(&f, path, 0, why, sizeof why), "open: %s", why);
    if (!ok) return CHECK_FAIL;
    int tok[COLS * BPTT], tgt[COLS * BPTT];
    for (int64_t i = 0; i + BPTT < ROWS && ok; i++)
        for (int col0 = 0; col0 < COLS && ok; col0 += 2) {
            const int n = col0 + 2 <= COLS ? 2 : 1;
            ok = expect_true(token_file_read_batch(&f, i, BPTT, col0, n, tok, tgt, why, sizeof why), "read: %s", why) &&
                 same_as_get_batch(&s, i, col0, n, tok, tgt);
        }
    token_file_close(&f);
    /* not a token file: refused with the path */
    char other[300];
    path_in(other, sizeof other, dir, "other");
    FILE *o = fopen(other, "w");
    fputs("CTOKENS but not one", o);
    fclose(o);
    ok = expect_true(!token_file_open(&f, other, 0, why, sizeof why) && strstr(why, "is not a token file"),
                     "a text file opened as tokens: '%s'", why) && ok;
    /* a header whose rows x cols x 4 overflows to the file's size: 2^60 + 1 rows of 4
     * columns are 2^64 + 16 bytes, 16 once wrapped, and the file is 32 + 16 bytes */
    const int64_t head[5] = {1, ((int64_t)1 << 60) + 1, 4, 0, 0}; /* version rows cols, 16 bytes */
    o = fopen(other, "wb");
    fwrite("CTOKENS", 1, 8, o);
    fwrite(head, sizeof head[0], 5, o);
    fclose(o);
    ok = expect_true(!token_file_open(&f, other, 0, why, sizeof why) && strstr(why, "is not a token file"),
                     "a header of 2^60 + 1 rows (its size overflowing) opened: '%s'", why) && ok;
    text_batches_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The whole content of path (at most cap - 1 bytes), or "" when it cannot be read. */
static const char *content(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    return buf;
}

/* What is at the token file's path: only an earlier token file is replaced; a device, a
 * FIFO, a symbolic link, a directory or a file of the user's is refused by name and left
 * as it was (lesson 10's --token-file /dev/null once replaced the system's /dev/null). */
static int body_replace(const char *dir) {
    TextBatches s = split();
    char path[300], why[FS_MSG_MAX], buf[64];
    bool ok = true;
    /* nothing there, then an earlier token file: written, then replaced */
    path_in(path, sizeof path, dir, "train.tokens");
    ok = expect_true(token_file_write(path, &s, why, sizeof why), "a new file: %s", why) &&
         expect_true(token_file_write(path, &s, why, sizeof why), "over an earlier token file: %s", why);
    TokenFile f;
    ok = ok && expect_true(token_file_open(&f, path, 0, why, sizeof why), "open: %s", why);
    if (ok) token_file_close(&f);
    /* a file of the user's, and a link to it */
    char mine[300], link_path[300], fifo[300], sub[300], device[300];
    path_in(mine, sizeof mine, dir, "notes.txt");
    FILE *o = fopen(mine, "w");
    fputs("precious", o);
    fclose(o);
    why[0] = '\0';
    ok = expect_true(!token_file_write(mine, &s, why, sizeof why) && strstr(why, mine) &&
                     strstr(why, "not a token file") && strstr(why, "left as it is"),
                     "a file of the user's: '%s'", why) &&
         expect_true(strcmp(content(mine, buf, sizeof buf), "precious") == 0, "the user's file now holds '%s'", buf) && ok;
    path_in(link_path, sizeof link_path, dir, "link.tokens");
    ok = expect_true(symlink(path, link_path) == 0, "symlink") && ok;
    why[0] = '\0';
    struct stat st;
    ok = expect_true(!token_file_write(link_path, &s, why, sizeof why) && strstr(why, "a symbolic link"),
                     "a symbolic link (to a token file, even): '%s'", why) &&
         expect_true(lstat(link_path, &st) == 0 && S_ISLNK(st.st_mode), "the link is gone") && ok;
    path_in(fifo, sizeof fifo, dir, "fifo");
    ok = expect_true(mkfifo(fifo, 0644) == 0, "mkfifo") && ok;
    why[0] = '\0';
    ok = expect_true(!token_file_write(fifo, &s, why, sizeof why) && strstr(why, "a FIFO"), "a FIFO: '%s'", why) &&
         expect_true(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the FIFO is no longer one") && ok;
    path_in(sub, sizeof sub, dir, "sub");
    ok = expect_true(mkdir(sub, 0755) == 0, "mkdir") && ok;
    why[0] = '\0';
    ok = expect_true(!token_file_write(sub, &s, why, sizeof why) && strstr(why, "a directory"), "a directory: '%s'", why) && ok;
    /* a character device (as root, a copy of /dev/null's node, made in this directory) */
    path_in(device, sizeof device, dir, "null");
    if (mknod(device, S_IFCHR | 0644, makedev(1, 3)) == 0) {
        why[0] = '\0';
        ok = expect_true(!token_file_write(device, &s, why, sizeof why) && strstr(why, "a character device"),
                         "a character device: '%s'", why) &&
             expect_true(lstat(device, &st) == 0 && S_ISCHR(st.st_mode), "the device node was replaced") && ok;
    } else {
        printf("(not root: the character device case is not made)\n");
    }
    /* no temporary file is left beside any of them */
    char tmp[320];
    const char *names[] = {mine, link_path, fifo, device};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        snprintf(tmp, sizeof tmp, "%s.tmp", names[k]);
        ok = expect_true(access(tmp, F_OK) != 0, "%s was left behind", tmp) && ok;
    }
    text_batches_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int body_prefetch(const char *dir) {
    TextBatches s = split();
    char path[300], tpath[300], why[512];
    path_in(path, sizeof path, dir, "train.tokens");
    path_in(tpath, sizeof tpath, dir, "trace.json");
    TokenFile f;
    if (!token_file_write(path, &s, why, sizeof why) || !token_file_open(&f, path, 2000, why, sizeof why))
        return expect_true(false, "%s", why), CHECK_FAIL;
    trace_open(tpath, &(TraceOptions){.rank = 0, .world_size = 1});
    Prefetch *p = prefetch_init(&f, BPTT, 1, 3);
    static const int64_t rows[] = {14, 0, 21, 7};
    bool ok = true;
    prefetch_start(p, rows[0]);
    for (int k = 0; k < 4 && ok; k++) {
        trace_begin("step", TRACE_STEP);
        const TokenBatch *b = prefetch_wait(p);
        ok = expect_true(b->row == rows[k], "batch %d is row %lld, want %lld", k, (long long)b->row, (long long)rows[k]) &&
             same_as_get_batch(&s, rows[k], 1, 3, b->tokens, b->targets);
        if (k + 1 < 4) prefetch_start(p, rows[k + 1]);
        const struct timespec work = {0, 12000000}; /* 12 ms of "compute": 3 reads of 2 ms fit in it */
        nanosleep(&work, NULL);
        const int64_t work_end = trace_now_ns();
        ok = ok && expect_true(b->tokens[0] == s.data[rows[k] * COLS + 1], "batch %d changed while the next was read", k);
        trace_end("step");
        if (k + 1 < 4) {
            const TokenBatch *next = prefetch_wait(p); /* waits little: it was read meanwhile */
            ok = ok && expect_true(next->read_start_ns < work_end && next->read_end_ns <= trace_now_ns(),
                                   "batch %d's read did not start during batch %d's work", k + 1, k);
            /* asked for again below: give it back by reading it once more */
            prefetch_start(p, rows[k + 1]);
        }
    }
    prefetch_free(p);
    trace_close();
    TraceFile t;
    ok = expect_true(trace_load(tpath, &t, why, sizeof why), "the trace: %s", why) && ok;
    int reads = 0, waits = 0;
    for (int64_t i = 0; i < t.count; i++) {
        reads += t.events[i].tid == TRACE_TID_LOADER && strcmp(t.events[i].name, "read batch") == 0 && t.events[i].cat == TRACE_DATA;
        waits += t.events[i].tid == TRACE_TID_HOST && strcmp(t.events[i].name, "wait batch") == 0;
    }
    ok = expect_true(reads == 7 && waits == 7, "%d reads on the loader's track and %d waits on the host's: want 7, 7",
                     reads, waits) && ok;
    trace_file_free(&t);
    FILE *tf = fopen(tpath, "r");
    char text[8192] = "";
    if (tf) text[fread(text, 1, sizeof text - 1, tf)] = '\0', fclose(tf);
    ok = expect_true(strstr(text, "\"data loader\""), "the loader's track is not named \"data loader\"") && ok;
    token_file_close(&f);
    text_batches_free(&s);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A read error (the file cut short after it was opened) stops at prefetch_wait, naming it. */
static char g_path[300];
static void cut_short(void *arg) {
    (void)arg;
    TextBatches s = split();
    char why[512];
    TokenFile f;
    if (!token_file_write(g_path, &s, why, sizeof why) || !token_file_open(&f, g_path, 0, why, sizeof why)) return;
    if (truncate(g_path, 100) != 0) return;
    Prefetch *p = prefetch_init(&f, BPTT, 0, 2);
    prefetch_start(p, 20);
    prefetch_wait(p);
}

static int body_error(const char *dir) {
    path_in(g_path, sizeof g_path, dir, "short.tokens");
    ChildResult r;
    run_child(cut_short, NULL, &r);
    return expect_exit("a token file cut short", &r, 1, "the data loader: reading", "short.tokens", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
}

static int check_read(void) { return with_tmpdir("token_file", body_read); }
static int check_prefetch(void) { return with_tmpdir("prefetch", body_prefetch); }
static int check_replace(void) { return with_tmpdir("token_file_replace", body_replace); }
static int check_error(void) { return with_tmpdir("prefetch_error", body_error); }

int main(void) {
    check_begin("data: token_file, prefetch");
    check_run(NULL, "a batch's sequences read one by one = text_get_batch's, every row; a foreign file refused", check_read, 10);
    check_run(NULL, "only an earlier token file is replaced: a device, FIFO, link, directory or user's file is refused, untouched", check_replace, 10);
    check_run(NULL, "the loader thread: rows in the order asked, read during the caller's work, on the loader's track", check_prefetch, 20);
    check_run(NULL, "a read error stops at prefetch_wait with the reader's message", check_error, 10);
    return check_end();
}
