#include "sampler.h"

#include "core/check.h"
#include "core/rng.h"

void sampler_init(Sampler *s, int count, bool shuffle, uint64_t seed) {
    CHECK(count > 0, "sampler over %d examples", count);
    s->count = count;
    s->shuffle = shuffle;
    s->seed = seed;
    s->order = xcalloc((size_t)count, sizeof(int));
    sampler_set_epoch(s, 0);
}

void sampler_set_epoch(Sampler *s, int epoch) {
    s->epoch = epoch;
    s->position = 0;
    if (s->shuffle) {
        Rng rng;
        rng_seed(&rng, s->seed, 1000u + (uint64_t)epoch); /* one stream per epoch */
        rng_permutation(&rng, s->order, s->count);
    } else {
        for (int i = 0; i < s->count; i++) s->order[i] = i;
    }
}

void sampler_restore(Sampler *s, int epoch, int position) {
    CHECK(position >= 0 && position <= s->count, "sampler position %d outside 0..%d", position,
          s->count);
    sampler_set_epoch(s, epoch);
    s->position = position;
}

int sampler_next(Sampler *s, int *indices, int batch) {
    int n = 0;
    while (n < batch && s->position < s->count) indices[n++] = s->order[s->position++];
    return n;
}

void sampler_free(Sampler *s) {
    xfree(s->order);
    s->order = NULL;
}
