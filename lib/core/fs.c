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

/* Why open() for writing failed at path, in words. */
static int create_error(const char *path, int e, char *msg, size_t cap) {
    struct stat st;
    if (e == ELOOP && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return fail_msg(msg, cap, "%s is a symbolic link: not written through (it could point at "
                        "any file); remove the link or give another path", path);
    if (e == EISDIR) return fail_msg(msg, cap, "%s is a directory, not a file", path);
    if (e == ENXIO && lstat(path, &st) == 0) /* a FIFO without a reader, a device */
        return fail_msg(msg, cap, "%s is not a regular file (%s): give the path of a file", path,
                        kind_of(st.st_mode));
    return fail_msg(msg, cap, "cannot create %s: %s%s", path, strerror(e),
                    e == ENOENT ? " (does its directory exist?)" : "");
}

int fs_create(const char *path, int flags, mode_t mode, char *msg, size_t cap) {
    /* O_NOFOLLOW: a link at path fails (ELOOP) instead of being followed. O_NONBLOCK: a
     * FIFO fails (ENXIO) or opens at once instead of waiting for a reader. No O_TRUNC
     * yet: only a regular file, checked below, may be emptied. */
    int how = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd = open(path, how | (flags & FS_APPEND ? O_APPEND : 0), mode);
    if (fd < 0) return create_error(path, errno, msg, cap);
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? 0 : -1;
    /* a FIFO with a reader and a character device (/dev/null) take a stream as they are */
    if (rc == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode)) {
        close(fd);
        return fail_msg(msg, cap, "%s is not a regular file (%s): give the path of a file", path,
                        kind_of(st.st_mode));
    }
    if (rc == 0 && S_ISREG(st.st_mode) && !(flags & FS_APPEND)) rc = ftruncate(fd, 0);
    int fl = rc == 0 ? fcntl(fd, F_GETFL) : -1;
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return fail_msg(msg, cap, "cannot write %s: %s", path, strerror(e));
    }
    return fd;
}

int fs_create_fresh(const char *path, mode_t mode, char *msg, size_t cap) {
    /* unlink removes a link itself, never its target; a directory stays (EISDIR) */
    if (unlink(path) != 0 && errno != ENOENT) {
        int e = errno;
        if (fs_is_dir(path)) return fail_msg(msg, cap, "%s is a directory, not a file", path);
        return fail_msg(msg, cap, "cannot remove the stale %s: %s", path, strerror(e));
    }
    /* O_EXCL: fails if anything appeared at path since (a link planted again), and with
     * O_CREAT it never follows a link */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0) {
        int e = errno;
        if (e == EEXIST)
            return fail_msg(msg, cap, "%s appeared again after it was removed (another program "
                            "writing the same file?)", path);
        return create_error(path, e, msg, cap);
    }
    return fd;
}

FILE *fs_fopen_write(const char *path, int flags, char *msg, size_t cap) {
    int fd = fs_create(path, flags, 0666, msg, cap); /* 0666 less the umask, as fopen */
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, flags & FS_APPEND ? "a" : "w");
    if (!f) {
        int e = errno;
        close(fd);
        fail_msg(msg, cap, "cannot write %s: %s", path, strerror(e));
    }
    return f;
}

int fs_read_head(const char *path, void *head, size_t head_cap, size_t *got, uint64_t *file_size,
                 char *msg, size_t cap) {
    *got = 0;
    *file_size = 0;
    int fd = fs_open_regular(path, msg, cap);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail_msg(msg, cap, "cannot read %s: %s", path, strerror(e));
    }
    *file_size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
    size_t n = 0;
    while (n < head_cap) {
        ssize_t r = read(fd, (uint8_t *)head + n, head_cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return fail_msg(msg, cap, "cannot read %s: %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    *got = n;
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

int fs_write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        const ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) { /* no progress and no error: a full disk */
            errno = ENOSPC;
            return -1;
        }
        p += n, len -= (size_t)n;
    }
    return 0;
}
