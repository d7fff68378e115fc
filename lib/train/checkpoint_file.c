/* Checkpoint files on disk: the atomic write and reading back. The format itself is
 * in checkpoint.c, a run's directory in checkpoint_store.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"
#include "train/checkpoint_file.h"

/* ------------------------------------------------------------ writing */

static int g_write_calls; /* for the COURSE_CKPT_STALL test hook */

int ckpt_write_all(int fd, const void *buf, size_t len) {
    const char *hook = getenv("COURSE_CKPT_STALL");
    if (hook && *hook && ++g_write_calls == atoi(hook) && len >= 2) {
        fs_write_all(fd, buf, len / 2);
        fprintf(stderr, "COURSE_CKPT_STALL: write %d stopped after %zu of %zu bytes (test hook); "
                        "waiting to be killed\n", g_write_calls, len / 2, len);
        fflush(stderr);
        for (;;) pause();
    }
    return fs_write_all(fd, buf, len);
}

/* fsync of the directory makes the rename itself durable. File systems that cannot
 * sync a directory say EINVAL (or EROFS, ENOTSUP): nothing more can be done there. */
static int sync_dir_of(const char *path, CkptError *err) {
    char dir[CKPT_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ckpt_error(err, "cannot open directory %s to sync it: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL && e != EROFS && e != ENOTSUP)
        return ckpt_error(err, "fsync of directory %s failed: %s", dir, strerror(e));
    return 0;
}

int ckpt_write_atomic(const char *path, const uint8_t *buf, size_t len, CkptError *err) {
    char tmp[CKPT_PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    /* a fresh file: a stale tmp of a killed run, or a link planted at its name, is
     * removed first, never written through (lib/core/fs.h) */
    char msg[FS_MSG_MAX];
    int fd = fs_create_fresh(tmp, 0644, msg, sizeof msg);
    if (fd < 0) return ckpt_error(err, "%s (is the checkpoint directory writable?)", msg);
    if (ckpt_write_all(fd, buf, len) != 0 || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return ckpt_error(err, "writing %s failed: %s (disk full or over quota? free space, or use "
                               "another --checkpoint-dir); %s is unchanged", tmp, strerror(e), path);
    }
    if (close(fd) != 0) { /* network file systems may report write errors only here */
        int e = errno;
        unlink(tmp);
        return ckpt_error(err, "writing %s failed at close: %s; %s is unchanged", tmp, strerror(e), path);
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ckpt_error(err, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return sync_dir_of(path, err);
}

int ckpt_save(const Checkpoint *c, const char *path, CkptError *err) {
    uint8_t *buf;
    size_t len;
    ckpt_encode(c, &buf, &len);
    int rc = ckpt_write_atomic(path, buf, len, err);
    xfree(buf);
    return rc;
}

/* ------------------------------------------------------------ reading */

int ckpt_read_file(const char *path, uint8_t **buf, size_t *len, CkptError *err) {
    /* lib/core/fs: regular files only, so a FIFO named like a checkpoint is refused at
     * once instead of blocking the resume forever */
    char msg[FS_MSG_MAX];
    if (fs_read_file(path, SIZE_MAX / 2, buf, len, msg, sizeof msg) != 0)
        return ckpt_error(err, "checkpoint: %s", msg);
    return 0; /* plain malloc: xfree is free, and a failure here is an error, not an exit */
}

int ckpt_load(const Checkpoint *c, const char *path, CkptError *err) {
    /* The header against the file's size first (32 bytes read): something at the
     * checkpoint's name that is no checkpoint costs no memory and no time (a 10 GB
     * sparse file is refused at once, on every rank). A checkpoint of this manifest is
     * ckpt_encoded_size bytes when its names and shapes match (other names and shapes
     * ckpt_decode refuses by name); twice that and a megabyte more can only be another
     * model's: refused before it is read. */
    const uint64_t bound = 2 * (uint64_t)ckpt_encoded_size(c) + (1u << 20);
    char msg[FS_MSG_MAX];
    uint8_t head[32];
    size_t got;
    uint64_t size;
    if (fs_read_head(path, head, sizeof head, &got, &size, msg, sizeof msg) != 0)
        return ckpt_error(err, "checkpoint: %s", msg);
    if (ckpt_check_header(head, got, size, bound, path, err) != 0) return -1;
    uint8_t *buf;
    size_t len;
    /* at most the size just checked: a file that grew since is refused, not read */
    if (fs_read_file(path, (size_t)size, &buf, &len, msg, sizeof msg) != 0)
        return ckpt_error(err, "checkpoint: %s", msg);
    int rc = ckpt_decode(c, buf, len, path, err);
    xfree(buf);
    return rc;
}

void ckpt_load_or_die(const Checkpoint *c, const char *path) {
    CkptError err;
    if (ckpt_load(c, path, &err) != 0) fatal("%s", err.msg);
}
