/* Small file-system helpers that readers and writers of files share.
 *
 *   char path[FS_PATH_MAX];
 *   fs_join_or_die(path, sizeof path, dir, "train-images-idx3-ubyte");
 *   uint8_t *bytes; size_t len; char msg[FS_MSG_MAX];
 *   if (fs_read_file(path, 64 << 20, &bytes, &len, msg, sizeof msg) != 0) fatal("%s", msg);
 *   ...
 *   free(bytes);
 *
 * Only regular files are opened for reading: a FIFO, a device or a directory named like
 * a data file or a checkpoint is refused at once (opened with O_NONBLOCK, then fstat),
 * never waited on. Functions that return int give 0 on success and -1 with a message in
 * msg that names the path and says what is wrong; they never exit, so OpenMP threads and
 * fuzz targets can call them. */
#ifndef CORE_FS_H
#define CORE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum {
    FS_PATH_MAX = 4096, /* PATH_MAX on Linux: a buffer that holds any path */
    FS_MSG_MAX = 2 * FS_PATH_MAX + 256, /* a message naming up to two paths */
};

/* out = dir/name, with no second '/' when dir ends in one; out = name when dir is "".
 * -1 (out empty) when it does not fit in cap bytes. */
int fs_join(char *out, size_t cap, const char *dir, const char *name);
/* fs_join, or fatal("path too long: ...") when it does not fit. */
void fs_join_or_die(char *out, size_t cap, const char *dir, const char *name);

/* Whether path is (or links to) a regular file / a directory (stat: never opens it). */
bool fs_is_regular_file(const char *path);
bool fs_is_dir(const char *path);

/* Opens path for reading if it is a regular file: a file descriptor (blocking, close on
 * exec), or -1 and msg ("cannot open P: No such file or directory", "P is a directory,
 * not a file", "P is not a regular file (a FIFO ...)"). */
int fs_open_regular(const char *path, char *msg, size_t cap);

/* The whole of a regular file of at most max_bytes bytes: *bytes (malloc'ed, free with
 * free or xfree; one 0 byte after the end, so a text file is a C string) and *len. A
 * file that shrinks while it is read gives what was there. Errors: those of
 * fs_open_regular, "P is N bytes, more than the M this reader accepts", out of memory
 * (naming the file and the size), a read error. */
int fs_read_file(const char *path, size_t max_bytes, uint8_t **bytes, size_t *len, char *msg,
                 size_t cap);

/* Opening files for writing, never through a symbolic link: a link planted at a
 * program's output name (by mistake or by someone else on a shared file system) would
 * otherwise have the program overwrite whatever the link points to.
 *
 * fs_create: path as a regular file for writing (close on exec), emptied, or appended
 * to with FS_APPEND; created with mode (less the umask) when missing. A symbolic link
 * or a directory at path is refused by name ("P is a symbolic link: ..."), never
 * written through; a FIFO is written only when a reader is there (never waited on),
 * a character device (/dev/null) as it is. The descriptor, or -1 and msg.
 *
 * fs_create_fresh: a file this call makes, for temporary files (P.tmp beside P):
 * whatever is at path is removed first (a stale file of a killed run, or a planted
 * link: the link itself, never its target), then path is created with O_EXCL, so the
 * bytes written land in a new file in this directory. The descriptor, or -1 and msg.
 *
 * fs_fopen_write: fs_create as a stdio stream ("w" or, with FS_APPEND, "a"). */
/* write(2) until all len bytes are out (a full disk writes short before it fails; EINTR
 * is retried): 0, or -1 with errno (ENOSPC where a write made no progress). */
int fs_write_all(int fd, const void *buf, size_t len);

enum { FS_APPEND = 1 };
int fs_create(const char *path, int flags, mode_t mode, char *msg, size_t cap);
int fs_create_fresh(const char *path, mode_t mode, char *msg, size_t cap);
FILE *fs_fopen_write(const char *path, int flags, char *msg, size_t cap);

/* The first up to head_cap bytes of a regular file into head (*got of them) and its
 * size (*file_size), without reading the rest: a reader checks a header (a magic
 * number, a recorded size) before it reads a file that may be huge. Errors: those of
 * fs_open_regular, a read error. */
int fs_read_head(const char *path, void *head, size_t head_cap, size_t *got, uint64_t *file_size,
                 char *msg, size_t cap);

/* mkdir -p: creates path and every missing parent with mode (less the umask); 0 when
 * path is a directory at the end, also when it already was one. Errors name the
 * component that could not be made ("cannot create the directory A/B: Permission
 * denied", "A/B exists and is not a directory"). */
int fs_mkdir_p(const char *path, mode_t mode, char *msg, size_t cap);

#endif
