/* TODO 3.2: the atomic write.
 *
 * A job can be killed at any moment: at its time limit, by a pre-emption, by a node
 * failure. If that moment falls inside a checkpoint write and the write went
 * straight to the checkpoint's file, the run's only checkpoint is now half a file.
 * Writing to a temporary file next to it and renaming that over the old one makes
 * the switch a single step: rename() within one file system replaces the name
 * atomically, so the path holds either the whole old file or the whole new one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lesson.h"

int lesson_write_atomic(const char *path, const uint8_t *buf, size_t len, CkptError *err) {
    char tmp[CKPT_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path); /* same directory: same file system */
    /* a fresh file: a stale tmp of a killed run, or a link someone planted at its name,
     * is removed (unlink removes a link, never its target); O_EXCL then creates a new
     * file or fails, and never follows a link */
    if (unlink(tmp) != 0 && errno != ENOENT) return ckpt_error(err, "cannot remove %s: %s", tmp, strerror(errno));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return ckpt_error(err, "cannot create %s: %s", tmp, strerror(errno));
    /* fsync: the bytes are on the disk, not only in the page cache, before the
     * rename makes them the checkpoint */
    if (ckpt_write_all(fd, buf, len) != 0 || fsync(fd) != 0) {
        int e = errno; /* close and unlink may change errno */
        close(fd);
        unlink(tmp);
        return ckpt_error(err, "writing %s failed: %s (disk full?)", tmp, strerror(e));
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ckpt_error(err, "cannot replace %s by %s: %s", path, tmp, strerror(e));
    }
    /* the rename is a change to the directory: sync it too, or a power cut can
     * still bring back the old name */
    char dir[CKPT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd); /* some file systems cannot sync a directory: nothing more to do there */
        close(dfd);
    }
    return 0;
}
