/* Finding and reading text corpora on disk (text_load), then text_parse on the bytes.
 * Nothing is searched for when --data is given; otherwise WikiText-2 is looked for where
 * `make datasets` puts it, and the error lists every place tried and the fixes. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"
#include "core/fs.h"
#include "data/text.h"

static const char *const WIKI_FILES[TEXT_SPLITS] = {"wiki.train.tokens", "wiki.valid.tokens",
                                                    "wiki.test.tokens"};
static const char *const PLAIN_FILES[TEXT_SPLITS] = {"train.txt", "valid.txt", "test.txt"};

static size_t max_file(const TextOptions *o) {
    return o && o->max_file_bytes ? o->max_file_bytes : TEXT_MAX_FILE_BYTES;
}

static char *read_or_die(const char *path, const TextOptions *o, size_t *len) {
    uint8_t *bytes;
    char msg[FS_MSG_MAX];
    if (fs_read_file(path, max_file(o), &bytes, len, msg, sizeof msg) != 0)
        fatal("%s (a text file is needed; for WikiText-2 run 'make datasets DATASETS=wikitext-2' "
              "on a login node)", msg);
    return (char *)bytes;
}

/* Parses the three texts; on a problem, its message and exit 1. */
static void parse_or_die(char *const texts[TEXT_SPLITS], const size_t lens[TEXT_SPLITS],
                         const char *const names[TEXT_SPLITS], const TextOptions *o,
                         TextCorpus *c) {
    char msg[FS_MSG_MAX];
    const char *const t[TEXT_SPLITS] = {texts[0], texts[1], texts[2]};
    if (text_parse(t, lens, names, o, c, msg, sizeof msg) != 0) fatal("%s", msg);
}

void text_load_files(const char *train_path, const char *valid_path, const char *test_path,
                     const TextOptions *options, TextCorpus *c) {
    const char *const paths[TEXT_SPLITS] = {train_path, valid_path, test_path};
    char *texts[TEXT_SPLITS];
    size_t lens[TEXT_SPLITS];
    for (int s = 0; s < TEXT_SPLITS; s++) texts[s] = read_or_die(paths[s], options, &lens[s]);
    parse_or_die(texts, lens, paths, options, c);
    for (int s = 0; s < TEXT_SPLITS; s++) free(texts[s]);
    snprintf(c->name, sizeof c->name, "text");
    snprintf(c->source, sizeof c->source, "%s", train_path);
    char *slash = strrchr(c->source, '/');
    if (slash && slash != c->source) *slash = '\0'; /* the directory, for the log */
}

/* The first line start at or after byte `at`, or len. */
static size_t cut_after_line(const char *text, size_t len, size_t at) {
    if (at == 0 || at >= len) return at < len ? at : len;
    if (text[at - 1] == '\n' || (text[at - 1] == '\r' && text[at] != '\n')) return at;
    size_t p = at;
    while (p < len && text[p] != '\n' && text[p] != '\r') p++;
    if (p < len) p += text[p] == '\r' && p + 1 < len && text[p + 1] == '\n' ? 2 : 1;
    return p;
}

int text_parse_split(const char *text, size_t len, const char *name, const TextOptions *options,
                     TextCorpus *c, char *msg, size_t cap) {
    if (len == 0) {
        snprintf(msg, cap, "%s is empty: a text file of words is needed", name);
        return -1;
    }
    const size_t cut1 = cut_after_line(text, len, len / 10 * 8);
    const size_t cut2 = cut_after_line(text, len, cut1 > len / 10 * 9 ? cut1 : len / 10 * 9);
    if (cut1 == 0 || cut2 >= len) { /* a text of a few bytes: cut1 is 0 */
        snprintf(msg, cap, "%s: too few lines to cut into train (80%% of the bytes), valid (10%%) "
                 "and test (10%%) at line ends: the text needs more lines (a line is %s long "
                 "here)", name, cut1 >= len ? "all of it" : "about a tenth of it or more");
        return -1;
    }
    char names[TEXT_SPLITS][FS_PATH_MAX + 64];
    const char *parts[TEXT_SPLITS] = {"its first 80%", "its next 10%", "its last 10%"};
    for (int s = 0; s < TEXT_SPLITS; s++)
        snprintf(names[s], sizeof names[s], "%s (%s)", name, parts[s]);
    const char *const texts[TEXT_SPLITS] = {text, text + cut1, text + cut2};
    const size_t lens[TEXT_SPLITS] = {cut1, cut2 - cut1, len - cut2};
    const char *const n[TEXT_SPLITS] = {names[0], names[1], names[2]};
    return text_parse(texts, lens, n, options, c, msg, cap);
}

void text_load_split_file(const char *path, const TextOptions *options, TextCorpus *c) {
    size_t len;
    char *text = read_or_die(path, options, &len);
    char msg[FS_MSG_MAX];
    if (text_parse_split(text, len, path, options, c, msg, sizeof msg) != 0) fatal("%s", msg);
    free(text);
    snprintf(c->name, sizeof c->name, "text");
    snprintf(c->source, sizeof c->source, "%s", path);
}

/* dir holds the three files `files`: their paths in out. */
static bool has_set(const char *dir, const char *const files[TEXT_SPLITS],
                    char out[TEXT_SPLITS][FS_PATH_MAX]) {
    for (int s = 0; s < TEXT_SPLITS; s++) {
        if (fs_join(out[s], FS_PATH_MAX, dir, files[s]) != 0) return false;
        if (!fs_is_regular_file(out[s])) return false;
    }
    return true;
}

/* The first of base/wikitext-2/wikitext-2, base/wikitext-2 and base that holds the three
 * WikiText-2 files: their paths in paths. Each place looked at is added to tried. */
static bool find_wikitext_in(const char *base, char paths[TEXT_SPLITS][FS_PATH_MAX], char *tried,
                             size_t cap) {
    const char *const subs[] = {"wikitext-2/wikitext-2", "wikitext-2", ""};
    for (size_t k = 0; k < sizeof subs / sizeof subs[0]; k++) {
        char dir[FS_PATH_MAX];
        if (subs[k][0] ? fs_join(dir, sizeof dir, base, subs[k]) != 0
                       : snprintf(dir, sizeof dir, "%s", base) >= (int)sizeof dir)
            continue;
        if (has_set(dir, WIKI_FILES, paths)) return true;
        const size_t used = strlen(tried);
        snprintf(tried + used, cap - used, "  %s%s\n", dir,
                 fs_is_dir(dir) ? "" : "  (no such directory)");
    }
    return false;
}

/* WikiText-2 in data_path only when given, else in the usual places (text.h). */
static bool find_wikitext2(const char *data_path, char paths[TEXT_SPLITS][FS_PATH_MAX],
                           char *tried, size_t cap) {
    tried[0] = '\0';
    if (data_path && data_path[0]) return find_wikitext_in(data_path, paths, tried, cap);
    const char *env = getenv("DATA_DIR");
    if (env && env[0] && find_wikitext_in(env, paths, tried, cap)) return true;
    char here[FS_PATH_MAX];
    if (getcwd(here, sizeof here - 16) && strcat(here, "/datasets/data") &&
        find_wikitext_in(here, paths, tried, cap))
        return true;
#ifdef COURSE_ROOT
    if (find_wikitext_in(COURSE_ROOT "/datasets/data", paths, tried, cap)) return true;
#endif
    return false;
}

static void load_wikitext2_files(char paths[TEXT_SPLITS][FS_PATH_MAX], const TextOptions *o,
                                 TextCorpus *c) {
    text_load_files(paths[0], paths[1], paths[2], o, c);
    snprintf(c->name, sizeof c->name, "wikitext2");
}

static void load_wikitext2(const char *data_path, const TextOptions *o, TextCorpus *c) {
    static char tried[8192];
    char paths[TEXT_SPLITS][FS_PATH_MAX];
    if (find_wikitext2(data_path, paths, tried, sizeof tried)) {
        load_wikitext2_files(paths, o, c);
        return;
    }
    fatal("cannot find WikiText-2 (wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens). "
          "Looked in:\n%sTo fix it: on a login node with internet run 'make datasets "
          "DATASETS=wikitext-2' (datasets/README.md), or pass --data DIR, or train on another "
          "text with --dataset text --data FILE (or on Debian's fortunes: --dataset fortunes)",
          tried);
}

/* A file, or a directory with train/valid/test.txt or the three wiki.*.tokens. */
static void load_text(const char *data_path, const TextOptions *options, TextCorpus *c) {
    if (!fs_is_dir(data_path)) {
        text_load_split_file(data_path, options, c);
        return;
    }
    char paths[TEXT_SPLITS][FS_PATH_MAX];
    if (has_set(data_path, PLAIN_FILES, paths) || has_set(data_path, WIKI_FILES, paths)) {
        text_load_files(paths[0], paths[1], paths[2], options, c);
        return;
    }
    fatal("%s is a directory without train.txt, valid.txt and test.txt (nor wiki.train.tokens, "
          "wiki.valid.tokens, wiki.test.tokens): give those, or one text file with --data FILE",
          data_path);
}

void text_load(const char *name, const char *data_path, const TextOptions *options,
               TextCorpus *c) {
    const bool have_path = data_path && data_path[0];
    if (strcmp(name, "wikitext2") == 0 || strcmp(name, "wikitext-2") == 0) {
        load_wikitext2(data_path, options, c);
    } else if (strcmp(name, "fortunes") == 0) {
        text_load_fortunes(have_path ? data_path : TEXT_FORTUNES_DIR, options, c);
    } else if (strcmp(name, "text") == 0) {
        if (have_path) {
            load_text(data_path, options, c);
        } else {
            text_load_fortunes(TEXT_FORTUNES_DIR, options, c);
            snprintf(c->note, sizeof c->note, "--dataset text without --data: Debian's fortunes "
                     "text (give your own with --data FILE)");
        }
    } else if (strcmp(name, "auto") == 0) {
        static char tried[8192];
        char paths[TEXT_SPLITS][FS_PATH_MAX];
        if (find_wikitext2(data_path, paths, tried, sizeof tried)) {
            load_wikitext2_files(paths, options, c);
        } else if (have_path) {
            load_text(data_path, options, c);
            snprintf(c->note, sizeof c->note, "no WikiText-2 in %s: read as a plain text",
                     data_path);
        } else {
            text_load_fortunes(TEXT_FORTUNES_DIR, options, c);
            snprintf(c->note, sizeof c->note, "WikiText-2 not found ('make datasets "
                     "DATASETS=wikitext-2' fetches it): Debian's fortunes text instead");
        }
    } else {
        fatal("unknown text data set '%s': use wikitext2, fortunes, text (with --data FILE or "
              "DIR) or auto", name);
    }
}
