/* The vocabulary: words by id, and an open-addressing hash table (FNV-1a, linear
 * probing) from a word's bytes to its id, so a corpus is tokenised in one pass. Ids never
 * change once given; the table doubles when half full. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "data/text.h"

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 14695981039346656037ull; /* FNV-1a, 64 bits */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static bool same_word(const Vocab *v, int id, const char *word, size_t len) {
    const char *w = v->bytes + v->offset[id];
    return strncmp(w, word, len) == 0 && w[len] == '\0';
}

/* The slot that holds word, or the empty slot where it would go. */
static int64_t slot_of(const Vocab *v, const char *word, size_t len) {
    const int64_t mask = v->nslots - 1;
    int64_t s = (int64_t)(hash_bytes(word, len) & (uint64_t)mask);
    while (v->slots[s] != 0 && !same_word(v, v->slots[s] - 1, word, len)) s = (s + 1) & mask;
    return s;
}

int vocab_find(const Vocab *v, const char *word, size_t len) {
    if (v->nslots == 0) return -1;
    return v->slots[slot_of(v, word, len)] - 1;
}

static void grow_table(Vocab *v) {
    const int64_t n = v->nslots ? 2 * v->nslots : 1024;
    xfree(v->slots);
    v->slots = xcalloc((size_t)n, sizeof *v->slots);
    v->nslots = n;
    for (int id = 0; id < v->count; id++) {
        const char *w = v->bytes + v->offset[id];
        v->slots[slot_of(v, w, strlen(w))] = id + 1;
    }
}

static void *grow(void *p, size_t old_bytes, size_t new_bytes) {
    void *q = xmalloc(new_bytes);
    if (old_bytes) memcpy(q, p, old_bytes);
    xfree(p);
    return q;
}

int vocab_add(Vocab *v, const char *word, size_t len, int max_count) {
    if (2 * (int64_t)(v->count + 1) > v->nslots) grow_table(v);
    const int64_t s = slot_of(v, word, len);
    if (v->slots[s] != 0) {
        v->freq[v->slots[s] - 1]++;
        return v->slots[s] - 1;
    }
    if (v->count >= max_count) return -1;
    if (v->count == v->capacity) {
        const int cap = v->capacity ? 2 * v->capacity : 1024;
        v->offset = grow(v->offset, (size_t)v->capacity * sizeof *v->offset, (size_t)cap * sizeof *v->offset);
        v->freq = grow(v->freq, (size_t)v->capacity * sizeof *v->freq, (size_t)cap * sizeof *v->freq);
        v->capacity = cap;
    }
    if (v->bytes_len + (int64_t)len + 1 > v->bytes_cap) {
        int64_t cap = v->bytes_cap ? 2 * v->bytes_cap : 1 << 16;
        while (v->bytes_len + (int64_t)len + 1 > cap) cap *= 2;
        v->bytes = grow(v->bytes, (size_t)v->bytes_len, (size_t)cap);
        v->bytes_cap = cap;
    }
    const int id = v->count++;
    v->offset[id] = v->bytes_len;
    v->freq[id] = 1;
    memcpy(v->bytes + v->bytes_len, word, len);
    v->bytes[v->bytes_len + (int64_t)len] = '\0';
    v->bytes_len += (int64_t)len + 1;
    v->slots[s] = id + 1;
    return id;
}

const char *vocab_word(const Vocab *v, int id) {
    CHECK(id >= 0 && id < v->count, "word id %d outside the vocabulary of %d words", id, v->count);
    return v->bytes + v->offset[id];
}

void vocab_free(Vocab *v) {
    xfree(v->bytes);
    xfree(v->offset);
    xfree(v->freq);
    xfree(v->slots);
    memset(v, 0, sizeof *v);
}
