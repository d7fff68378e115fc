/* The token file (data/token_file.h): written once, read a sequence at a time. */
#include "data/token_file.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"

static const char MAGIC[8] = "CTOKENS";
enum { HEADER = 32, VERSION = 1 };

/* What lstat says a path is, for a message ("a character device, not ..."); NULL: a
 * regular file. */
static const char *kind_of(mode_t m) {
    return S_ISLNK(m)    ? "a symbolic link, not a token file that an earlier run wrote"
         : S_ISCHR(m)  ? "a character device, not a token file that an earlier run wrote"
         : S_ISBLK(m)  ? "a block device, not a token file that an earlier run wrote"
         : S_ISFIFO(m) ? "a FIFO, not a token file that an earlier run wrote"
         : S_ISSOCK(m) ? "a socket, not a token file that an earlier run wrote"
         : S_ISDIR(m)  ? "a directory, not a token file"
         : S_ISREG(m)  ? NULL : "not a regular file, not a token file that an earlier run wrote";
}

/* Whether path may be replaced: 0 when nothing is there, 1 when it is this program's
 * own (a regular file, not a link, that starts as a token file does: an earlier run's),
 * -1 and why for anything else: a device (/dev/null), a FIFO, a link, a directory,
 * another file of the user's. Nothing is opened but a regular file, read-only. */
static int may_replace(const char *path, char *why, size_t cap) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(why, cap, "cannot look at %s, where the token file goes: %s", path, strerror(errno));
        return -1;
    }
    const char *kind = kind_of(st.st_mode);
    char head[8] = {0};
    if (!kind) {
        const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat now;
        const bool same = fd >= 0 && fstat(fd, &now) == 0 && S_ISREG(now.st_mode) && now.st_ino == st.st_ino;
        const bool ours = same && pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head &&
                          memcmp(head, MAGIC, sizeof head) == 0;
        if (fd >= 0) close(fd);
        if (ours) return 1;
    }
    snprintf(why, cap, "%s is %s: it is left as it is. Write the tokens elsewhere (--token-file "
             "PATH, a new file), or move that one away", path,
             kind ? kind : "a file that is not a token file (it does not start with CTOKENS)");
    return -1;
}

/* tmp, complete, in path's place: over an earlier token file (rename), or as a new name
 * that fails if anything appeared there since it was looked at (link). errno on failure. */
static int put_in_place(const char *tmp, const char *path, bool replace) {
    if (replace) return rename(tmp, path) == 0 ? 0 : errno;
    if (link(tmp, path) == 0) {
        unlink(tmp);
        return 0;
    }
    const int e = errno;
    if (e != EPERM && e != ENOTSUP && e != ENOSYS) return e; /* EEXIST among them */
    /* a file system without hard links: nothing was there a moment ago */
    struct stat st;
    if (lstat(path, &st) == 0) return EEXIST;
    return rename(tmp, path) == 0 ? 0 : errno;
}

bool token_file_write(const char *path, const TextBatches *b, char *why, size_t cap) {
    char tmp[FS_PATH_MAX], msg[FS_MSG_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        snprintf(why, cap, "%s: path too long", path);
        return false;
    }
    const int there = may_replace(path, why, cap); /* before a byte is written */
    if (there < 0) return false;
    const int fd = fs_create_fresh(tmp, 0644, msg, sizeof msg);
    if (fd < 0) {
        snprintf(why, cap, "%s", msg);
        return false;
    }
    int64_t head[4];
    memcpy(head, MAGIC, 8);
    head[1] = VERSION, head[2] = b->rows, head[3] = b->cols;
    int err = fs_write_all(fd, head, HEADER) != 0 ? errno : 0; /* the first error's errno */
    int32_t *col = xmalloc((size_t)b->rows * sizeof *col);
    for (int c = 0; !err && c < b->cols; c++) {
        for (int64_t r = 0; r < b->rows; r++) col[r] = b->data[r * b->cols + c];
        if (fs_write_all(fd, col, (size_t)b->rows * sizeof *col) != 0) err = errno;
    }
    xfree(col);
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno; /* network file systems report write errors here */
    if (!err) err = put_in_place(tmp, path, there == 1);
    if (err) {
        if (err == EEXIST)
            snprintf(why, cap, "%s appeared while the token file was written (another program "
                     "writing there?): it is left as it is; write the tokens elsewhere "
                     "(--token-file PATH)", path);
        else
            snprintf(why, cap, "cannot write the token file %s: %s", path, strerror(err));
        unlink(tmp);
        return false;
    }
    return true;
}

bool token_file_open(TokenFile *f, const char *path, int64_t read_latency_us, char *why, size_t cap) {
    char msg[FS_MSG_MAX];
    *f = (TokenFile){.fd = -1, .read_latency_us = read_latency_us};
    snprintf(f->path, sizeof f->path, "%s", path);
    const int fd = fs_open_regular(path, msg, sizeof msg);
    if (fd < 0) {
        snprintf(why, cap, "%s", msg);
        return false;
    }
    int64_t head[4];
    const off_t size = lseek(fd, 0, SEEK_END);
    if (pread(fd, head, HEADER, 0) != HEADER || memcmp(head, MAGIC, 8) != 0 || head[1] != VERSION ||
        head[2] < 2 || head[3] < 1 || head[3] > 1 << 20 ||
        head[2] > (INT64_MAX - HEADER) / (int64_t)sizeof(int32_t) / head[3] || /* no overflow below */
        (int64_t)size != HEADER + head[2] * head[3] * (int64_t)sizeof(int32_t)) {
        snprintf(why, cap, "%s is not a token file of version %d as token_file_write writes it "
                 "(magic, version, sizes, %lld bytes): write it again", path, VERSION, (long long)size);
        close(fd);
        return false;
    }
    f->fd = fd, f->rows = head[2], f->cols = (int)head[3];
    return true;
}

void token_file_close(TokenFile *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}

bool token_file_read_batch(const TokenFile *f, int64_t i, int bptt, int col0, int n, int *tokens,
                           int *targets, char *why, size_t cap) {
    CHECK(bptt > 0 && n > 0 && col0 >= 0 && col0 + n <= f->cols, "token_file_read_batch: columns "
          "%d..%d of %d, bptt %d", col0, col0 + n, f->cols, bptt);
    CHECK(i >= 0 && i + bptt < f->rows, "token_file_read_batch at row %lld: the file has %lld rows, "
          "a full batch of %d needs row %lld", (long long)i, (long long)f->rows, bptt, (long long)(i + bptt));
    int32_t *run = xmalloc((size_t)(bptt + 1) * sizeof *run); /* one sequence and its last target */
    for (int s = 0; s < n; s++) {
        if (f->read_latency_us > 0) { /* the stand-in for a parallel file system's latency */
            const struct timespec wait = {f->read_latency_us / 1000000, f->read_latency_us % 1000000 * 1000};
            nanosleep(&wait, NULL);
        }
        const size_t bytes = (size_t)(bptt + 1) * sizeof *run;
        const off_t at = HEADER + ((off_t)(col0 + s) * f->rows + i) * (off_t)sizeof *run;
        const ssize_t got = pread(f->fd, run, bytes, at);
        if (got != (ssize_t)bytes) {
            snprintf(why, cap, "reading %zu bytes at %lld of %s: %s", bytes, (long long)at, f->path,
                     got < 0 ? strerror(errno) : "the file is shorter (changed while the run reads it?)");
            xfree(run);
            return false;
        }
        for (int t = 0; t < bptt; t++) tokens[s * bptt + t] = run[t], targets[s * bptt + t] = run[t + 1];
    }
    xfree(run);
    return true;
}
