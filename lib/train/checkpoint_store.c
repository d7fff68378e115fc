/* A run's directory of checkpoints: naming, rotation, the newest that loads. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"
#include "train/checkpoint_store.h"

void ckpt_store_init(CkptStore *s, const char *dir, int keep) {
    if (!dir || !*dir) fatal("the checkpoint directory is empty: give --checkpoint-dir DIR");
    if (strlen(dir) + 32 >= sizeof s->dir)
        fatal("checkpoint directory path too long (%zu characters): %s", strlen(dir), dir);
    if (keep < 1) fatal("--keep must be at least 1, got %d", keep);
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    s->keep = keep;
    s->write = ckpt_write_atomic;
    char msg[FS_MSG_MAX];
    if (fs_mkdir_p(dir, 0755, msg, sizeof msg) != 0)
        fatal("%s. Choose another --checkpoint-dir (on a cluster: your scratch or project space)",
              msg);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        fatal("checkpoint directory %s is not a directory: choose another --checkpoint-dir", dir);
    if (access(dir, W_OK | X_OK) != 0)
        fatal("checkpoint directory %s is not writable: %s. Choose another --checkpoint-dir",
              dir, strerror(errno));
}

void ckpt_store_path(const CkptStore *s, int64_t step, char *out, size_t cap) {
    char name[64];
    snprintf(name, sizeof name, "ckpt-%012" PRId64 ".ckpt", step);
    fs_join_or_die(out, cap, s->dir, name);
}

void ckpt_store_best_path(const CkptStore *s, char *out, size_t cap) {
    fs_join_or_die(out, cap, s->dir, "best.ckpt");
}

/* "ckpt-<digits>.ckpt" (or with ".tmp" after it, when tmp): the step, or -1. */
static int64_t parse_name(const char *name, bool tmp) {
    if (strncmp(name, "ckpt-", 5) != 0) return -1;
    const char *p = name + 5;
    int64_t step = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 18; p++, digits++) step = step * 10 + (*p - '0');
    if (digits == 0) return -1;
    return strcmp(p, tmp ? ".ckpt.tmp" : ".ckpt") == 0 ? step : -1;
}

static int cmp_desc(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* All steps in the directory, newest first (malloc'ed); returns the count. */
static int list_all(const CkptStore *s, int64_t **steps) {
    int n = 0, cap = 16;
    int64_t *v = xmalloc((size_t)cap * sizeof *v);
    DIR *d = opendir(s->dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        int64_t step = parse_name(e->d_name, false);
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

int ckpt_store_list(const CkptStore *s, int64_t *steps, int max) {
    int64_t *all;
    int n = list_all(s, &all);
    if (n > max) n = max;
    memcpy(steps, all, (size_t)n * sizeof *all);
    xfree(all);
    return n;
}

/* After step `written` was saved: keeps it and the keep-1 newest checkpoints before
 * it, deletes older ones, and .tmp files that a killed writer left (one writer per
 * directory: none is being written now). Checkpoints of later steps are left alone
 * and not counted: they exist only when this run resumed from an older checkpoint
 * because they did not load, so counting them could delete the one just written
 * and leave nothing that loads. */
static void rotate(const CkptStore *s, int64_t written) {
    int64_t *all;
    int n = list_all(s, &all);
    char path[CKPT_PATH_MAX];
    int kept = 0;
    for (int i = 0; i < n; i++) { /* newest first */
        if (all[i] > written) continue;
        if (all[i] == written || kept < s->keep) {
            kept++;
            continue;
        }
        ckpt_store_path(s, all[i], path, sizeof path);
        unlink(path);
    }
    xfree(all);
    DIR *d = opendir(s->dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (parse_name(e->d_name, true) >= 0 || strcmp(e->d_name, "best.ckpt.tmp") == 0) {
            fs_join_or_die(path, sizeof path, s->dir, e->d_name);
            unlink(path);
        }
    if (d) closedir(d);
}

static int save_to(const CkptStore *s, const Checkpoint *c, const char *path, CkptError *err) {
    uint8_t *buf;
    size_t len;
    ckpt_encode(c, &buf, &len);
    int rc = (s->write ? s->write : ckpt_write_atomic)(path, buf, len, err);
    xfree(buf);
    return rc;
}

int ckpt_store_save(const CkptStore *s, const Checkpoint *c, int64_t step, char *path_out,
                    size_t cap, CkptError *err) {
    char path[CKPT_PATH_MAX];
    ckpt_store_path(s, step, path, sizeof path);
    if (path_out) snprintf(path_out, cap, "%s", path);
    if (save_to(s, c, path, err) != 0) return -1;
    rotate(s, step); /* only after the new one is safely there */
    return 0;
}

int ckpt_store_save_best(const CkptStore *s, const Checkpoint *c, CkptError *err) {
    char path[CKPT_PATH_MAX];
    ckpt_store_best_path(s, path, sizeof path);
    return save_to(s, c, path, err);
}

int ckpt_store_load_latest(const CkptStore *s, const Checkpoint *c, char *path_out, size_t cap,
                           CkptError *err) {
    int64_t *all;
    int n = list_all(s, &all);
    char path[CKPT_PATH_MAX];
    size_t used = 0;
    if (err) err->msg[0] = '\0';
    int rc = n == 0 ? 0 : -1;
    for (int i = 0; i < n && rc != 1; i++) {
        ckpt_store_path(s, all[i], path, sizeof path);
        CkptError one;
        if (ckpt_load(c, path, &one) == 0) {
            if (path_out) snprintf(path_out, cap, "%s", path);
            rc = 1;
            break;
        }
        fprintf(stderr, "warning: skipping a checkpoint that does not load: %s\n", one.msg);
        if (err && used < sizeof err->msg)
            used += (size_t)snprintf(err->msg + used, sizeof err->msg - used, "%s%s",
                                     used ? "\n  " : "", one.msg);
    }
    if (rc == -1 && err) { /* a summary first, then each file's reason */
        char *list = xstrdup(err->msg);
        int head = snprintf(err->msg, sizeof err->msg,
                            "none of the %d checkpoints in %s loads; move them away to start "
                            "afresh, or resume from another --checkpoint-dir:\n  ", n, s->dir);
        size_t at = head < 0 ? 0 : (size_t)head < sizeof err->msg ? (size_t)head : sizeof err->msg - 1;
        size_t room = sizeof err->msg - 1 - at, take = strlen(list) < room ? strlen(list) : room;
        memcpy(err->msg + at, list, take);
        err->msg[at + take] = '\0';
        xfree(list);
    }
    xfree(all);
    return rc;
}
