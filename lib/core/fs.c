#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

int fs_join(char *out, size_t cap, const char *dir, const char *name) {
    size_t d = strlen(dir);
    const char *sep = d == 0 || dir[d - 1] == '/' ? "" : "/";
    int n = snprintf(out, cap, "%s%s%s", dir, sep, name);
    if (n >= 0 && (size_t)n < cap) return 0;
    if (cap) out[0] = '\0';
    return -1;
}

void fs_join_or_die(char *out, size_t cap, const char *dir, const char *name) {
    if (fs_join(out, cap, dir, name) != 0)
        fatal("path too long (more than %zu characters): %s/%s", cap - 1, dir, name);
}

bool fs_is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool fs_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *kind_of(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a file";
}

int fs_open_regular(const char *path, char *msg, size_t cap) {
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return fail_msg(msg, cap, "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail_msg(msg, cap, "cannot open %s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        if (S_ISDIR(st.st_mode)) return fail_msg(msg, cap, "%s is a directory, not a file", path);
        return fail_msg(msg, cap, "%s is not a regular file (%s): give the path of a file",
                    path, kind_of(st.st_mode));
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return fail_msg(msg, cap, "cannot open %s: %s", path, strerror(e));
    }
    return fd;
}

int fs_read_file(const char *path, size_t max_bytes, uint8_t **bytes, size_t *len, char *msg,
                 size_t cap) {
    *bytes = NULL;
    *len = 0;
    int fd = fs_open_regular(path, msg, cap);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail_msg(msg, cap, "cannot read %s: %s", path, strerror(e));
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > max_bytes) {
        close(fd);
        return fail_msg(msg, cap, "%s is %lld bytes, more than the %zu this reader accepts: not the "
                    "file expected, or a corrupt one", path, (long long)st.st_size, max_bytes);
    }
    size_t size = (size_t)st.st_size;
    uint8_t *b = malloc(size + 1);
    if (!b) {
        close(fd);
        return fail_msg(msg, cap, "out of memory reading %s (%zu bytes)", path, size);
    }
    size_t got = 0;
    while (got < size) { /* the file may shrink while we read: stop at its end */
        ssize_t n = read(fd, b + got, size - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            free(b);
            return fail_msg(msg, cap, "cannot read %s: %s", path, strerror(e));
        }
        if (n == 0) break;
        got += (size_t)n;
    }
    close(fd);
    b[got] = 0;
    *bytes = b;
    *len = got;
    return 0;
}

/* mkdir of one component; an existing directory is fine. */
static int make_one(const char *path, mode_t mode, char *msg, size_t cap) {
    if (mkdir(path, mode) == 0) return 0;
    int e = errno;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return 0;
        return fail_msg(msg, cap, "%s exists and is not a directory", path);
    }
    return fail_msg(msg, cap, "cannot create the directory %s: %s", path, strerror(e));
}

int fs_mkdir_p(const char *path, mode_t mode, char *msg, size_t cap) {
    size_t n = strlen(path);
    if (n == 0) return fail_msg(msg, cap, "cannot create a directory with an empty name");
    char *p = malloc(n + 1);
    if (!p) return fail_msg(msg, cap, "out of memory creating %s", path);
    memcpy(p, path, n + 1);
    int rc = 0;
    for (char *s = p + 1; rc == 0 && *s; s++) { /* each parent: "a", "a/b", ... */
        if (*s != '/' || s[-1] == '/') continue;
        *s = '\0';
        rc = make_one(p, mode, msg, cap);
        *s = '/';
    }
    if (rc == 0) rc = make_one(p, mode, msg, cap);
    free(p);
    return rc;
}
