/* Text in memory to token ids: lines as Python reads them, each split into words by one
 * of two tokenisers (see text.h), the vocabulary grown from train, then valid and test
 * looked up in it. One pass over the bytes, checking them as it goes; every problem is a
 * message naming the text and the line, never an exit (text_parse's callers decide). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "data/text.h"
#include "data/text_utf8.h"

static const char *const SPLIT_NAMES[TEXT_SPLITS] = {"train", "valid", "test"};

typedef struct {
    TextTokenizer tokenizer;
    int max_vocab;
    size_t max_line;
    Vocab *vocab;
    bool grow;           /* train: new words get ids; valid/test: they become <unk> */
    int unk_id;
    TokenStream *out;
    int64_t out_cap;
    int64_t unknown;     /* words that became <unk> */
    char *lowered;       /* basic_english: the line lower-cased, [lowered_cap] */
    size_t lowered_cap;
    const char *name;    /* the text's name and the current line (from 1), for messages */
    int64_t line;
    char *msg;
    size_t cap;
} Tokenizer;

static int fail(Tokenizer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Tokenizer *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->msg, t->cap, fmt, ap);
    va_end(ap);
    return -1;
}

static void push_id(Tokenizer *t, int id) {
    TokenStream *s = t->out;
    if (s->count == t->out_cap) {
        const int64_t cap = t->out_cap ? 2 * t->out_cap : 1 << 16;
        int *ids = xmalloc((size_t)cap * sizeof *ids);
        if (s->count) memcpy(ids, s->ids, (size_t)s->count * sizeof *ids);
        xfree(s->ids);
        s->ids = ids;
        t->out_cap = cap;
    }
    s->ids[s->count++] = id;
}

static int emit(Tokenizer *t, const char *word, size_t len) {
    int id;
    if (t->grow) {
        id = vocab_add(t->vocab, word, len, t->max_vocab);
        if (id < 0)
            return fail(t, "%s, line %lld: more than %d different words: a vocabulary this large "
                        "would not fit an embedding table in memory. Is this a text of words? "
                        "(TextOptions.max_vocab raises the limit)", t->name, (long long)t->line,
                        t->max_vocab);
    } else {
        id = vocab_find(t->vocab, word, len);
        if (id < 0) {
            id = t->unk_id;
            t->unknown++;
        }
    }
    push_id(t, id);
    return 0;
}

/* word_language_model: the words between whitespace, then <eos>. */
static int line_words(Tokenizer *t, const unsigned char *s, size_t n) {
    size_t start = 0;
    bool in_word = false;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        const int k = utf8_decode(s + i, n - i, &c); /* checked valid by the caller */
        if (utf8_is_space(c)) {
            if (in_word && emit(t, (const char *)s + start, i - start) != 0) return -1;
            in_word = false;
        } else if (!in_word) {
            in_word = true;
            start = i;
        }
        i += (size_t)k;
    }
    if (in_word && emit(t, (const char *)s + start, n - start) != 0) return -1;
    return emit(t, "<eos>", 5);
}

/* torchtext's basic_english: lower-case (str.lower()), drop '"', then "<br />", ';', ':'
 * and whitespace separate words, and each of . , ( ) ! ? ' is a word of its own. (The
 * Greek capital sigma always becomes σ; Python writes ς at the end of a word.) */
static int line_basic_english(Tokenizer *t, const unsigned char *s, size_t n) {
    if (t->lowered_cap < 2 * n + 8) { /* lower case is at most 3/2 the bytes (U+0130: 2 -> 3) */
        xfree(t->lowered);
        t->lowered_cap = 2 * n + 8;
        t->lowered = xmalloc(t->lowered_cap);
    }
    char *low = t->lowered;
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t c;
        i += (size_t)utf8_decode(s + i, n - i, &c);
        if (c == '"') continue;
        if (c == 0x130) { /* İ: "i" and a combining dot above */
            low[m++] = 'i';
            m += (size_t)utf8_encode(0x307, low + m);
            continue;
        }
        m += (size_t)utf8_encode(utf8_lower(c), low + m);
    }
    size_t start = 0;
    bool in_word = false;
#define END_WORD()                                                              \
    do {                                                                        \
        if (in_word && emit(t, low + start, i - start) != 0) return -1;         \
        in_word = false;                                                        \
    } while (0)
    for (size_t i = 0; i < m;) {
        if (low[i] == '<' && m - i >= 6 && memcmp(low + i, "<br />", 6) == 0) {
            END_WORD();
            i += 6;
            continue;
        }
        uint32_t c;
        const int k = utf8_decode((const unsigned char *)low + i, m - i, &c);
        if (c != 0 && c < 0x80 && strchr(".,()!?'", (int)c)) {
            END_WORD();
            if (emit(t, low + i, 1) != 0) return -1;
        } else if (c == ';' || c == ':' || utf8_is_space(c)) {
            END_WORD();
        } else if (!in_word) {
            in_word = true;
            start = i;
        }
        i += (size_t)k;
    }
    const size_t i = m;
    END_WORD();
#undef END_WORD
    return 0;
}

/* Lines as Python's text mode reads them (ends \n, \r\n or \r; the last may have none),
 * each checked (UTF-8, no NUL byte, not too long) and then split into words. */
static int tokenize_text(Tokenizer *t, const char *text, size_t len) {
    const unsigned char *s = (const unsigned char *)text;
    size_t pos = 0;
    if (len >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) pos = 3; /* a byte-order mark */
    t->line = 0;
    while (pos < len) {
        t->line++;
        size_t e = pos;
        while (e < len && s[e] != '\n' && s[e] != '\r') {
            if (s[e] < 0x80) {
                if (s[e] == 0)
                    return fail(t, "%s, line %lld: a NUL byte (byte %zu of the line): this is "
                                "not a text file", t->name, (long long)t->line, e - pos + 1);
                e++;
                continue;
            }
            uint32_t c;
            const int k = utf8_decode(s + e, len - e, &c);
            if (k == 0)
                return fail(t, "%s, line %lld: byte %zu of the line (0x%02x) is not UTF-8: "
                            "convert the text, e.g. iconv -f LATIN1 -t UTF-8 (with its real "
                            "encoding)", t->name, (long long)t->line, e - pos + 1, s[e]);
            e += (size_t)k;
        }
        if (e - pos > t->max_line)
            return fail(t, "%s, line %lld is %zu bytes long, more than the %zu a line may have: "
                        "is this a text file? (break it into lines, e.g. fold -s -w 1000)",
                        t->name, (long long)t->line, e - pos, t->max_line);
        const int rc = t->tokenizer == TEXT_TOKENS_WORDS ? line_words(t, s + pos, e - pos)
                                                         : line_basic_english(t, s + pos, e - pos);
        if (rc != 0) return -1;
        pos = e;
        if (pos < len) pos += s[pos] == '\r' && pos + 1 < len && s[pos + 1] == '\n' ? 2 : 1;
    }
    t->out->lines = t->line;
    return 0;
}

static const Vocab *sort_vocab; /* qsort has no context argument in C11 */

/* build_vocab_from_iterator's order: more frequent first, ties by the words' code points
 * (UTF-8 bytes compare in the same order). */
static int by_count_then_word(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    if (sort_vocab->freq[x] != sort_vocab->freq[y]) return sort_vocab->freq[x] > sort_vocab->freq[y] ? -1 : 1;
    return strcmp(vocab_word(sort_vocab, x), vocab_word(sort_vocab, y));
}

/* torchtext's vocabulary: "<unk>" first, then train's words by count; train re-numbered. */
static void order_by_count(Vocab *v, TokenStream *train) {
    int *order = xmalloc((size_t)v->count * sizeof *order), n = 0;
    const int old_unk = vocab_find(v, "<unk>", 5);
    for (int id = 0; id < v->count; id++)
        if (id != old_unk) order[n++] = id;
    sort_vocab = v;
    qsort(order, (size_t)n, sizeof *order, by_count_then_word);
    sort_vocab = NULL;
    Vocab sorted = {0};
    int *remap = xmalloc((size_t)v->count * sizeof *remap);
    const int unk = vocab_add(&sorted, "<unk>", 5, v->count + 1);
    sorted.freq[unk] = old_unk >= 0 ? v->freq[old_unk] : 0;
    if (old_unk >= 0) remap[old_unk] = unk;
    for (int k = 0; k < n; k++) {
        const char *w = vocab_word(v, order[k]);
        remap[order[k]] = vocab_add(&sorted, w, strlen(w), v->count + 1);
        sorted.freq[remap[order[k]]] = v->freq[order[k]];
    }
    for (int64_t k = 0; k < train->count; k++) train->ids[k] = remap[train->ids[k]];
    xfree(order);
    xfree(remap);
    vocab_free(v);
    *v = sorted;
}

static TokenStream *split_of(TextCorpus *c, int s) {
    return s == 0 ? &c->train : s == 1 ? &c->valid : &c->test;
}

int text_parse(const char *const texts[TEXT_SPLITS], const size_t lens[TEXT_SPLITS],
               const char *const names[TEXT_SPLITS], const TextOptions *options, TextCorpus *c,
               char *msg, size_t cap) {
    const TextOptions defaults = {0};
    const TextOptions *o = options ? options : &defaults;
    memset(c, 0, sizeof *c);
    c->tokenizer = o->tokenizer;
    CHECK(o->tokenizer == TEXT_TOKENS_WORDS || o->tokenizer == TEXT_TOKENS_BASIC_ENGLISH,
          "unknown tokenizer %d", (int)o->tokenizer);
    Tokenizer t = {.tokenizer = o->tokenizer,
                   .max_vocab = o->max_vocab > 0 ? o->max_vocab : TEXT_MAX_VOCAB,
                   .max_line = o->max_line_bytes ? o->max_line_bytes : TEXT_MAX_LINE_BYTES,
                   .vocab = &c->vocab, .unk_id = -1, .msg = msg, .cap = cap};
    int rc = 0;
    for (int s = 0; s < TEXT_SPLITS && rc == 0; s++) {
        t.name = names[s];
        t.out = split_of(c, s);
        t.out_cap = 0;
        t.unknown = 0;
        t.grow = s == 0;
        if (lens[s] == 0 || (lens[s] == 3 && memcmp(texts[s], "\xef\xbb\xbf", 3) == 0)) {
            rc = fail(&t, "%s is empty: the %s split needs text", names[s], SPLIT_NAMES[s]);
            break;
        }
        rc = tokenize_text(&t, texts[s], lens[s]);
        if (rc != 0) break;
        const TokenStream *out = t.out;
        const int64_t eos = o->tokenizer == TEXT_TOKENS_WORDS ? out->lines : 0;
        if (out->count == eos) {
            rc = fail(&t, "%s has no words (%lld blank lines): the %s split needs text", names[s],
                      (long long)out->lines, SPLIT_NAMES[s]);
            break;
        }
        c->unknown[s] = t.unknown;
        if (s > 0) continue;
        /* after train: the vocabulary is final, with an id for <unk> */
        if (o->tokenizer == TEXT_TOKENS_BASIC_ENGLISH) {
            if (c->vocab.count + (vocab_find(&c->vocab, "<unk>", 5) < 0) > t.max_vocab) {
                rc = fail(&t, "%s: more than %d different words with <unk>", names[s], t.max_vocab);
                break;
            }
            order_by_count(&c->vocab, &c->train);
            c->eos_id = -1;
        } else {
            c->eos_id = vocab_find(&c->vocab, "<eos>", 5);
        }
        c->unk_id = vocab_find(&c->vocab, "<unk>", 5);
        if (c->unk_id < 0) {
            c->unk_id = vocab_add(&c->vocab, "<unk>", 5, t.max_vocab);
            if (c->unk_id < 0) {
                rc = fail(&t, "%s: more than %d different words with <unk>", names[s], t.max_vocab);
                break;
            }
            c->vocab.freq[c->unk_id] = 0;
        }
        t.unk_id = c->unk_id;
    }
    xfree(t.lowered);
    if (rc != 0) {
        text_free(c);
        return -1;
    }
    return 0;
}

void text_free(TextCorpus *c) {
    vocab_free(&c->vocab);
    for (int s = 0; s < TEXT_SPLITS; s++) xfree(split_of(c, s)->ids);
    memset(c, 0, sizeof *c);
}
