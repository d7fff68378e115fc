/* Sharded checkpoints' files and directories (zero_checkpoint.h): where each file goes,
 * which steps a directory holds, and removing the old ones. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"
#include "parallel/zero_checkpoint_internal.h"

/* ---------------------------------------------------------------- paths */

void zero_ckpt_init(ZeroCkpt *c, const char *dir, int keep) {
    if (!dir || !*dir) fatal("the checkpoint directory is empty: give --checkpoint-dir DIR");
    if (strlen(dir) + 64 >= sizeof c->dir)
        fatal("checkpoint directory path too long (%zu characters): %s", strlen(dir), dir);
    if (keep < 1) fatal("--keep must be at least 1, got %d", keep);
    *c = (ZeroCkpt){.keep = keep};
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    char msg[FS_MSG_MAX];
    if (fs_mkdir_p(dir, 0755, msg, sizeof msg) != 0)
        fatal("%s. Choose another --checkpoint-dir (on a cluster: your scratch or project space)", msg);
}

void zero_ckpt_free(ZeroCkpt *c) { ckpt_free(&c->scalars); }

void zero_ckpt_path(const ZeroCkpt *c, int64_t step, char *out, size_t cap) {
    char name[40];
    snprintf(name, sizeof name, "zero-%09" PRId64, step);
    fs_join_or_die(out, cap, c->dir, name);
}

void zckpt_file_path(const char *cdir, const char *name, char *out, size_t cap) {
    fs_join_or_die(out, cap, cdir, name);
}

void zckpt_shard_path(const char *cdir, int64_t rank, int64_t world, char *out, size_t cap) {
    char name[64];
    snprintf(name, sizeof name, "shard-%" PRId64 "-of-%" PRId64 ".ckpt", rank, world);
    zckpt_file_path(cdir, name, out, cap);
}

/* "zero-<digits>": the step, or -1. */
static int64_t parse_dir(const char *name) {
    if (strncmp(name, "zero-", 5) != 0) return -1;
    int64_t step = 0;
    int digits = 0;
    for (const char *p = name + 5; *p; p++, digits++) {
        if (*p < '0' || *p > '9' || digits == 18) return -1;
        step = step * 10 + (*p - '0');
    }
    return digits ? step : -1;
}

static int cmp_desc(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The steps of the checkpoint directories, complete or not, newest first (malloc'ed). */
int zckpt_list_steps(const char *dir, int64_t **steps) {
    int n = 0, cap = 16;
    int64_t *v = xmalloc((size_t)cap * sizeof *v);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        const int64_t step = parse_dir(e->d_name);
        if (step < 0) continue;
        if (n == cap) {
            int64_t *w = xmalloc((size_t)(cap *= 2) * sizeof *w);
            memcpy(w, v, (size_t)n * sizeof *v);
            xfree(v);
            v = w;
        }
        v[n++] = step;
    }
    if (d) closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_desc);
    *steps = v;
    return n;
}

/* Deletes the index first (from then on it is incomplete, whatever else stays), then
 * the shards and leftover .tmp files; the directory goes when nothing else is in it. */
void zckpt_remove_files(const char *cdir, bool and_dir) {
    char path[CKPT_PATH_MAX];
    zckpt_file_path(cdir, "index.ckpt", path, sizeof path);
    unlink(path);
    DIR *d = opendir(cdir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, "shard-", 6) == 0 || strcmp(e->d_name, "index.ckpt.tmp") == 0) {
            zckpt_file_path(cdir, e->d_name, path, sizeof path);
            unlink(path);
        }
    if (d) closedir(d);
    if (and_dir) rmdir(cdir);
}

bool zckpt_is_complete(const char *cdir) {
    char index[CKPT_PATH_MAX];
    zckpt_file_path(cdir, "index.ckpt", index, sizeof index);
    return fs_is_regular_file(index);
}

int64_t zero_ckpt_newest_complete(const ZeroCkpt *c) {
    int64_t *all, found = -1;
    const int n = zckpt_list_steps(c->dir, &all);
    char cdir[CKPT_PATH_MAX];
    for (int i = 0; i < n && found < 0; i++) { /* newest first */
        zero_ckpt_path(c, all[i], cdir, sizeof cdir);
        if (zckpt_is_complete(cdir)) found = all[i];
    }
    xfree(all);
    return found;
}

/* After `written` was saved: it and the keep-1 newest complete checkpoints before it
 * stay; older ones and unfinished ones before it go (checkpoint_store.c's rule). */
void zckpt_rotate(const ZeroCkpt *c, int64_t written) {
    int64_t *all;
    const int n = zckpt_list_steps(c->dir, &all);
    char cdir[CKPT_PATH_MAX];
    int kept = 0;
    for (int i = 0; i < n; i++) { /* newest first */
        if (all[i] > written) continue;
        zero_ckpt_path(c, all[i], cdir, sizeof cdir);
        if (all[i] == written || (kept < c->keep && zckpt_is_complete(cdir))) {
            kept++;
            continue;
        }
        zckpt_remove_files(cdir, true);
    }
    xfree(all);
}
