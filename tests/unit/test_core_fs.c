/* Unit tests of lib/core/fs: joining paths (no double '/', too long refused), reading a
 * whole file (contents and a terminating 0, the size cap, missing files, directories and
 * FIFOs refused at once rather than waited on), opening only regular files, mkdir -p
 * (nested, existing, a file in the way, named in the message), the stat checks, and
 * creating files for writing never through a symbolic link (issue 30, fault 2). */
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

/* The whole text of path (up to cap - 1 bytes) into out; "" when it cannot be read. */
static void slurp(const char *path, char *out, size_t cap) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, cap - 1, f) : 0;
    if (f) fclose(f);
    out[n] = '\0';
}

static bool write_fd(int fd, const char *text) {
    size_t n = strlen(text);
    bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
    if (fd >= 0) close(fd);
    return ok;
}

/* Issue 30, fault 2: a symbolic link planted at an output's name is never written
 * through: fs_create refuses it by name, fs_create_fresh replaces the link itself. The
 * link's target keeps its bytes either way. */
static int body_create_links(const char *dir) {
    char target[512], link[512], text[64], msg[FS_MSG_MAX];
    path_in(target, sizeof target, dir, "precious.txt");
    path_in(link, sizeof link, dir, "metrics.jsonl");
    bool ok = write_text(target, "precious") &&
              expect_true(symlink(target, link) == 0, "symlink: %s", strerror(errno));
    int fd = ok ? fs_create(link, 0, 0666, msg, sizeof msg) : -1;
    ok = ok && expect_true(fd == -1 && strstr(msg, link) && strstr(msg, "symbolic link"),
                           "fs_create through a link: fd %d, \"%s\"", fd, msg);
    fd = ok ? fs_create(link, FS_APPEND, 0666, msg, sizeof msg) : -1;
    ok = ok && expect_true(fd == -1 && strstr(msg, "symbolic link"), "fs_create (append) through a "
                           "link: fd %d, \"%s\"", fd, msg);
    ok = ok && expect_true(fs_fopen_write(link, 0, msg, sizeof msg) == NULL && strstr(msg, "symbolic link"),
                           "fs_fopen_write through a link: \"%s\"", msg);
    /* a dangling link would be created at its target by O_CREAT without O_NOFOLLOW */
    char dangling[512], nowhere[512];
    path_in(dangling, sizeof dangling, dir, "dangling");
    path_in(nowhere, sizeof nowhere, dir, "created-through-link");
    ok = ok && expect_true(symlink(nowhere, dangling) == 0, "symlink: %s", strerror(errno));
    fd = ok ? fs_create(dangling, 0, 0666, msg, sizeof msg) : -1;
    ok = ok && expect_true(fd == -1 && access(nowhere, F_OK) != 0,
                           "a dangling link's target was created (fd %d)", fd);
    /* the temporary file: the planted link goes, a new regular file takes its name */
    char tmp[512];
    path_in(tmp, sizeof tmp, dir, "ckpt-000001.ckpt.tmp");
    ok = ok && expect_true(symlink(target, tmp) == 0, "symlink: %s", strerror(errno));
    fd = ok ? fs_create_fresh(tmp, 0644, msg, sizeof msg) : -1;
    ok = ok && expect_true(fd >= 0, "fs_create_fresh over a planted link: %s", msg);
    ok = ok && expect_true(write_fd(fd, "new"), "cannot write the fresh file");
    struct stat st;
    ok = ok && expect_true(lstat(tmp, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file", tmp);
    slurp(target, text, sizeof text);
    ok = ok && expect_true(strcmp(text, "precious") == 0, "the link's target now holds \"%s\"", text);
    slurp(tmp, text, sizeof text);
    ok = ok && expect_true(strcmp(text, "new") == 0, "the fresh file holds \"%s\"", text);
    /* a stale longer file: replaced, not overwritten in part */
    ok = ok && write_text(tmp, "a stale, longer temporary file");
    fd = ok ? fs_create_fresh(tmp, 0644, msg, sizeof msg) : -1;
    ok = ok && expect_true(write_fd(fd, "new"), "fs_create_fresh over a stale file: %s", msg);
    slurp(tmp, text, sizeof text);
    ok = ok && expect_true(strcmp(text, "new") == 0, "after a stale file: \"%s\"", text);
    /* a directory in the way is named, not removed */
    char sub[512];
    make_dir_in(sub, sizeof sub, dir, "sub.tmp");
    fd = fs_create_fresh(sub, 0644, msg, sizeof msg);
    ok = ok && expect_true(fd == -1 && strstr(msg, "is a directory") && fs_is_dir(sub),
                           "fs_create_fresh on a directory: fd %d, \"%s\"", fd, msg);
    fd = fs_create(sub, 0, 0666, msg, sizeof msg);
    ok = ok && expect_true(fd == -1 && strstr(msg, "is a directory"), "fs_create on a directory: "
                           "fd %d, \"%s\"", fd, msg);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_create_links(void) { return with_tmpdir("test_core_fs", body_create_links); }

/* fs_create: empties a regular file or appends to it; new files get the mode less the
 * umask (0666 under umask 022: 0644, readable by others, as fopen makes them); a FIFO
 * without a reader is refused at once, /dev/null written as it is. */
static int body_create(const char *dir) {
    char path[512], text[64], msg[FS_MSG_MAX];
    path_in(path, sizeof path, dir, "out.txt");
    mode_t old = umask(022);
    int fd = fs_create(path, 0, 0666, msg, sizeof msg);
    umask(old);
    struct stat st;
    bool ok = expect_true(fd >= 0 && fstat(fd, &st) == 0, "fs_create: %s", msg);
    ok = ok && expect_true((st.st_mode & 07777) == 0644, "a new file has mode %04o, want 0644",
                           (unsigned)(st.st_mode & 07777));
    ok = ok && expect_true((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC),
                           "the descriptor is non-blocking or not close-on-exec");
    ok = ok && expect_true(write_fd(fd, "first, longer"), "write");
    fd = fs_create(path, 0, 0666, msg, sizeof msg);
    ok = ok && expect_true(write_fd(fd, "second"), "fs_create again: %s", msg);
    slurp(path, text, sizeof text);
    ok = ok && expect_true(strcmp(text, "second") == 0, "rewritten: \"%s\" (not emptied?)", text);
    fd = fs_create(path, FS_APPEND, 0666, msg, sizeof msg);
    ok = ok && expect_true(write_fd(fd, "+third"), "fs_create (append): %s", msg);
    slurp(path, text, sizeof text);
    ok = ok && expect_true(strcmp(text, "second+third") == 0, "appended: \"%s\"", text);
    FILE *f = fs_fopen_write(path, FS_APPEND, msg, sizeof msg);
    ok = ok && expect_true(f && fputs("!", f) >= 0 && fclose(f) == 0, "fs_fopen_write: %s", msg);
    slurp(path, text, sizeof text);
    ok = ok && expect_true(strcmp(text, "second+third!") == 0, "fs_fopen_write appended: \"%s\"", text);
    char fifo[512];
    path_in(fifo, sizeof fifo, dir, "fifo");
    ok = ok && expect_true(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    fd = fs_create(fifo, 0, 0666, msg, sizeof msg);
    ok = ok && expect_true(fd == -1 && strstr(msg, "not a regular file (a FIFO)"),
                           "a FIFO without a reader: fd %d, \"%s\"", fd, msg);
    fd = fs_create("/dev/null", 0, 0666, msg, sizeof msg);
    ok = ok && expect_true(write_fd(fd, "x"), "/dev/null: %s", msg);
    path_in(path, sizeof path, dir, "missing/out.txt");
    fd = fs_create(path, 0, 0666, msg, sizeof msg);
    ok = ok && expect_true(fd == -1 && strstr(msg, path) && strstr(msg, "does its directory exist"),
                           "a missing directory: \"%s\"", msg);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_create(void) { return with_tmpdir("test_core_fs", body_create); }

/* fs_read_head: the first bytes and the size of a 10 GB sparse file, without reading
 * the rest (the check's time limit and the process's peak memory would show it). */
static int body_read_head(const char *dir) {
    char path[512], msg[FS_MSG_MAX];
    path_in(path, sizeof path, dir, "sparse");
    const off_t ten_gb = (off_t)10 << 30;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    bool ok = expect_true(fd >= 0 && write(fd, "HEAD", 4) == 4 && ftruncate(fd, ten_gb) == 0,
                          "cannot make a sparse file: %s", strerror(errno));
    if (fd >= 0) close(fd);
    uint8_t head[32];
    size_t got = 0;
    uint64_t size = 0;
    ok = ok && expect_true(fs_read_head(path, head, sizeof head, &got, &size, msg, sizeof msg) == 0,
                           "%s", msg);
    ok = ok && expect_true(got == 32 && memcmp(head, "HEAD\0", 5) == 0 && size == (uint64_t)ten_gb,
                           "got %zu bytes, size %llu", got, (unsigned long long)size);
    path_in(path, sizeof path, dir, "short");
    ok = ok && write_text(path, "abc");
    ok = ok && expect_true(fs_read_head(path, head, sizeof head, &got, &size, msg, sizeof msg) == 0 &&
                               got == 3 && size == 3, "a 3-byte file: got %zu, size %llu", got,
                           (unsigned long long)size);
    ok = ok && expect_true(fs_read_head(dir, head, sizeof head, &got, &size, msg, sizeof msg) == -1 &&
                               strstr(msg, "is a directory"), "a directory: \"%s\"", msg);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_read_head(void) { return with_tmpdir("test_core_fs", body_read_head); }

int main(void) {
    check_begin("core: fs");
    check_run(NULL, "fs_join: one '/', empty dir, too long refused", check_join, 10);
    check_run(NULL, "fs_join_or_die: a path too long is a user error", check_join_or_die, 10);
    check_run(NULL, "fs_read_file: contents and a 0 after, the cap, missing, a directory",
              check_read, 10);
    check_run(NULL, "a FIFO is refused at once; regular files open blocking, close-on-exec",
              check_fifo, 10);
    check_run(NULL, "fs_is_regular_file, fs_is_dir (links followed)", check_stat_checks, 10);
    check_run(NULL, "fs_create, fs_create_fresh: a planted symbolic link is never written through",
              check_create_links, 10);
    check_run(NULL, "fs_create: emptied or appended, mode 0666 less the umask, a FIFO refused at once",
              check_create, 10);
    check_run(NULL, "fs_read_head: the header and size of a 10 GB sparse file, the rest unread",
              check_read_head, 10);
    check_run(NULL, "fs_mkdir_p: nested, existing, a file in the way, no permission",
              check_mkdir_p, 10);
    return check_end();
}
