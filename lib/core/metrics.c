#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fs.h"
#include "image_info.h"

struct MetricsFile {
    FILE *f;
    const char *path;
    int fields; /* in the current object */
    int also;   /* keys metrics_also_num queued for the next metrics_end */
    const char *also_key[METRICS_ALSO_MAX];
    double also_value[METRICS_ALSO_MAX];
};

static MetricsFile *open_mode(const char *path, int flags) {
    if (!path || !*path) return NULL;
    char msg[FS_MSG_MAX];
    FILE *f = fs_fopen_write(path, flags, msg, sizeof msg); /* never through a link */
    if (!f) fatal("cannot write the metrics file: %s", msg);
    MetricsFile *m = xcalloc(1, sizeof *m);
    m->f = f;
    m->path = path;
    const ImageInfo *im = flags & FS_APPEND ? NULL : image_info(); /* a new file: its first line */
    if (im) { /* a header line: which container image the run was in */
        metrics_begin(m);
        metrics_str(m, "image", im->digest);
        metrics_str(m, "image_commit", im->commit);
        metrics_end(m);
    }
    return m;
}

MetricsFile *metrics_open(const char *path) { return open_mode(path, 0); }

MetricsFile *metrics_open_resumed(const char *path, long long first_epoch) {
    if (!path || !*path) return NULL;
    FILE *old = fopen(path, "r");
    if (!old) return open_mode(path, 0);
    /* the lines to keep, in memory (a metrics file is small); usually all of them */
    char *kept = NULL, *line = NULL;
    size_t kept_len = 0, cap = 0;
    int dropped = 0;
    FILE *mem = open_memstream(&kept, &kept_len);
    if (!mem) fatal("out of memory reading the metrics file '%s'", path);
    while (getline(&line, &cap, old) > 0) {
        const char *e = strstr(line, "\"epoch\": ");
        if (!e || atoll(e + 9) < first_epoch) fputs(line, mem);
        else dropped++;
    }
    free(line);
    fclose(old);
    fclose(mem);
    if (dropped) { /* rewritten beside it, then renamed over it: never half a file */
        char tmp[4096];
        if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
            fatal("metrics file path too long: %s", path);
        char msg[FS_MSG_MAX];
        int fd = fs_create_fresh(tmp, 0644, msg, sizeof msg); /* a planted tmp link is removed */
        if (fd < 0) fatal("cannot rewrite metrics file '%s' for the resumed run: %s", path, msg);
        FILE *t = fdopen(fd, "w");
        if (!t) close(fd);
        bool ok = t && fwrite(kept, 1, kept_len, t) == kept_len;
        ok = (t && fclose(t) == 0) && ok;
        if (!ok || rename(tmp, path) != 0)
            fatal("cannot rewrite metrics file '%s' for the resumed run: %s", path, strerror(errno));
    }
    free(kept);
    return open_mode(path, FS_APPEND);
}

static void key(MetricsFile *m, const char *k) {
    fprintf(m->f, "%s\"%s\": ", m->fields++ ? ", " : "", k);
}

void metrics_begin(MetricsFile *m) {
    if (!m) return;
    m->fields = 0;
    fputc('{', m->f);
}

void metrics_int(MetricsFile *m, const char *k, long long value) {
    if (!m) return;
    key(m, k);
    fprintf(m->f, "%lld", value);
}

void metrics_num(MetricsFile *m, const char *k, double value) {
    if (!m) return;
    key(m, k);
    if (isfinite(value)) fprintf(m->f, "%.9g", value);
    else fputs("null", m->f); /* JSON has no NaN or infinity */
}

void metrics_str(MetricsFile *m, const char *k, const char *value) {
    if (!m) return;
    key(m, k);
    fputc('"', m->f);
    for (const char *p = value; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', m->f);
        if ((unsigned char)*p >= 0x20) fputc(*p, m->f);
    }
    fputc('"', m->f);
}

void metrics_also_num(MetricsFile *m, const char *k, double value) {
    if (!m) return;
    for (int i = 0; i < m->also; i++)
        if (strcmp(m->also_key[i], k) == 0) { /* queued again before a line was written */
            m->also_value[i] = value;
            return;
        }
    CHECK(m->also < METRICS_ALSO_MAX, "more than %d keys queued for one metrics line",
          METRICS_ALSO_MAX);
    m->also_key[m->also] = k;
    m->also_value[m->also++] = value;
}

void metrics_end(MetricsFile *m) {
    if (!m) return;
    for (int i = 0; i < m->also; i++) metrics_num(m, m->also_key[i], m->also_value[i]);
    m->also = 0;
    fputs("}\n", m->f);
    if (fflush(m->f) != 0)
        fatal("cannot write metrics file '%s': %s", m->path, strerror(errno));
}

void metrics_close(MetricsFile *m) {
    if (!m) return;
    if (fclose(m->f) != 0) fatal("cannot close metrics file '%s': %s", m->path, strerror(errno));
    xfree(m);
}
