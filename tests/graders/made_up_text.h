/* A made-up text for the graders' language-model runs: 40 words, `lines` lines of 7
 * drawn by a fixed generator, so every run of a check reads the same file and the
 * vocabulary (and so the decoder) stays small. */
#ifndef TESTS_GRADERS_MADE_UP_TEXT_H
#define TESTS_GRADERS_MADE_UP_TEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

static inline bool write_made_up_text(const char *path, int lines) {
    static const char *const words[] = {
        "the", "a", "cat", "dog", "sat", "on", "mat", "ran", "to", "house", "and", "then",
        "saw", "bird", "tree", "in", "garden", "big", "small", "red", "blue", "old", "new",
        "man", "woman", "child", "ate", "bread", "drank", "milk", "under", "over", "hill",
        "river", "walked", "slowly", "quickly", "happy", "sad", "day"};
    FILE *f = fopen(path, "w");
    if (!f) return false;
    uint64_t x = 12345;
    for (int line = 0; line < lines; line++) {
        for (int w = 0; w < 7; w++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            fprintf(f, "%s%s", w ? " " : "", words[(x >> 33) % (sizeof words / sizeof words[0])]);
        }
        fputc('\n', f);
    }
    return fclose(f) == 0;
}

#endif
