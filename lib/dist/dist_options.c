/* Options compared across ranks (dist_options.h): one 64-bit value per option, gathered
 * from every rank in one call; the text of a string option only when it differs. */
#include "dist_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "dist_backend.h"

enum { TEXT_WORDS = 16 }; /* a string option's first 127 bytes, for the message */

/* FNV-1a of a string option's value; a distinct value for "not given" (NULL). */
static int64_t text_hash(const char *s) {
    if (!s) return 1;
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (int64_t)h;
}

static int64_t option_value(const ArgSpec *s) {
    switch (s->type) {
    case ARG_INT:
    case ARG_FLAG: return *(const int *)s->dest;
    case ARG_FLOAT: { /* the bits: -0 and 0, or two NaNs, count as different, which is safe */
        int32_t bits;
        memcpy(&bits, s->dest, sizeof bits);
        return bits;
    }
    case ARG_STRING:
    case ARG_CHOICE: return text_hash(*(const char *const *)s->dest);
    }
    return 0;
}

static bool listed(const char *name, const char *const *names) {
    for (; names && *names; names++)
        if (strcmp(name, *names) == 0) return true;
    return false;
}

/* "32", "0.01", "on"/"off", "'cifar10'" or "(not given)" of one rank's value */
static void describe(const ArgSpec *s, int64_t value, const char *text, char *out, size_t cap) {
    float f;
    int32_t bits = (int32_t)value;
    switch (s->type) {
    case ARG_INT: snprintf(out, cap, "%lld", (long long)value); break;
    case ARG_FLAG: snprintf(out, cap, "%s", value ? "given" : "not given"); break;
    case ARG_FLOAT: memcpy(&f, &bits, sizeof f), snprintf(out, cap, "%g", (double)f); break;
    case ARG_STRING:
    case ARG_CHOICE:
        if (value == 1 && !text[0]) snprintf(out, cap, "not given");
        else snprintf(out, cap, "'%s%s'", text, strlen(text) == TEXT_WORDS * 8 - 1 ? "..." : "");
        break;
    }
}

void dist_check_options(Dist *d, const ArgSpec *specs, int nspecs, const char *const *may_differ) {
    const int W = d->world_size;
    if (W == 1 || nspecs == 0) return;
    int64_t *mine = xcalloc((size_t)nspecs, sizeof *mine);
    int64_t *all = xcalloc((size_t)nspecs * (size_t)W, sizeof *all); /* [W][nspecs] */
    for (int k = 0; k < nspecs; k++) mine[k] = option_value(&specs[k]);
    d->ops->wait(d, d->ops->all_gather(d, all, mine, nspecs, DIST_I64, true));
    /* the first option that differs (every rank finds the same one) and its first rank */
    int bad = -1, on = -1, others = 0;
    for (int k = 0; k < nspecs; k++) {
        if (listed(specs[k].name, may_differ)) continue;
        for (int r = 1; r < W; r++)
            if (all[(size_t)r * nspecs + k] != all[k]) {
                if (bad < 0) bad = k, on = r;
                else if (k != bad) others++;
                break;
            }
    }
    if (bad < 0) {
        xfree(mine), xfree(all);
        return;
    }
    const ArgSpec *s = &specs[bad];
    /* a string's text travels only now: rank 0 prints rank `on`'s value too */
    int64_t text[TEXT_WORDS] = {0}, *texts = xcalloc((size_t)W * TEXT_WORDS, sizeof *texts);
    if (s->type == ARG_STRING || s->type == ARG_CHOICE) {
        const char *v = *(const char *const *)s->dest;
        if (v) snprintf((char *)text, sizeof text, "%s", v);
    }
    d->ops->wait(d, d->ops->all_gather(d, texts, text, TEXT_WORDS, DIST_I64, true));
    if (d->rank == 0) {
        char a[160], b[160], also[64] = "";
        describe(s, all[bad], (const char *)texts, a, sizeof a);
        describe(s, all[(size_t)on * nspecs + bad], (const char *)(texts + (size_t)on * TEXT_WORDS), b,
                 sizeof b);
        if (others) snprintf(also, sizeof also, " (and %d more option%s)", others, others == 1 ? "" : "s");
        fprintf(stderr, "error: the ranks were started with different options: --%s is %s on rank 0 "
                "but %s on rank %d%s. Every rank must get the same options: start them with one "
                "command line (mpirun -n %d PROGRAM OPTIONS, srun PROGRAM OPTIONS)\n",
                s->name, a, b, on, also, W);
        fflush(stderr);
    }
    xfree(mine), xfree(all), xfree(texts);
    /* rank 0 ends the job once it has printed; the others give it time to (an abort of
     * theirs first could kill rank 0 before the message) */
    if (d->rank != 0) sleep(10);
    d->ops->abort_job(d, EXIT_USER_ERROR);
}

void dist_help_once(int argc, char **argv) {
    bool help = false;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) help = true;
    if (help && launcher_read().rank != 0) exit(0);
}
