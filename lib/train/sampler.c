#include "sampler.h"

#include "core/check.h"
#include "core/rng.h"

void sampler_init_distributed(Sampler *s, int count, bool shuffle, uint64_t seed,
                              int num_replicas, int rank, bool drop_last) {
    CHECK(count > 0, "sampler over %d examples", count);
    CHECK(num_replicas >= 1 && rank >= 0 && rank < num_replicas,
          "sampler of rank %d among %d replicas", rank, num_replicas);
    *s = (Sampler){.count = count, .shuffle = shuffle, .seed = seed,
                   .num_replicas = num_replicas, .rank = rank, .drop_last = drop_last};
    /* PyTorch's sizes: drop the uneven tail, or round up and pad */
    s->num_samples = drop_last && count % num_replicas != 0
                         ? (count - num_replicas) / num_replicas + 1
                         : (count + num_replicas - 1) / num_replicas;
    if (drop_last && count < num_replicas) s->num_samples = 0;
    CHECK(s->num_samples > 0, "%d examples with drop_last over %d ranks leave rank %d none",
          count, num_replicas, rank);
    s->order = xcalloc((size_t)s->num_samples, sizeof(int));
    sampler_set_epoch(s, 0);
}

void sampler_init(Sampler *s, int count, bool shuffle, uint64_t seed) {
    sampler_init_distributed(s, count, shuffle, seed, 1, 0, false);
}

void sampler_set_epoch(Sampler *s, int epoch) {
    s->epoch = epoch;
    s->position = 0;
    int *all = s->num_replicas == 1 ? s->order : xcalloc((size_t)s->count, sizeof(int));
    if (s->shuffle) {
        Rng rng;
        rng_seed(&rng, s->seed, 1000u + (uint64_t)epoch); /* one stream per epoch */
        rng_permutation(&rng, all, s->count);
    } else {
        for (int i = 0; i < s->count; i++) all[i] = i;
    }
    if (all == s->order) return;
    /* position k of this rank is position rank + k * replicas of the padded order,
     * where the padding repeats the order from its start (wrapping, as PyTorch does) */
    for (int k = 0; k < s->num_samples; k++)
        s->order[k] = all[(s->rank + (int64_t)k * s->num_replicas) % s->count];
    xfree(all);
}

void sampler_restore(Sampler *s, int epoch, int position) {
    CHECK(position >= 0 && position <= s->num_samples, "sampler position %d outside 0..%d",
          position, s->num_samples);
    sampler_set_epoch(s, epoch);
    s->position = position;
}

int sampler_next(Sampler *s, int *indices, int batch) {
    int n = 0;
    while (n < batch && s->position < s->num_samples) indices[n++] = s->order[s->position++];
    return n;
}

void sampler_free(Sampler *s) {
    xfree(s->order);
    s->order = NULL;
}
