/* The loader thread (data/prefetch.h): a request, a read, a signal back. */
#include "data/prefetch.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/trace.h"

struct Prefetch {
    const TokenFile *file;
    int bptt, col0, n;
    TokenBatch buf[2];
    int next;                /* the buffer the next read fills */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool requested, done, quit, in_flight;
    int64_t row;             /* the requested row */
    bool failed;
    char why[512];           /* the reader's message when it failed */
};

static void *reader(void *arg) {
    Prefetch *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->requested && !p->quit) pthread_cond_wait(&p->changed, &p->lock);
        if (p->quit) break;
        p->requested = false;
        TokenBatch *b = &p->buf[p->next];
        const int64_t row = p->row;
        pthread_mutex_unlock(&p->lock);
        char why[512] = "";
        b->row = row;
        b->read_start_ns = trace_now_ns();
        const bool ok = token_file_read_batch(p->file, row, p->bptt, p->col0, p->n, b->tokens, b->targets,
                                              why, sizeof why);
        b->read_end_ns = trace_now_ns();
        pthread_mutex_lock(&p->lock);
        if (!ok) p->failed = true, memcpy(p->why, why, sizeof why);
        p->done = true;
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

Prefetch *prefetch_init(const TokenFile *f, int bptt, int col0, int n) {
    CHECK(bptt > 0 && n > 0 && col0 >= 0 && col0 + n <= f->cols, "prefetch_init: columns %d..%d of "
          "%d, bptt %d", col0, col0 + n, f->cols, bptt);
    Prefetch *p = xcalloc(1, sizeof *p);
    p->file = f, p->bptt = bptt, p->col0 = col0, p->n = n;
    for (int k = 0; k < 2; k++) {
        p->buf[k].tokens = xmalloc((size_t)n * bptt * sizeof(int));
        p->buf[k].targets = xmalloc((size_t)n * bptt * sizeof(int));
        p->buf[k].row = -1;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    const int rc = pthread_create(&p->thread, NULL, reader, p);
    if (rc != 0) fatal("cannot start the data loader's thread: %s", strerror(rc));
    return p;
}

void prefetch_start(Prefetch *p, int64_t row) {
    CHECK(!p->in_flight, "prefetch_start(row %lld) while the read of row %lld is in flight: "
          "prefetch_wait for it first (one read at a time)", (long long)row, (long long)p->row);
    CHECK(row >= 0 && row + p->bptt < p->file->rows, "prefetch_start(row %lld): the file's full "
          "batches start at rows 0 to %lld", (long long)row, (long long)(p->file->rows - 1 - p->bptt));
    pthread_mutex_lock(&p->lock);
    p->row = row, p->requested = true, p->done = false, p->in_flight = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
}

bool prefetch_in_flight(const Prefetch *p) { return p->in_flight; }

const TokenBatch *prefetch_wait(Prefetch *p) {
    CHECK(p->in_flight, "prefetch_wait with no read in flight: prefetch_start one first");
    trace_begin("wait batch", TRACE_DATA);
    pthread_mutex_lock(&p->lock);
    while (!p->done) pthread_cond_wait(&p->changed, &p->lock);
    const bool failed = p->failed;
    pthread_mutex_unlock(&p->lock);
    trace_end("wait batch");
    if (failed) fatal("the data loader: %s", p->why);
    p->in_flight = false;
    const TokenBatch *b = &p->buf[p->next];
    p->next ^= 1;
    trace_complete(TRACE_TID_LOADER, "read batch", TRACE_DATA, b->read_start_ns, b->read_end_ns);
    return b;
}

void prefetch_free(Prefetch *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    while (p->in_flight && !p->done) pthread_cond_wait(&p->changed, &p->lock);
    p->quit = true;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->changed);
    for (int k = 0; k < 2; k++) xfree(p->buf[k].tokens), xfree(p->buf[k].targets);
    xfree(p);
}
