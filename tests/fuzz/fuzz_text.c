/* libFuzzer target: the text corpus reader (lib/data/text.h) on a fuzzed file.
 *
 * Each input is read three ways:
 *   1. as a whole file (text_parse_split: cut at line ends into 80/10/10), the default
 *      tokeniser (whitespace words, <eos>) and limits;
 *   2. the same with torchtext's basic_english and small limits (64 words, lines of 256
 *      bytes), so the refusals are reached too;
 *   3. the input less its first two bytes cut into three anywhere those bytes say (in a
 *      line, in a UTF-8 sequence), straight to text_parse.
 * A refusal must say what; what is accepted must hold together: every id of every split
 * names a word of the vocabulary that finds its id again, <unk> and <eos> are words,
 * and batchify / get_batch give targets that are the inputs one row on. The input is
 * not NUL-terminated: a read past its end is ASan's to see. Seeds: the texts the unit
 * tests parse (tests/unit/test_text.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "data/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_corpus(const TextCorpus *c) {
    const int V = c->vocab.count;
    if (V < 1 || c->unk_id < 0 || c->unk_id >= V) abort();
    if (c->tokenizer == TEXT_TOKENS_BASIC_ENGLISH ? c->eos_id != -1 : (c->eos_id < 0 || c->eos_id >= V))
        abort();
    for (int id = 0; id < V && id < 4096; id++) { /* each word finds its own id */
        const char *w = vocab_word(&c->vocab, id);
        if (!w || vocab_find(&c->vocab, w, strlen(w)) != id) abort();
    }
    const TokenStream *splits[TEXT_SPLITS] = {&c->train, &c->valid, &c->test};
    for (int s = 0; s < TEXT_SPLITS; s++)
        for (int64_t k = 0; k < splits[s]->count; k++)
            if (splits[s]->ids[k] < 0 || splits[s]->ids[k] >= V) abort();
    if (c->train.count < 4) return; /* batchify would stop the program: too short */
    TextBatches b;
    text_batchify(&c->train, 2, "train", &b);
    for (int64_t i = 0; i < b.rows - 1; i += 3) {
        TextBatch t = text_get_batch(&b, i, 3);
        for (int r = 0; r < t.seq_len; r++)
            for (int col = 0; col < t.cols; col++)
                if (t.target[r * t.cols + col] != c->train.ids[col * b.rows + i + r + 1]) abort();
    }
    text_batches_free(&b);
}

static void parse_whole(const uint8_t *data, size_t size, const TextOptions *o) {
    TextCorpus c;
    char msg[FS_MSG_MAX];
    msg[0] = '\0';
    if (text_parse_split((const char *)data, size, "fuzz.txt", o, &c, msg, sizeof msg) == 0) {
        check_corpus(&c);
        text_free(&c);
    } else if (!msg[0]) {
        abort(); /* an error must say what */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const TextOptions words = {.tokenizer = TEXT_TOKENS_WORDS};
    const TextOptions small = {.tokenizer = TEXT_TOKENS_BASIC_ENGLISH, .max_vocab = 64,
                               .max_line_bytes = 256};
    parse_whole(data, size, &words);
    parse_whole(data, size, &small);
    if (size < 2) return 0;
    const size_t n = size - 2, a = n * data[0] / 255, b = a + (n - a) * data[1] / 255;
    const char *rest = (const char *)data + 2;
    const char *const texts[TEXT_SPLITS] = {rest, rest + a, rest + b};
    const size_t lens[TEXT_SPLITS] = {a, b - a, n - b};
    const char *const names[TEXT_SPLITS] = {"train.txt", "valid.txt", "test.txt"};
    TextCorpus c;
    char msg[FS_MSG_MAX];
    msg[0] = '\0';
    if (text_parse(texts, lens, names, data[0] & 1 ? &small : &words, &c, msg, sizeof msg) == 0) {
        check_corpus(&c);
        text_free(&c);
    } else if (!msg[0]) {
        abort();
    }
    return 0;
}
