/* Text corpora for word-level language models (lesson 04): a vocabulary, three token
 * streams (train, valid, test), and PyTorch's batchify / get_batch over them.
 *
 *   TextCorpus c;
 *   text_load("wikitext2", data_dir, NULL, &c);      // or "text" with a file or folder
 *   TextBatches train;
 *   text_batchify(&c.train, 20, "train", &train);     // [rows, 20]
 *   for (int64_t i = 0; i < train.rows - 1; i += bptt) {
 *       TextBatch b = text_get_batch(&train, i, bptt); // input, target: [seq_len, 20]
 *       ...
 *   }
 *
 * Two tokenisers, each that of a PyTorch program, so that the same text gives the same
 * token stream here as there:
 *
 *   TEXT_TOKENS_WORDS (the default): PyTorch's examples/word_language_model
 *       (data.Corpus): each line split on whitespace (Python's str.split()), "<eos>"
 *       appended to every line, blank lines too. Ids in order of first appearance in
 *       train. On WikiText-2: 33,278 words, train 2,088,628 tokens.
 *   TEXT_TOKENS_BASIC_ENGLISH: the "Language Modeling with nn.Transformer and
 *       torchtext" tutorial the seed ran: torchtext's basic_english tokeniser (lower
 *       case, punctuation . , ( ) ! ? ' split off, " ; : dropped), no "<eos>", and a
 *       vocabulary of "<unk>" (id 0) then the train words by falling count, ties in
 *       byte order (build_vocab_from_iterator). On WikiText-2: 28,782 words, the number
 *       behind the seed's 77,879,406 parameters.
 *
 * The vocabulary comes from train alone. A word of valid or test that train does not
 * have becomes "<unk>" (counted in unknown[]); when train has no "<unk>", it is added
 * as the vocabulary's last word. (word_language_model adds such words to its dictionary
 * instead; on WikiText-2 there are none, so both give 33,278.)
 *
 * Without WikiText-2 a real English text that Debian ships is always at hand: the
 * quotations, literature, poems and jokes of the `fortunes` package (text_load
 * "fortunes", and "text" or "auto" without a file: see text_load below).
 *
 * Text is UTF-8, checked as strictly as Python's decoder (a leading byte-order mark is
 * skipped); lines end in \n, \r\n or \r, as Python reads them. A missing, empty,
 * non-UTF-8 or binary file, a line longer than max_line_bytes, a vocabulary larger than
 * max_vocab, or a split too short for one batch is the user's error: one message naming
 * the file (and line), exit 1. */
#ifndef DATA_TEXT_H
#define DATA_TEXT_H

#include <stddef.h>
#include <stdint.h>

typedef enum { TEXT_TOKENS_WORDS = 0, TEXT_TOKENS_BASIC_ENGLISH = 1 } TextTokenizer;

/* Limits beyond which a text is refused with a message; 0 in a field: the default. */
typedef struct {
    TextTokenizer tokenizer;
    int max_vocab;          /* TEXT_MAX_VOCAB: an embedding of 200 floats a word is 3.2 GB */
    size_t max_file_bytes;  /* TEXT_MAX_FILE_BYTES */
    size_t max_line_bytes;  /* TEXT_MAX_LINE_BYTES: a longer "line" is not prose */
} TextOptions;

#define TEXT_MAX_VOCAB (1 << 22)
#define TEXT_MAX_FILE_BYTES ((size_t)2 << 30)
#define TEXT_MAX_LINE_BYTES ((size_t)1 << 20)

/* One word a token: ids into the vocabulary. */
typedef struct {
    int *ids;       /* [count] */
    int64_t count;
    int64_t lines;  /* lines read, as Python counts them */
} TokenStream;

/* Words and their ids: a hash table over the words' bytes (one pass, no sorting). */
typedef struct {
    char *bytes;             /* every word NUL-terminated, one after another */
    int64_t bytes_len, bytes_cap;
    int64_t *offset;         /* [count] where word id starts in bytes */
    int64_t *freq;           /* [count] how often vocab_add met it */
    int count, capacity;
    int *slots;              /* [nslots] id + 1, or 0: empty */
    int64_t nslots;          /* a power of two, at least twice count */
} Vocab;

enum { TEXT_SPLITS = 3 };    /* train, valid, test */

typedef struct {
    char name[16];           /* what was loaded: "wikitext2", "fortunes" or "text" */
    char source[512];        /* where it was read from, for the log */
    char note[512];          /* why this text ("" when it is what was asked for) */
    TextTokenizer tokenizer;
    Vocab vocab;
    int unk_id;              /* "<unk>" */
    int eos_id;              /* "<eos>"; -1 with TEXT_TOKENS_BASIC_ENGLISH */
    TokenStream train, valid, test;
    int64_t unknown[TEXT_SPLITS]; /* words of each split that became <unk> for want of an id
                                   * (train: 0) */
} TextCorpus;

/* name "wikitext2": wiki.{train,valid,test}.tokens (WikiText-2 v1, as `make datasets`
 *     unpacks it), looked for in data_path only when given, else in $DATA_DIR, then
 *     datasets/data under the current directory and under the repository, each in
 *     wikitext-2/wikitext-2/, wikitext-2/ and the directory itself.
 * name "fortunes": the fortunes text (text_fortunes_read) from data_path when given,
 *     else from TEXT_FORTUNES_DIR, cut as one file is (below). Missing: a message that
 *     says to install the package (sudo apt-get install fortunes, or sudo make deps).
 * name "text": data_path is a plain-text file, cut at line ends into train (the first
 *     80% of its bytes), valid (10%) and test (10%); or a directory with train.txt,
 *     valid.txt and test.txt (word_language_model's layout) or the three wiki.*.tokens.
 *     Without data_path: the fortunes text, and c->note says so.
 * name "auto" (a program's default): WikiText-2 where "wikitext2" finds it, else, with
 *     data_path, "text" on it, else the fortunes text; c->note says which and why.
 * options may be NULL: the defaults (TEXT_TOKENS_WORDS). */
void text_load(const char *name, const char *data_path, const TextOptions *options,
               TextCorpus *c);
/* Three files, one for each split. */
void text_load_files(const char *train_path, const char *valid_path, const char *test_path,
                     const TextOptions *options, TextCorpus *c);
/* One file, cut into three as text_load("text", file) does. */
void text_load_split_file(const char *path, const TextOptions *options, TextCorpus *c);

/* One text in memory cut into three at line ends as text_load_split_file does (train the
 * first 80% of the bytes, valid the next 10%, test the rest), then parsed; name is for
 * the messages. 0 and c filled, or -1 and the message (nothing to free). Never exits. */
int text_parse_split(const char *text, size_t len, const char *name, const TextOptions *options,
                     TextCorpus *c, char *msg, size_t cap);

/* ------------------------------------------------------------ the fortunes text */

/* Where Debian's `fortunes` package puts its files (fortune-mod's data). */
#define TEXT_FORTUNES_DIR "/usr/share/games/fortunes"

/* The fortunes text: every plain file of dir in byte order of the names, leaving out
 * the *.dat indexes, the *.u8 names, other symbolic links, hidden files and anything that
 * is not a regular file; each file's lines one after the other (a file without a final
 * line end gets one), without the lines that are only "%" (the separators between
 * entries). Each file must be UTF-8 without NUL bytes. *text (malloc'ed, NUL-terminated;
 * free it), *len and *files (how many files went in), or -1 and a message that names
 * the directory or the file and the fix (the package missing: sudo apt-get install
 * fortunes). More than max_bytes of text (0: TEXT_MAX_FILE_BYTES) is refused. Never
 * exits. */
int text_fortunes_read(const char *dir, size_t max_bytes, char **text, size_t *len, int *files,
                       char *msg, size_t cap);
/* text_fortunes_read, then text_parse_split; exits 1 with the message on a problem. */
void text_load_fortunes(const char *dir, const TextOptions *options, TextCorpus *c);

/* The same from memory: texts[s], lens[s] for train, valid, test, names[s] for the
 * messages. 0 and c filled (text_free it), or -1 with the message in msg and nothing to
 * free. Never exits: the fuzz targets and tests call it. */
int text_parse(const char *const texts[TEXT_SPLITS], const size_t lens[TEXT_SPLITS],
               const char *const names[TEXT_SPLITS], const TextOptions *options,
               TextCorpus *c, char *msg, size_t cap);
void text_free(TextCorpus *c);

/* ------------------------------------------------------------ batchify, get_batch */

/* A stream cut into batch_size columns, PyTorch's batchify: the remainder that does not
 * fill a row is dropped, and column b holds the b-th contiguous piece of the stream:
 * data[i * cols + b] = stream[b * rows + i]. */
typedef struct {
    int *data;     /* [rows, cols] */
    int64_t rows;
    int cols;
} TextBatches;

/* what names the split in the message when it is too short for two rows (one input, one
 * target): then it stops (exit 1) saying how long it is and what to change. */
void text_batchify(const TokenStream *s, int batch_size, const char *what, TextBatches *out);
void text_batches_free(TextBatches *b);

/* get_batch(source, i): rows i .. i+seq_len-1 as input and i+1 .. i+seq_len as target,
 * seq_len = min(bptt, rows - 1 - i) (the last batch is shorter). Views into b->data, no
 * copy: input[t * cols + c], target likewise, both [seq_len, cols]. */
typedef struct {
    const int *input;   /* [seq_len, cols] */
    const int *target;  /* [seq_len, cols]: input shifted by one row */
    int seq_len, cols;
} TextBatch;

TextBatch text_get_batch(const TextBatches *b, int64_t i, int bptt);
/* How many batches one pass takes: i = 0, bptt, 2 bptt, ... < rows - 1. */
int64_t text_batch_count(const TextBatches *b, int bptt);

/* ------------------------------------------------------------ the vocabulary alone */

/* The word's id, or -1. */
int vocab_find(const Vocab *v, const char *word, size_t len);
/* The word's id, added if new (its count goes up by one either way); -1 when the
 * vocabulary already holds max_count words and this one is new. */
int vocab_add(Vocab *v, const char *word, size_t len, int max_count);
const char *vocab_word(const Vocab *v, int id);
void vocab_free(Vocab *v);

#endif
