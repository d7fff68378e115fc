/* Unit tests of lib/data/text: both tokenisers against the Python code they copy
 * (tests/reference/text_reference.h, from make_text_reference.py), batchify and get_batch
 * against PyTorch, every kind of bad input, the speed of one pass, and WikiText-2's
 * published counts where the files are present. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/timer.h"
#include "data/text.h"
#include "framework/check.h"
#include "fuzz/seed.h"
#include "reference/text_reference.h"

static const char *const NAMES[TEXT_SPLITS] = {"train.txt", "valid.txt", "test.txt"};

static int parse_ref(TextTokenizer tok, TextCorpus *c) {
    const char *const texts[TEXT_SPLITS] = {TEXT_REF_TRAIN, TEXT_REF_VALID, TEXT_REF_TEST};
    const size_t lens[TEXT_SPLITS] = {sizeof TEXT_REF_TRAIN - 1, sizeof TEXT_REF_VALID - 1,
                                      sizeof TEXT_REF_TEST - 1};
    TextOptions o = {.tokenizer = tok};
    char msg[512];
    /* the three as one file: a seed for make fuzz (fuzz_text cuts it as text_parse_split) */
    char whole[sizeof TEXT_REF_TRAIN + sizeof TEXT_REF_VALID + sizeof TEXT_REF_TEST];
    snprintf(whole, sizeof whole, "%s%s%s", TEXT_REF_TRAIN, TEXT_REF_VALID, TEXT_REF_TEST);
    fuzz_seed_save("text", whole, strlen(whole));
    if (text_parse(texts, lens, NAMES, &o, c, msg, sizeof msg) != 0) {
        printf("text_parse failed: %s\n", msg);
        return -1;
    }
    return 0;
}

static bool same_stream(const char *what, const TokenStream *s, const int *want, int64_t n,
                        int64_t lines) {
    if (!expect_true(s->count == n, "%s: %lld tokens, Python has %lld", what, (long long)s->count, (long long)n))
        return false;
    if (!expect_true(s->lines == lines, "%s: %lld lines, Python reads %lld", what, (long long)s->lines, (long long)lines))
        return false;
    for (int64_t k = 0; k < n; k++)
        if (!expect_true(s->ids[k] == want[k], "%s: token %lld is id %d, Python's is %d", what,
                         (long long)k, s->ids[k], want[k]))
            return false;
    return true;
}

static bool same_vocab(const Vocab *v, const char *const *words, int n) {
    if (!expect_true(v->count == n, "vocabulary of %d words, Python's has %d", v->count, n)) return false;
    for (int id = 0; id < n; id++)
        if (!expect_true(strcmp(vocab_word(v, id), words[id]) == 0, "word %d is '%s', Python's is '%s'",
                         id, vocab_word(v, id), words[id]))
            return false;
    return true;
}

static int check_words_tokenizer(void) {
    TextCorpus c;
    if (parse_ref(TEXT_TOKENS_WORDS, &c) != 0) return CHECK_FAIL;
    bool ok = same_vocab(&c.vocab, WORDS_WORDS, (int)(sizeof WORDS_WORDS / sizeof *WORDS_WORDS)) &&
              same_stream("train", &c.train, WORDS_TRAIN, WORDS_TRAIN_COUNT, WORDS_TRAIN_LINES) &&
              same_stream("valid", &c.valid, WORDS_VALID, WORDS_VALID_COUNT, WORDS_VALID_LINES) &&
              same_stream("test", &c.test, WORDS_TEST, WORDS_TEST_COUNT, WORDS_TEST_LINES) &&
              expect_true(c.unknown[1] == WORDS_VALID_UNKNOWN && c.unknown[2] == WORDS_TEST_UNKNOWN,
                          "unknown words %lld, %lld; Python %d, %d", (long long)c.unknown[1],
                          (long long)c.unknown[2], WORDS_VALID_UNKNOWN, WORDS_TEST_UNKNOWN) &&
              expect_true(strcmp(vocab_word(&c.vocab, c.eos_id), "<eos>") == 0 &&
                          strcmp(vocab_word(&c.vocab, c.unk_id), "<unk>") == 0, "eos/unk ids wrong");
    text_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_basic_english(void) {
    TextCorpus c;
    if (parse_ref(TEXT_TOKENS_BASIC_ENGLISH, &c) != 0) return CHECK_FAIL;
    bool ok = same_vocab(&c.vocab, BASIC_WORDS, (int)(sizeof BASIC_WORDS / sizeof *BASIC_WORDS)) &&
              same_stream("train", &c.train, BASIC_TRAIN, BASIC_TRAIN_COUNT, BASIC_TRAIN_LINES) &&
              same_stream("valid", &c.valid, BASIC_VALID, BASIC_VALID_COUNT, BASIC_VALID_LINES) &&
              same_stream("test", &c.test, BASIC_TEST, BASIC_TEST_COUNT, BASIC_TEST_LINES) &&
              expect_true(c.unk_id == 0 && c.eos_id == -1, "unk id %d (want 0), eos id %d (want -1)",
                          c.unk_id, c.eos_id) &&
              expect_true(c.unknown[1] == BASIC_VALID_UNKNOWN && c.unknown[2] == BASIC_TEST_UNKNOWN,
                          "unknown words %lld, %lld; Python %d, %d", (long long)c.unknown[1],
                          (long long)c.unknown[2], BASIC_VALID_UNKNOWN, BASIC_TEST_UNKNOWN);
    text_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A train text without <unk>: it is added last, and valid's new words map to it. */
static int check_unk_added(void) {
    const char *const texts[TEXT_SPLITS] = {"a b\nc a\n", "a z\n", "q\n"};
    const size_t lens[TEXT_SPLITS] = {8, 4, 2};
    TextCorpus c;
    char msg[256];
    if (text_parse(texts, lens, NAMES, NULL, &c, msg, sizeof msg) != 0) return CHECK_FAIL;
    /* vocabulary: a b <eos> c <unk> */
    const int valid[] = {0, 4, 2};
    bool ok = expect_true(c.vocab.count == 5 && c.unk_id == 4 && c.eos_id == 2,
                          "vocabulary %d words, unk %d, eos %d (want 5, 4, 2)", c.vocab.count,
                          c.unk_id, c.eos_id) &&
              same_stream("valid", &c.valid, valid, 3, 1);
    text_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_batchify_get_batch(void) {
    TextCorpus c;
    if (parse_ref(TEXT_TOKENS_WORDS, &c) != 0) return CHECK_FAIL;
    TextBatches b;
    text_batchify(&c.train, BATCH_REF_BSZ, "train", &b);
    bool ok = expect_true(b.rows == BATCH_REF_ROWS && b.cols == BATCH_REF_BSZ, "batchify: [%lld, %d], "
                          "PyTorch [%d, %d]", (long long)b.rows, b.cols, BATCH_REF_ROWS, BATCH_REF_BSZ) &&
              expect_true(text_batch_count(&b, BATCH_REF_BPTT) == BATCH_REF_COUNT, "%lld batches, "
                          "PyTorch %d", (long long)text_batch_count(&b, BATCH_REF_BPTT), BATCH_REF_COUNT);
    for (int64_t k = 0; ok && k < (int64_t)BATCH_REF_ROWS * BATCH_REF_BSZ; k++)
        ok = expect_true(b.data[k] == BATCH_REF_DATA[k], "batchify element %lld: %d, PyTorch %d",
                         (long long)k, b.data[k], BATCH_REF_DATA[k]);
    int64_t at = 0, n = 0;
    for (int64_t i = 0; ok && i < b.rows - 1; i += BATCH_REF_BPTT, n++) {
        TextBatch x = text_get_batch(&b, i, BATCH_REF_BPTT);
        ok = expect_true(x.seq_len == BATCH_REF_SEQ_LEN[n] && x.cols == BATCH_REF_BSZ,
                         "get_batch(%lld): seq_len %d, PyTorch %d", (long long)i, x.seq_len,
                         BATCH_REF_SEQ_LEN[n]);
        for (int k = 0; ok && k < x.seq_len * x.cols; k++, at++)
            ok = expect_true(x.input[k] == BATCH_REF_INPUTS[at] && x.target[k] == BATCH_REF_TARGETS[at],
                             "get_batch(%lld) element %d: input %d target %d, PyTorch %d %d",
                             (long long)i, k, x.input[k], x.target[k], BATCH_REF_INPUTS[at],
                             BATCH_REF_TARGETS[at]);
    }
    text_batches_free(&b);
    text_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ bad input */

typedef struct {
    const char *train; /* bytes of the train text (valid and test are fine) */
    size_t len;
    int max_vocab;
    size_t max_line;
} BadText;

static void body_parse(void *arg) {
    const BadText *b = arg;
    const char *const texts[TEXT_SPLITS] = {b->train, "a b\n", "a\n"};
    const size_t lens[TEXT_SPLITS] = {b->len, 4, 2};
    TextOptions o = {.max_vocab = b->max_vocab, .max_line_bytes = b->max_line};
    TextCorpus c;
    char msg[1024];
    fuzz_seed_save("text", b->train, b->len);
    if (text_parse(texts, lens, NAMES, &o, &c, msg, sizeof msg) == 0) {
        text_free(&c);
        printf("accepted\n");
        exit(0);
    }
    fprintf(stderr, "%s\n", msg);
    exit(1);
}

static bool refused(const char *what, BadText b, const char *w1, const char *w2) {
    ChildResult r;
    run_child(body_parse, &b, &r);
    return expect_exit(what, &r, 1, w1, w2, (const char *)NULL);
}

static int check_bad_text(void) {
    static char longline[5000];
    memset(longline, 'x', sizeof longline);
    bool ok = refused("empty", (BadText){"", 0, 0, 0}, "train.txt is empty", "train") &&
              refused("a byte-order mark only", (BadText){"\xef\xbb\xbf", 3, 0, 0}, "empty", "train") &&
              refused("blank lines only", (BadText){"\n \n\t\n", 5, 0, 0}, "no words", "3 blank lines") &&
              refused("Latin-1", (BadText){"ok\nna\xefve\n", 9, 0, 0}, "line 2", "byte 3 of the line (0xef) is not UTF-8") &&
              refused("overlong '/'", (BadText){"a \xc0\xaf\n", 5, 0, 0}, "line 1", "not UTF-8") &&
              refused("a surrogate", (BadText){"\xed\xa0\x80\n", 4, 0, 0}, "line 1", "not UTF-8") &&
              refused("beyond U+10FFFF", (BadText){"\xf4\x90\x80\x80\n", 5, 0, 0}, "line 1", "not UTF-8") &&
              refused("cut short", (BadText){"ab\xe2\x82", 4, 0, 0}, "line 1", "not UTF-8") &&
              refused("NUL byte", (BadText){"a\nb\0c\n", 6, 0, 0}, "line 2", "NUL byte") &&
              refused("line too long", (BadText){longline, sizeof longline, 0, 4096}, "line 1 is 5000 bytes",
                      "more than the 4096") &&
              refused("too many words", (BadText){"a b c d e f\n", 12, 4, 0}, "more than 4 different words",
                      "line 1");
    /* and the same limits let good text through */
    ChildResult r;
    BadText fine = {"a b c\n", 6, 5, 16}; /* a b c <eos> <unk> */
    run_child(body_parse, &fine, &r);
    ok = ok && expect_exit("a text within the limits", &r, 0, "accepted", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_batchify_short(void *arg) {
    (void)arg;
    int ids[39] = {0};
    TokenStream s = {ids, 39, 1};
    TextBatches b;
    text_batchify(&s, 20, "valid", &b); /* one row only: no target */
}

static int check_batchify_short(void) {
    ChildResult r;
    run_child(body_batchify_short, NULL, &r);
    return expect_exit("39 tokens in batches of 20", &r, 1, "valid split has 39 tokens",
                       "--batch-size", (const char *)NULL) ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ files */

static char tmpdir[64];

static void write_file(const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    fputs(text, f);
    fclose(f);
    fuzz_seed_save("text", text, strlen(text));
}

static void body_load(void *arg) {
    const char **a = arg;
    TextCorpus c;
    text_load(a[0], a[1], NULL, &c);
    printf("loaded %d words, %lld %lld %lld tokens\n", c.vocab.count, (long long)c.train.count,
           (long long)c.valid.count, (long long)c.test.count);
    printf("corpus %s from %s; note: %s\n", c.name, c.source, c.note[0] ? c.note : "none");
    text_free(&c);
}

static bool load_ends(const char *what, const char *name, const char *path, int code, const char *w1,
                      const char *w2) {
    const char *a[2] = {name, path};
    ChildResult r;
    run_child(body_load, a, &r);
    return expect_exit(what, &r, code, w1, w2, (const char *)NULL);
}

static int check_files_in(const char *dir) {
    snprintf(tmpdir, sizeof tmpdir, "%s", dir);
    char path[256], sub[256];
    /* one file of 20 lines: cut at line ends into 16 / 2 / 2 lines of 10 bytes */
    char text[400] = "";
    for (int i = 0; i < 20; i++) strcat(text, i % 2 ? "bb cc dd\r\n" : "aaa bb cc\n");
    write_file("book.txt", text);
    snprintf(path, sizeof path, "%s/book.txt", tmpdir);
    TextCorpus c;
    text_load("text", path, NULL, &c);
    bool ok = expect_true(c.train.lines == 16 && c.valid.lines == 2 && c.test.lines == 2,
                          "one file cut into %lld/%lld/%lld lines, want 16/2/2", (long long)c.train.lines,
                          (long long)c.valid.lines, (long long)c.test.lines) &&
              expect_true(c.train.count == 16 * 4 && c.vocab.count == 6, "%lld train tokens (want 64), %d "
                          "words (want 6: aaa bb cc <eos> dd <unk>)", (long long)c.train.count, c.vocab.count);
    text_free(&c);
    write_file("empty.txt", "");
    write_file("one.txt", "just one line of words\n");
    snprintf(sub, sizeof sub, "%s/empty.txt", tmpdir);
    ok = ok && load_ends("empty file", "text", sub, 1, "empty.txt is empty", "text file");
    snprintf(sub, sizeof sub, "%s/one.txt", tmpdir);
    ok = ok && load_ends("one line", "text", sub, 1, "too few lines", "one.txt");
    snprintf(sub, sizeof sub, "%s/missing.txt", tmpdir);
    ok = ok && load_ends("missing file", "text", sub, 1, "missing.txt", "No such file");
    ok = ok && load_ends("directory without the files", "text", tmpdir, 1, "train.txt, valid.txt",
                         "is a directory");
    if (fs_is_dir(TEXT_FORTUNES_DIR))
        ok = ok && load_ends("no --data: the fortunes text", "text", NULL, 0, "corpus fortunes from",
                             "--dataset text without --data");
    ok = ok && load_ends("unknown name", "poems", NULL, 1, "unknown text data set 'poems'", "fortunes");
    ok = ok && load_ends("no WikiText-2 under --data", "wikitext2", tmpdir, 1, "cannot find WikiText-2",
                         "make datasets DATASETS=wikitext-2");
    /* a directory with the three wiki files, as make datasets unpacks them */
    snprintf(sub, sizeof sub, "%s/wikitext-2", tmpdir);
    mkdir(sub, 0700);
    strcat(sub, "/wikitext-2");
    mkdir(sub, 0700);
    write_file("wikitext-2/wikitext-2/wiki.train.tokens", " \n = A = \n a b <unk> c \n");
    write_file("wikitext-2/wikitext-2/wiki.valid.tokens", " \n a z \n");
    write_file("wikitext-2/wikitext-2/wiki.test.tokens", " \n b \n");
    ok = ok && load_ends("WikiText-2 found under --data", "wikitext2", tmpdir, 0,
                         "loaded 7 words, 10 4 3 tokens", NULL);
    write_file("train.txt", "x y\n");
    write_file("valid.txt", "y\n");
    write_file("test.txt", "\n");
    ok = ok && load_ends("a blank test.txt", "text", tmpdir, 1, "test.txt has no words", "test split");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_files(void) { return with_tmpdir("test_text", check_files_in); }

/* ------------------------------------------------------------ the fortunes text */

/* A directory like Debian's: plain files in any order, their *.dat indexes, *.u8 links,
 * a hidden file, a subdirectory and another link, "%" lines between entries. */
static void make_fortunes_dir(int extra_lines) {
    write_file("b", "bee one\n%\nbee two");              /* no final line end */
    write_file("a", "alpha\n%\n");
    write_file("d", "x\r\n%\r\n% not a separator\r\n");
    write_file("a.dat", "\x01\x02\x00\xff binary index");
    write_file(".hidden", "not read\n");
    char path[256], target[256];
    snprintf(path, sizeof path, "%s/a.u8", tmpdir);
    symlink("a", path);
    snprintf(path, sizeof path, "%s/c", tmpdir);
    symlink("b", path); /* a link to a fortune file: the same text again, not read */
    snprintf(path, sizeof path, "%s/sub", tmpdir);
    mkdir(path, 0700);
    snprintf(target, sizeof target, "%s/sub/e", tmpdir);
    FILE *f = fopen(target, "wb");
    fputs("not read either\n", f);
    fclose(f);
    if (extra_lines) { /* enough lines to cut into 80/10/10 */
        snprintf(path, sizeof path, "%s/e", tmpdir);
        f = fopen(path, "wb");
        for (int i = 0; i < extra_lines; i++) fprintf(f, "entry %d has words\n%%\n", i % 7);
        fclose(f);
    }
}

static int check_fortunes_read_in(const char *dir) {
    snprintf(tmpdir, sizeof tmpdir, "%s", dir);
    make_fortunes_dir(0);
    char *text, msg[FS_MSG_MAX];
    size_t len;
    int files;
    if (!expect_true(text_fortunes_read(tmpdir, 0, &text, &len, &files, msg, sizeof msg) == 0,
                     "text_fortunes_read failed: %s", msg))
        return CHECK_FAIL;
    const char *want = "alpha\nbee one\nbee two\nx\r\n% not a separator\r\n";
    bool ok = expect_true(files == 3, "%d files read, want 3 (a, b, d)", files) &&
              expect_true(len == strlen(want) && strcmp(text, want) == 0,
                          "the text is \"%s\" (%zu bytes), want \"%s\": files in name order, "
                          "%% lines dropped, a final line end added", text, len, want);
    free(text);
    /* with entries enough to cut: the words of every file in train, valid and test */
    make_fortunes_dir(40);
    TextCorpus c;
    text_load("fortunes", tmpdir, NULL, &c);
    const int64_t lines = c.train.lines + c.valid.lines + c.test.lines;
    ok = ok && expect_true(lines == 5 + 40, "%lld lines in the three splits, want 45", (long long)lines) &&
         expect_true(strcmp(c.name, "fortunes") == 0 && strstr(c.source, tmpdir) &&
                     strstr(c.source, "4 files"), "name '%s', source '%s'", c.name, c.source) &&
         expect_true(c.valid.count > 0 && c.test.count > 0 && c.train.count > 8 * c.test.count / 2,
                     "splits of %lld/%lld/%lld tokens", (long long)c.train.count,
                     (long long)c.valid.count, (long long)c.test.count);
    text_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_fortunes_read(void) { return with_tmpdir("test_fortunes", check_fortunes_read_in); }

static int check_fortunes_errors_in(const char *dir) {
    snprintf(tmpdir, sizeof tmpdir, "%s", dir);
    char path[256];
    snprintf(path, sizeof path, "%s/missing", tmpdir);
    bool ok = load_ends("the package missing", "fortunes", path, 1, "sudo apt-get install fortunes",
                        "make deps");
    ok = ok && load_ends("an empty directory", "fortunes", tmpdir, 1, "has no fortune files",
                         "sudo apt-get install fortunes");
    write_file("only.dat", "index\n");
    ok = ok && load_ends("indexes only", "fortunes", tmpdir, 1, "has no fortune files", NULL);
    write_file("latin", "caf\xe9\n%\nna\xefve\n");
    ok = ok && load_ends("Latin-1 bytes", "fortunes", tmpdir, 1, "latin, line 1", "is not UTF-8");
    write_file("latin", "fine\n");
    char path_nul[256];
    snprintf(path_nul, sizeof path_nul, "%s/nul", tmpdir);
    FILE *f = fopen(path_nul, "wb");
    fwrite("a\n%\nb\0c\n", 1, 9, f); /* fputs would stop at the NUL */
    fclose(f);
    ok = ok && load_ends("a NUL byte", "fortunes", tmpdir, 1, "nul, line 3", "NUL byte");
    write_file("nul", "% \n");
    ok = ok && load_ends("too little text to cut", "fortunes", tmpdir, 1, "too few lines", "fortunes");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_fortunes_errors(void) { return with_tmpdir("test_fortunes", check_fortunes_errors_in); }

/* Debian's own files, where the package is installed: every line but the "%" ones ends
 * up in one of the splits; "text" without a file and "auto" without WikiText-2 load it. */
static int check_fortunes_debian(void) {
    if (!fs_is_dir(TEXT_FORTUNES_DIR)) {
        printf("no %s (sudo apt-get install fortunes)\n", TEXT_FORTUNES_DIR);
        return CHECK_SKIP;
    }
    TextCorpus c;
    const double t0 = now_seconds();
    text_load("fortunes", NULL, NULL, &c);
    const double secs = now_seconds() - t0;
    printf("%s: %d words; train %lld, valid %lld, test %lld tokens; %lld/%lld/%lld lines; %.2f s\n",
           c.source, c.vocab.count, (long long)c.train.count, (long long)c.valid.count,
           (long long)c.test.count, (long long)c.train.lines, (long long)c.valid.lines,
           (long long)c.test.lines, secs);
    /* the lines of the plain files, counted here, less the separators */
    long long kept = 0;
    DIR *d = opendir(TEXT_FORTUNES_DIR);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[FS_PATH_MAX];
        struct stat st;
        const size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || (n > 4 && strcmp(e->d_name + n - 4, ".dat") == 0) ||
            (n > 3 && strcmp(e->d_name + n - 3, ".u8") == 0))
            continue;
        snprintf(path, sizeof path, "%s/%s", TEXT_FORTUNES_DIR, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        FILE *f = fopen(path, "rb");
        char line[1 << 16];
        while (f && fgets(line, sizeof line, f)) kept += strcmp(line, "%\n") != 0;
        if (f) fclose(f);
    }
    if (d) closedir(d);
    const long long lines = c.train.lines + c.valid.lines + c.test.lines;
    bool ok = expect_true(lines == kept, "%lld lines in the splits, %lld in the files without "
                          "the %% lines", lines, kept) &&
              expect_true(c.vocab.count > 10000 && c.test.count > 1000,
                          "a vocabulary of %d words and %lld test tokens: not the fortunes text?",
                          c.vocab.count, (long long)c.test.count);
    const int64_t train = c.train.count;
    text_free(&c);
    ok = ok && load_ends("text without --data", "text", NULL, 0, "corpus fortunes", "without --data");
    if (!getenv("DATA_DIR") && access(COURSE_ROOT "/datasets/data/wikitext-2", F_OK) != 0)
        ok = ok && load_ends("auto without WikiText-2", "auto", NULL, 0, "corpus fortunes",
                             "WikiText-2 not found");
    text_load("text", NULL, NULL, &c);
    ok = ok && expect_true(c.train.count == train, "text without --data: %lld train tokens, "
                           "fortunes %lld", (long long)c.train.count, (long long)train);
    text_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* "auto" takes WikiText-2 where it is, a plain text given with --data otherwise. */
static int check_auto_in(const char *dir) {
    snprintf(tmpdir, sizeof tmpdir, "%s", dir);
    char text[400] = "", path[256];
    for (int i = 0; i < 20; i++) strcat(text, "aaa bb cc\n");
    write_file("book.txt", text);
    snprintf(path, sizeof path, "%s/book.txt", tmpdir);
    bool ok = load_ends("auto with a file", "auto", path, 0, "corpus text", "read as a plain text");
    write_file("wiki.train.tokens", " \n a b \n");
    write_file("wiki.valid.tokens", " \n a \n");
    write_file("wiki.test.tokens", " \n b \n");
    ok = ok && load_ends("auto with WikiText-2 there", "auto", tmpdir, 0, "corpus wikitext2", "note: none");
    return ok ? CHECK_PASS : CHECK_FAIL;
}
static int check_auto(void) { return with_tmpdir("test_auto", check_auto_in); }

/* ------------------------------------------------------------ speed, WikiText-2 */

/* This process's CPU time: the tokeniser's own work, whatever else the machine runs (the
 * wall clock on a loaded 2-core machine measured 1.08 s for 0.4 s of work). */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* 11 MB of words drawn from 30,000 (as many as WikiText-2's train split): one pass of the
 * words tokeniser must take well under a second of CPU (three under AddressSanitizer,
 * which slows every access: a tokeniser that searched its vocabulary in a list, or
 * rescanned the text, would take minutes either way). */
static int check_speed(void) {
    const size_t want = 11u << 20;
    char *text = malloc(want + 64);
    size_t len = 0;
    uint64_t x = 88172645463325252ull;
    int words_in_line = 0;
    while (len < want) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const unsigned w = (unsigned)(x % 30000) * (unsigned)(x % 7 + 1) / 7; /* more small ids */
        len += (size_t)sprintf(text + len, "w%u", w);
        text[len++] = ++words_in_line == 90 ? '\n' : ' ';
        if (words_in_line == 90) words_in_line = 0;
    }
    const char *const texts[TEXT_SPLITS] = {text, "w1 w2\n", "w3\n"};
    const size_t lens[TEXT_SPLITS] = {len, 6, 3};
    TextCorpus c;
    char msg[256];
    const double t0 = cpu_seconds();
    const int rc = text_parse(texts, lens, NAMES, NULL, &c, msg, sizeof msg);
    const double secs = cpu_seconds() - t0;
    free(text);
    if (rc != 0) return CHECK_FAIL;
    printf("%.1f MB, %lld tokens, %d words: %.3f s of CPU\n", len / 1e6, (long long)c.train.count, c.vocab.count, secs);
    text_free(&c);
    const double limit = CHECK_ASAN ? 3.0 : 1.0;
    return expect_true(secs < limit, "tokenising 11 MB took %.2f s of CPU (limit %.0f s)", secs, limit) ? CHECK_PASS
                                                                                                      : CHECK_FAIL;
}

/* The published WikiText-2 numbers, where `make datasets` has fetched the files. */
static int check_wikitext2(void) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/datasets/data/wikitext-2/wikitext-2", COURSE_ROOT);
    const char *env = getenv("DATA_DIR");
    char envdir[512];
    if (env) snprintf(envdir, sizeof envdir, "%s/wikitext-2/wikitext-2", env);
    const char *where = env && access(envdir, R_OK) == 0 ? envdir : dir;
    char train[600], valid[600], test[600];
    snprintf(train, sizeof train, "%s/wiki.train.tokens", where);
    snprintf(valid, sizeof valid, "%s/wiki.valid.tokens", where);
    snprintf(test, sizeof test, "%s/wiki.test.tokens", where);
    if (access(train, R_OK) != 0) {
        printf("no WikiText-2 in %s (make datasets DATASETS=wikitext-2 fetches it)\n", where);
        return CHECK_SKIP;
    }
    TextCorpus c;
    const double t0 = now_seconds();
    text_load_files(train, valid, test, NULL, &c);
    const double secs = now_seconds() - t0;
    printf("word_language_model: %d words; train %lld, valid %lld, test %lld tokens; "
           "%lld/%lld/%lld lines; %.3f s\n", c.vocab.count, (long long)c.train.count,
           (long long)c.valid.count, (long long)c.test.count, (long long)c.train.lines,
           (long long)c.valid.lines, (long long)c.test.lines, secs);
    bool ok = expect_true(c.train.lines == 36718 && c.valid.lines == 3760 && c.test.lines == 4358,
                          "lines") &&
              expect_true(c.vocab.count == 33278, "vocabulary %d, want 33,278", c.vocab.count) &&
              expect_true(c.train.count == 2088628 && c.valid.count == 217646 && c.test.count == 245569,
                          "token counts") &&
              expect_true(c.unknown[1] == 0 && c.unknown[2] == 0, "valid/test words outside train");
    text_free(&c);
    TextOptions o = {.tokenizer = TEXT_TOKENS_BASIC_ENGLISH};
    text_load_files(train, valid, test, &o, &c);
    printf("basic_english: %d words; train %lld, valid %lld, test %lld tokens\n", c.vocab.count,
           (long long)c.train.count, (long long)c.valid.count, (long long)c.test.count);
    ok = ok && expect_true(c.vocab.count == 28782, "basic_english vocabulary %d, want 28,782 (the seed's)",
                           c.vocab.count);
    text_free(&c);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("lib/data/text");
    check_run(NULL, "word_language_model's tokens and vocabulary, as Python makes them", check_words_tokenizer, 30);
    check_run(NULL, "basic_english + torchtext's vocabulary, as Python makes them", check_basic_english, 30);
    check_run(NULL, "<unk> added when train has none; unknown words map to it", check_unk_added, 30);
    check_run(NULL, "batchify and get_batch against PyTorch (short last batch)", check_batchify_get_batch, 30);
    check_run(NULL, "bad text refused with the line and the fix", check_bad_text, 60);
    check_run(NULL, "a split too short for one batch is refused", check_batchify_short, 30);
    check_run(NULL, "text_load: one file cut in three, folders, missing/empty files", check_files, 60);
    check_run(NULL, "the fortunes text: files in name order, no indexes, links or % lines", check_fortunes_read, 30);
    check_run(NULL, "the fortunes text missing, empty or not UTF-8: a message with the fix", check_fortunes_errors, 30);
    check_run(NULL, "Debian's fortunes: every line but the % ones, also as text and auto's default", check_fortunes_debian, 60);
    check_run(NULL, "auto: WikiText-2 where it is, else the file given", check_auto, 30);
    check_run(NULL, "11 MB tokenised in well under a second of CPU", check_speed, 60);
    check_run(NULL, "WikiText-2: 36,718 lines, 33,278 words; 28,782 with basic_english", check_wikitext2, 60);
    return check_end();
}
