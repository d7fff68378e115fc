/* A step's record as JSON lines, every rank's events gathered on rank 0 (lesson 07's
 * --timeline, drawn by make timeline). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/fs.h"
#include "pipeline.h"

static const char *event_name(int kind) {
    static const char *names[] = {"forward", "backward", "send", "wait"};
    return kind >= 0 && kind < 4 ? names[kind] : "?";
}

void pipeline_write_timeline(Pipeline *p, const char *path, int step) {
    Dist *d = p->dist;
    double *counts = xcalloc((size_t)p->stages, sizeof *counts);
    dist_all_gather_double(d, p->event_count, counts);
    FILE *f = NULL;
    char msg[FS_MSG_MAX];
    if (p->stage == 0 && !(f = fs_fopen_write(path, step > 1 ? FS_APPEND : 0, msg, sizeof msg)))
        fatal("cannot write the timeline: %s", msg); /* never through a link (lib/core/fs.h) */
    for (int r = 0; r < p->stages; r++) {
        const int n = (int)counts[r];
        if (n == 0 || (p->stage != 0 && p->stage != r)) continue; /* rank 0 and rank r */
        Tensor host = tensor_zeros(2, n, 4); /* start, end, kind, micro: each rank's events */
        if (p->stage == r)
            for (int i = 0; i < n; i++) {
                const PipeEvent *e = &p->events[i];
                float *row = host.data + 4 * i;
                row[0] = (float)e->start, row[1] = (float)e->end;
                row[2] = (float)e->kind, row[3] = (float)e->micro;
            }
        if (r != 0) { /* rank r sends its events to rank 0, in the backend's memory */
            Tensor t = tensor_to(&host, d->device);
            if (p->stage == r) dist_send(d, &t, 0);
            else dist_recv(d, &t, r);
            tensor_free(&host);
            host = tensor_to(&t, DEVICE_CPU);
            tensor_free(&t);
        }
        for (int i = 0; f && i < n; i++) {
            const float *row = host.data + 4 * i;
            fprintf(f, "{\"step\": %d, \"rank\": %d, \"kind\": \"%s\", \"micro\": %d, "
                    "\"start\": %.6f, \"end\": %.6f}\n", step, r, event_name((int)row[2]),
                    (int)row[3], (double)row[0], (double)row[1]);
        }
        tensor_free(&host);
    }
    if (f && fclose(f) != 0) fatal("cannot write the timeline %s", path);
    xfree(counts);
}
