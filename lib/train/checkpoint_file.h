/* Checkpoint files on disk: the atomic write and reading back. */
#ifndef TRAIN_CHECKPOINT_FILE_H
#define TRAIN_CHECKPOINT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "train/checkpoint.h"

/* write(2) until all len bytes are written (retrying short writes and EINTR); 0 or
 * -1 with errno. The test hook: with COURSE_CKPT_STALL=K in the environment, the
 * K-th call in this process writes half, says so on stderr and stops for good
 * (until killed), so a test can kill a writer in the middle of a checkpoint. */
int ckpt_write_all(int fd, const void *buf, size_t len);

/* The atomic write: path.tmp in the same directory, written, fsync'ed, renamed over
 * path, then the directory fsync'ed. A crash at any moment leaves either the old
 * file or the new one at path, never a mix. 0 or -1 and err. */
int ckpt_write_atomic(const char *path, const uint8_t *buf, size_t len, CkptError *err);
typedef int (*CkptWriteFn)(const char *path, const uint8_t *buf, size_t len, CkptError *err);

/* Reads a whole file as it is (malloc'ed; free with xfree): no header check (graders
 * read a participant's raw bytes with it). 0 or -1 and err. */
int ckpt_read_file(const char *path, uint8_t **buf, size_t *len, CkptError *err);

int ckpt_save(const Checkpoint *c, const char *path, CkptError *err);
/* The header first (ckpt_check_header against the file's size, and the file at most
 * twice the manifest's size plus 1 MB: another model's is refused unread), then the
 * whole file, then ckpt_decode. A 10 GB file that is no checkpoint costs nothing. */
int ckpt_load(const Checkpoint *c, const char *path, CkptError *err);
/* ckpt_load, or a fatal error (exit 1) with its message. */
void ckpt_load_or_die(const Checkpoint *c, const char *path);

#endif
