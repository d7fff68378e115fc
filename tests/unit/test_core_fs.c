/* Unit tests of lib/core/fs: joining paths (no double '/', too long refused), reading a
 * whole file (contents and a terminating 0, the size cap, missing files, directories and
 * FIFOs refused at once rather than waited on), opening only regular files, mkdir -p
 * (nested, existing, a file in the way, named in the message), and the stat checks. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "framework/check.h"

static bool write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(text, f) >= 0;
    return expect_true(f && fclose(f) == 0 && ok, "cannot write %s", path);
}

static int check_join(void) {
    char out[16];
    bool ok = expect_true(fs_join(out, sizeof out, "a/b", "c") == 0 && strcmp(out, "a/b/c") == 0,
                          "join(a/b, c) gave \"%s\"", out);
    ok = ok && expect_true(fs_join(out, sizeof out, "a/", "c") == 0 && strcmp(out, "a/c") == 0,
                           "join(a/, c) gave \"%s\"", out);
    ok = ok && expect_true(fs_join(out, sizeof out, "/", "c") == 0 && strcmp(out, "/c") == 0,
                           "join(/, c) gave \"%s\"", out);
    ok = ok && expect_true(fs_join(out, sizeof out, "", "c") == 0 && strcmp(out, "c") == 0,
                           "join(\"\", c) gave \"%s\"", out);
    /* 15 characters fit in 16 bytes; 16 do not, and leave an empty string */
    ok = ok && expect_true(fs_join(out, sizeof out, "0123456", "89abcde") == 0 &&
                               strlen(out) == 15, "15 characters in 16 bytes: \"%s\"", out);
    ok = ok && expect_true(fs_join(out, sizeof out, "0123456", "89abcdef") == -1 && out[0] == 0,
                           "16 characters in 16 bytes: %s", out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_join_die(void *arg) {
    (void)arg;
    char out[8];
    fs_join_or_die(out, sizeof out, "datasets", "mnist");
}

static int check_join_or_die(void) {
    ChildResult o;
    run_child(body_join_die, NULL, &o);
    return expect_exit("a path too long", &o, 1, "error: path too long", "datasets/mnist",
                       (const char *)NULL)
               ? CHECK_PASS
               : CHECK_FAIL;
}

static int body_read(const char *dir) {
    char path[512], msg[FS_MSG_MAX];
    path_in(path, sizeof path, dir, "a.txt");
    bool ok = write_text(path, "hello, file");
    uint8_t *b = NULL;
    size_t len = 0;
    ok = ok && expect_true(fs_read_file(path, 11, &b, &len, msg, sizeof msg) == 0, "%s", msg);
    ok = ok && expect_true(len == 11 && memcmp(b, "hello, file", 11) == 0 && b[11] == 0,
                           "read back %zu bytes: \"%.*s\"", len, (int)len, b ? (char *)b : "");
    free(b);
    /* the cap: one byte less is refused, naming the file and both sizes */
    ok = ok && expect_true(fs_read_file(path, 10, &b, &len, msg, sizeof msg) == -1 && !b &&
                               strstr(msg, path) && strstr(msg, "11 bytes") &&
                               strstr(msg, "more than the 10"), "over the cap: \"%s\"", msg);
    /* an empty file: 0 bytes, still a terminated buffer */
    path_in(path, sizeof path, dir, "empty");
    ok = ok && write_text(path, "");
    ok = ok && expect_true(fs_read_file(path, 0, &b, &len, msg, sizeof msg) == 0 && len == 0 &&
                               b && b[0] == 0, "empty file: %s", msg);
    free(b);
    path_in(path, sizeof path, dir, "missing");
    ok = ok && expect_true(fs_read_file(path, 100, &b, &len, msg, sizeof msg) == -1 &&
                               strstr(msg, path) && strstr(msg, "No such file"),
                           "missing file: \"%s\"", msg);
    ok = ok && expect_true(fs_read_file(dir, 100, &b, &len, msg, sizeof msg) == -1 &&
                               strstr(msg, "is a directory"), "directory: \"%s\"", msg);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_read(void) { return with_tmpdir("test_core_fs", body_read); }

/* A FIFO with no writer: opening it for reading would wait for one; it must be refused
 * at once (the check's time limit catches a wait). */
static int body_fifo(const char *dir) {
    char path[512], msg[FS_MSG_MAX];
    path_in(path, sizeof path, dir, "best.ckpt");
    bool ok = expect_true(mkfifo(path, 0600) == 0, "mkfifo: %s", strerror(errno));
    uint8_t *b = NULL;
    size_t len;
    ok = ok && expect_true(fs_read_file(path, 100, &b, &len, msg, sizeof msg) == -1 && !b &&
                               strstr(msg, path) && strstr(msg, "not a regular file (a FIFO)"),
                           "FIFO: \"%s\"", msg);
    ok = ok && expect_true(fs_open_regular(path, msg, sizeof msg) == -1, "FIFO opened");
    ok = ok && expect_true(!fs_is_regular_file(path) && !fs_is_dir(path), "a FIFO as file or dir");
    /* a regular file is opened blocking (O_NONBLOCK was only for the open) */
    path_in(path, sizeof path, dir, "f");
    ok = ok && write_text(path, "x");
    int fd = ok ? fs_open_regular(path, msg, sizeof msg) : -1;
    ok = ok && expect_true(fd >= 0, "%s", msg);
    ok = ok && expect_true((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0 &&
                               (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0,
                           "the descriptor is non-blocking or not close-on-exec");
    if (fd >= 0) close(fd);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_fifo(void) { return with_tmpdir("test_core_fs", body_fifo); }

static int body_stat_checks(const char *dir) {
    char file[512], link_path[512], missing[512];
    path_in(file, sizeof file, dir, "f");
    path_in(link_path, sizeof link_path, dir, "link");
    path_in(missing, sizeof missing, dir, "missing");
    bool ok = write_text(file, "x") && expect_true(symlink(file, link_path) == 0, "symlink");
    ok = ok && expect_true(fs_is_regular_file(file) && !fs_is_dir(file), "a file");
    ok = ok && expect_true(fs_is_regular_file(link_path), "a link to a file");
    ok = ok && expect_true(fs_is_dir(dir) && !fs_is_regular_file(dir), "a directory");
    ok = ok && expect_true(!fs_is_dir(missing) && !fs_is_regular_file(missing), "nothing");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_stat_checks(void) { return with_tmpdir("test_core_fs", body_stat_checks); }

static int body_mkdir_p(const char *dir) {
    char path[512], msg[FS_MSG_MAX] = "";
    path_in(path, sizeof path, dir, "a/b//c/");
    bool ok = expect_true(fs_mkdir_p(path, 0700, msg, sizeof msg) == 0, "%s", msg);
    path_in(path, sizeof path, dir, "a/b/c");
    ok = ok && expect_true(fs_is_dir(path), "%s was not made", path);
    ok = ok && expect_true(fs_mkdir_p(path, 0700, msg, sizeof msg) == 0, "again: %s", msg);
    ok = ok && expect_true(fs_mkdir_p("/", 0700, msg, sizeof msg) == 0, "/: %s", msg);
    /* a file in the way, as a parent and as the last part: named */
    char file[512];
    path_in(file, sizeof file, dir, "a/f");
    ok = ok && write_text(file, "x");
    path_in(path, sizeof path, dir, "a/f/g");
    ok = ok && expect_true(fs_mkdir_p(path, 0700, msg, sizeof msg) == -1 && strstr(msg, file) &&
                               !strstr(msg, "f/g") && strstr(msg, "not a directory"),
                           "a file as a parent: \"%s\"", msg);
    ok = ok && expect_true(fs_mkdir_p(file, 0700, msg, sizeof msg) == -1 && strstr(msg, file) &&
                               strstr(msg, "exists and is not a directory"),
                           "a file as the last part: \"%s\"", msg);
    ok = ok && expect_true(fs_mkdir_p("", 0700, msg, sizeof msg) == -1, "an empty name");
    /* a directory we may not write into (root may: skipped then) */
    char locked[512];
    path_in(locked, sizeof locked, dir, "locked");
    ok = ok && expect_true(mkdir(locked, 0500) == 0, "mkdir %s", locked);
    path_in(path, sizeof path, dir, "locked/x/y");
    if (ok && access(locked, W_OK) != 0)
        ok = expect_true(fs_mkdir_p(path, 0700, msg, sizeof msg) == -1 &&
                             strstr(msg, "cannot create the directory") &&
                             strstr(msg, "locked/x:") && strstr(msg, "Permission denied"),
                         "no permission: \"%s\"", msg);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_mkdir_p(void) { return with_tmpdir("test_core_fs", body_mkdir_p); }

int main(void) {
    check_begin("core: fs");
    check_run(NULL, "fs_join: one '/', empty dir, too long refused", check_join, 10);
    check_run(NULL, "fs_join_or_die: a path too long is a user error", check_join_or_die, 10);
    check_run(NULL, "fs_read_file: contents and a 0 after, the cap, missing, a directory",
              check_read, 10);
    check_run(NULL, "a FIFO is refused at once; regular files open blocking, close-on-exec",
              check_fifo, 10);
    check_run(NULL, "fs_is_regular_file, fs_is_dir (links followed)", check_stat_checks, 10);
    check_run(NULL, "fs_mkdir_p: nested, existing, a file in the way, no permission",
              check_mkdir_p, 10);
    return check_end();
}
