/* The fortunes text: a real English text that Debian ships (the `fortunes` package,
 * fortune-mod's data: quotations, literature, poems, jokes; 2.5 MB in 43 files on
 * Debian 12), for language models where WikiText-2 has not been fetched. The files are
 * read in byte order of their names and put one after the other, without the "%" lines
 * that separate the entries; then the text is cut 80/10/10 like any single text file. */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/check.h"
#include "core/fs.h"
#include "data/text.h"
#include "data/text_utf8.h"

#define FORTUNES_FIX                                                                      \
    "install Debian's fortunes package (sudo apt-get install fortunes, or sudo make deps), " \
    "fetch WikiText-2 (make datasets DATASETS=wikitext-2), or give a text of your own "     \
    "(--dataset text --data FILE)"

static bool ends_with(const char *s, const char *suffix) {
    const size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the fortune files in dir, sorted: *names (free each and the array), *n. */
static int list_files(const char *dir, char ***names, int *n, char *msg, size_t cap) {
    DIR *d = opendir(dir);
    if (!d) {
        const int e = errno;
        return fail_msg(msg, cap, "the fortunes text: cannot open %s (%s): %s", dir,
                          strerror(e), FORTUNES_FIX);
    }
    int count = 0, capacity = 64;
    char **list = xmalloc((size_t)capacity * sizeof *list);
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        const char *name = ent->d_name;
        if (name[0] == '.' || ends_with(name, ".dat") || ends_with(name, ".u8")) continue;
        char path[FS_PATH_MAX];
        struct stat st;
        if (fs_join(path, sizeof path, dir, name) != 0 || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue; /* symbolic links (the same text again), directories, ... */
        if (count == capacity) {
            capacity *= 2;
            char **bigger = xmalloc((size_t)capacity * sizeof *bigger);
            memcpy(bigger, list, (size_t)count * sizeof *list);
            xfree(list);
            list = bigger;
        }
        const size_t len = strlen(name) + 1;
        list[count] = xmalloc(len);
        memcpy(list[count++], name, len);
    }
    closedir(d);
    qsort(list, (size_t)count, sizeof *list, by_name);
    *names = list, *n = count;
    return 0;
}

/* Whether a file's bytes are UTF-8 without NUL: 0, or -1 and the message (file, line). */
static int check_utf8(const char *path, const unsigned char *s, size_t len, char *msg, size_t cap) {
    long long line = 1;
    for (size_t i = 0; i < len;) {
        if (s[i] < 0x80) {
            if (s[i] == 0)
                return fail_msg(msg, cap, "%s, line %lld: a NUL byte: not a text file", path, line);
            line += s[i] == '\n' || (s[i] == '\r' && (i + 1 >= len || s[i + 1] != '\n'));
            i++;
            continue;
        }
        uint32_t cp;
        const int k = utf8_decode(s + i, len - i, &cp);
        if (k == 0)
            return fail_msg(msg, cap, "%s, line %lld: byte 0x%02x is not UTF-8 (the fortunes "
                              "text is read as UTF-8)", path, line, s[i]);
        i += (size_t)k;
    }
    return 0;
}

/* Appends the lines of s[0..len) to out (room for len + 1 more bytes), without the lines
 * that are only "%", and with a line end after the last line when it has none. */
static size_t append_lines(char *out, const char *s, size_t len) {
    size_t w = 0, pos = 0;
    while (pos < len) {
        size_t e = pos;
        while (e < len && s[e] != '\n' && s[e] != '\r') e++;
        size_t next = e;
        if (next < len) next += s[next] == '\r' && next + 1 < len && s[next + 1] == '\n' ? 2 : 1;
        const bool separator = e - pos == 1 && s[pos] == '%';
        if (!separator) {
            memcpy(out + w, s + pos, next - pos);
            w += next - pos;
            if (next == e) out[w++] = '\n'; /* the file's last line had no line end */
        }
        pos = next;
    }
    return w;
}

int text_fortunes_read(const char *dir, size_t max_bytes, char **text, size_t *len, int *files,
                       char *msg, size_t cap) {
    if (max_bytes == 0) max_bytes = TEXT_MAX_FILE_BYTES;
    *text = NULL, *len = 0, *files = 0;
    if (!fs_is_dir(dir))
        return fail_msg(msg, cap, "the fortunes text is not there: %s is not a directory. To "
                          "fix it: %s", dir, FORTUNES_FIX);
    char **names = NULL;
    int n = 0;
    if (list_files(dir, &names, &n, msg, cap) != 0) return -1;
    int rc = 0;
    char *out = NULL;
    size_t used = 0, room = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        char path[FS_PATH_MAX];
        uint8_t *bytes;
        size_t blen;
        if (fs_join(path, sizeof path, dir, names[i]) != 0) {
            rc = fail_msg(msg, cap, "%s/%s: the path is too long", dir, names[i]);
            break;
        }
        if (fs_read_file(path, max_bytes, &bytes, &blen, msg, cap) != 0) {
            rc = -1;
            break;
        }
        rc = check_utf8(path, bytes, blen, msg, cap);
        if (rc == 0 && used + blen + 1 > max_bytes)
            rc = fail_msg(msg, cap, "the fortunes text in %s is more than %zu bytes (at %s)",
                            dir, max_bytes, names[i]);
        if (rc == 0) {
            if (used + blen + 2 > room) {
                room = 2 * (used + blen + 2);
                char *bigger = xmalloc(room);
                if (used) memcpy(bigger, out, used);
                free(out);
                out = bigger;
            }
            used += append_lines(out + used, (const char *)bytes, blen);
            ++*files;
        }
        free(bytes);
    }
    for (int i = 0; i < n; i++) xfree(names[i]);
    xfree(names);
    if (rc == 0 && (*files == 0 || used == 0))
        rc = fail_msg(msg, cap, "the fortunes text: %s has no fortune files (plain files other "
                        "than *.dat and *.u8) with text. To fix it: %s", dir, FORTUNES_FIX);
    if (rc != 0) {
        free(out);
        *files = 0;
        return -1;
    }
    out[used] = '\0';
    *text = out, *len = used;
    return 0;
}

void text_load_fortunes(const char *dir, const TextOptions *options, TextCorpus *c) {
    char msg[FS_MSG_MAX], name[FS_PATH_MAX + 32];
    char *text;
    size_t len;
    int files;
    if (text_fortunes_read(dir, options ? options->max_file_bytes : 0, &text, &len, &files, msg,
                           sizeof msg) != 0)
        fatal("%s", msg);
    snprintf(name, sizeof name, "the fortunes text of %s", dir);
    const int rc = text_parse_split(text, len, name, options, c, msg, sizeof msg);
    free(text);
    if (rc != 0) fatal("%s", msg);
    snprintf(c->name, sizeof c->name, "fortunes");
    snprintf(c->source, sizeof c->source, "%s (%d files, %zu bytes without the %% lines)", dir,
             files, len);
}
