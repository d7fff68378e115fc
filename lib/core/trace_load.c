/* Reading one rank's trace file back (core/trace_load.h): a small JSON reader for the
 * layout trace_write.c writes, strict where the shares depend on it (times to the ns, the
 * categories, one rank) and tolerant of keys it does not need. */
#include "trace_load.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fs.h"
#include "trace_internal.h"

enum { DEPTH_MAX = 32, MAX_FILE = 1 << 30 };
/* ns: the most a start may be from the origin, and the most the kept events' durations
 * may add up to (36 years), so that every end (ts + dur) and every sum of durations in
 * trace_shares.c fits in an int64_t, whatever a file says */
#define TIME_MAX ((int64_t)1 << 60)

typedef struct {
    const char *s, *end, *start;
    const char *where;
    char *why;
    size_t cap;
    bool failed;
} Reader;

__attribute__((format(printf, 2, 3))) static bool fail(Reader *r, const char *fmt, ...) {
    if (r->failed) return false;
    r->failed = true;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(r->why, r->cap, "%s: byte %lld: %s", r->where, (long long)(r->s - r->start), msg);
    return false;
}

static void space(Reader *r) {
    while (r->s < r->end && (*r->s == ' ' || *r->s == '\n' || *r->s == '\r' || *r->s == '\t')) r->s++;
}

static bool eat(Reader *r, char c) {
    space(r);
    if (r->s < r->end && *r->s == c) {
        r->s++;
        return true;
    }
    return false;
}

static bool expect(Reader *r, char c) {
    return eat(r, c) || fail(r, "'%c' expected, found %s", c, r->s < r->end ? "something else" : "the end");
}

/* A string into out[cap] (cut to fit; NUL-terminated); escapes decoded (\u as UTF-8). */
static bool string(Reader *r, char *out, size_t cap) {
    if (!expect(r, '"')) return false;
    size_t n = 0;
    while (r->s < r->end && *r->s != '"') {
        unsigned c = (unsigned char)*r->s++;
        char buf[4];
        size_t len = 1;
        if (c < 0x20) return fail(r, "a control character inside a string");
        buf[0] = (char)c;
        if (c == '\\') {
            if (r->s >= r->end) break;
            const char e = *r->s++;
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *at = strchr(from, e);
            if (e && at) {
                buf[0] = to[at - from];
            } else if (e == 'u') {
                unsigned u = 0;
                for (int k = 0; k < 4; k++, r->s++) {
                    const char h = r->s < r->end ? *r->s : 0;
                    const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (d < 0) return fail(r, "a \\u escape without four hex digits");
                    u = u * 16 + (unsigned)d;
                }
                if (u < 0x80) buf[0] = (char)u;
                else if (u < 0x800) buf[0] = (char)(0xc0 | u >> 6), buf[1] = (char)(0x80 | (u & 63)), len = 2;
                else buf[0] = (char)(0xe0 | u >> 12), buf[1] = (char)(0x80 | (u >> 6 & 63)),
                     buf[2] = (char)(0x80 | (u & 63)), len = 3;
            } else {
                return fail(r, "an unknown escape in a string");
            }
        }
        for (size_t k = 0; k < len; k++)
            if (n + 1 < cap) out[n++] = buf[k];
    }
    if (cap) out[n] = '\0';
    return expect(r, '"');
}

/* A number as a fixed-point integer with `decimals` digits after the point: 12.003 with
 * 3 -> 12003. More digits (not all 0), an exponent or an overflow are refused. */
static bool fixed(Reader *r, int decimals, int64_t *out, const char *what) {
    space(r);
    const bool neg = r->s < r->end && *r->s == '-';
    if (neg) r->s++;
    if (r->s >= r->end || *r->s < '0' || *r->s > '9') return fail(r, "%s: a number expected", what);
    uint64_t v = 0;
    const uint64_t limit = (uint64_t)INT64_MAX / 10 - 9;
    for (; r->s < r->end && *r->s >= '0' && *r->s <= '9'; r->s++) {
        if (v > limit) return fail(r, "%s: a number too large", what);
        v = v * 10 + (uint64_t)(*r->s - '0');
    }
    int got = 0;
    if (r->s < r->end && *r->s == '.') {
        r->s++;
        if (r->s >= r->end || *r->s < '0' || *r->s > '9') return fail(r, "%s: a digit expected after '.'", what);
        for (; r->s < r->end && *r->s >= '0' && *r->s <= '9'; r->s++) {
            if (got < decimals) {
                if (v > limit) return fail(r, "%s: a number too large", what);
                v = v * 10 + (uint64_t)(*r->s - '0'), got++;
            } else if (*r->s != '0') {
                return fail(r, "%s: more than %d decimals (the library writes microseconds to the "
                            "nanosecond)", what, decimals);
            }
        }
    }
    if (r->s < r->end && (*r->s == 'e' || *r->s == 'E')) return fail(r, "%s: an exponent (not the library's numbers)", what);
    for (; got < decimals; got++) {
        if (v > limit) return fail(r, "%s: a number too large", what);
        v *= 10;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

static bool integer(Reader *r, int64_t *out, const char *what) { return fixed(r, 0, out, what); }

/* Any value, read past. */
static bool skip(Reader *r, int depth) {
    if (depth > DEPTH_MAX) return fail(r, "nested more than %d deep", DEPTH_MAX);
    space(r);
    if (r->s >= r->end) return fail(r, "a value expected, found the end");
    const char c = *r->s;
    if (c == '"') {
        char scratch[8];
        return string(r, scratch, sizeof scratch);
    }
    if (c == '{' || c == '[') {
        const char close = c == '{' ? '}' : ']';
        r->s++;
        if (eat(r, close)) return true;
        do {
            if (c == '{') {
                char key[8];
                if (!string(r, key, sizeof key) || !expect(r, ':')) return false;
            }
            if (!skip(r, depth + 1)) return false;
        } while (eat(r, ','));
        return expect(r, close);
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++) {
        const size_t n = strlen(words[k]);
        if ((size_t)(r->end - r->s) >= n && memcmp(r->s, words[k], n) == 0) {
            r->s += n;
            return true;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) { /* any JSON number */
        r->s++;
        while (r->s < r->end && strchr("0123456789.eE+-", *r->s) && *r->s) r->s++;
        return true;
    }
    return fail(r, "not a JSON value");
}

/* The next member of an object, its key into key[cap]: 1; 0 at the object's end; -1 on an
 * error. *first is true before the object's '{'. */
static int member(Reader *r, char *key, size_t cap, bool *first) {
    if (*first) {
        *first = false;
        if (!expect(r, '{')) return -1;
        if (eat(r, '}')) return 0;
    } else if (!eat(r, ',')) {
        return expect(r, '}') ? 0 : -1;
    }
    return string(r, key, cap) && expect(r, ':') ? 1 : -1;
}

typedef struct {
    TraceFile *t;
    int64_t alloc;
    int64_t dur_sum;             /* the kept events' durations, at most TIME_MAX */
    char format[32];
    bool has_format;
} Loaded;

static bool args(Reader *r, int64_t *bytes) {
    char key[16];
    bool first = true;
    int m;
    while ((m = member(r, key, sizeof key, &first)) > 0) {
        if (strcmp(key, "bytes") == 0) {
            if (!integer(r, bytes, "args.bytes")) return false;
        } else if (!skip(r, 1)) {
            return false;
        }}
    if (m < 0) return false;
    return true;
}

static bool event(Reader *r, Loaded *l) {
    char key[16], ph[8] = "", cat[16] = "";
    TraceRecord e = {.bytes = -1, .pid = -1, .tid = -1};
    bool has[6] = {false}; /* name cat pid tid ts dur */
    int64_t v;
    bool first = true;
    int m;
    while ((m = member(r, key, sizeof key, &first)) > 0) {
        if (strcmp(key, "name") == 0) {
            if (!string(r, e.name, sizeof e.name)) return false;
            has[0] = true;
        } else if (strcmp(key, "cat") == 0) {
            if (!string(r, cat, sizeof cat)) return false;
            has[1] = true;
        } else if (strcmp(key, "ph") == 0) {
            if (!string(r, ph, sizeof ph)) return false;
        } else if (strcmp(key, "pid") == 0 || strcmp(key, "tid") == 0) {
            if (!integer(r, &v, key)) return false;
            if (v < 0 || v > 1 << 30) return fail(r, "%s %lld out of range", key, (long long)v);
            if (key[0] == 'p') e.pid = (int)v, has[2] = true;
            else e.tid = (int)v, has[3] = true;
        } else if (strcmp(key, "ts") == 0) {
            if (!fixed(r, 3, &e.ts_ns, "ts")) return false;
            has[4] = true;
        } else if (strcmp(key, "dur") == 0) {
            if (!fixed(r, 3, &e.dur_ns, "dur")) return false;
            has[5] = true;
        } else if (strcmp(key, "args") == 0) {
            space(r);
            if (r->s < r->end && *r->s == '{' ? !args(r, &e.bytes) : !skip(r, 1)) return false;
        } else if (!skip(r, 1)) {
            return false;
        }}
    if (m < 0) return false;
    if (strcmp(ph, "X") != 0) return true; /* metadata, counters: not kept */
    static const char *const fields[] = {"name", "cat", "pid", "tid", "ts", "dur"};
    for (int k = 0; k < 6; k++)
        if (!has[k]) return fail(r, "a complete event without \"%s\"", fields[k]);
    int c = 0;
    while (c < TRACE_CATS && strcmp(cat, trace_cat_name((TraceCat)c)) != 0) c++;
    if (c == TRACE_CATS) return fail(r, "'%s' has the category '%s': the library's are step, compute, comm, data, other", e.name, cat);
    e.cat = (TraceCat)c;
    if (e.dur_ns < 0) return fail(r, "'%s' lasts less than nothing", e.name);
    if (e.ts_ns < -TIME_MAX || e.ts_ns > TIME_MAX || e.dur_ns > TIME_MAX - l->dur_sum)
        return fail(r, "'%s': times beyond 2^60 ns (36 years) from the origin, or durations adding "
                    "up to more: not a run's trace", e.name);
    l->dur_sum += e.dur_ns;
    TraceFile *t = l->t;
    if (t->count > 0 && e.pid != t->pid)
        return fail(r, "events of ranks %d and %d: a merged file? trace_load reads one rank's file "
                    "(run.rank0.json), as --trace writes it", t->pid, e.pid);
    t->pid = e.pid;
    if (t->count == l->alloc) {
        l->alloc = l->alloc ? 2 * l->alloc : 1024;
        TraceRecord *grown = xmalloc((size_t)l->alloc * sizeof *grown);
        if (t->count) memcpy(grown, t->events, (size_t)t->count * sizeof *grown);
        xfree(t->events);
        t->events = grown;
    }
    t->events[t->count++] = e;
    return true;
}

static bool other_data(Reader *r, Loaded *l) {
    char key[32];
    int64_t v;
    bool first = true;
    int m;
    while ((m = member(r, key, sizeof key, &first)) > 0) {
        if (strcmp(key, "format") == 0) {
            space(r);
            if (r->s < r->end && *r->s == '"' ? !string(r, l->format, sizeof l->format) : !skip(r, 1)) return false;
            l->has_format = true;
        } else if (strcmp(key, "world_size") == 0 || strcmp(key, "dropped_events") == 0) {
            if (!integer(r, &v, key)) return false;
            if (key[0] == 'w') l->t->world_size = (int)(v > 0 && v < 1 << 30 ? v : 0);
            else l->t->dropped_events = v;
        } else if (!skip(r, 1)) {
            return false;
        }}
    if (m < 0) return false;
    return true;
}

static bool document(Reader *r, Loaded *l) {
    char key[32];
    bool events = false;
    space(r);
    if (r->s < r->end && *r->s == '[')
        return fail(r, "the JSON array form: the library writes the object form ({\"traceEvents\": [...]})");
    bool first = true;
    int m;
    while ((m = member(r, key, sizeof key, &first)) > 0) {
        if (strcmp(key, "traceEvents") == 0) {
            if (!expect(r, '[')) return false;
            if (!eat(r, ']')) {
                do
                    if (!event(r, l)) return false;
                while (eat(r, ','));
                if (!expect(r, ']')) return false;
            }
            events = true;
        } else if (strcmp(key, "otherData") == 0) {
            if (!other_data(r, l)) return false;
        } else if (!skip(r, 1)) {
            return false;
        }}
    if (m < 0) return false;
    space(r);
    if (r->s != r->end) return fail(r, "more after the trace's object");
    if (!events) return fail(r, "no traceEvents: is this a --trace file?");
    if (!l->has_format || strcmp(l->format, "course trace 1") != 0)
        return fail(r, "otherData has no \"format\": \"course trace 1\": not one rank's file as the "
                    "library writes it (a merged file of tools/trace, or another tool's?)");
    return true;
}

bool trace_parse(const char *text, size_t len, const char *where, TraceFile *out, char *why, size_t cap) {
    *out = (TraceFile){.pid = -1};
    Reader r = {.s = text, .end = text + len, .start = text, .where = where, .why = why, .cap = cap};
    Loaded l = {.t = out};
    if (cap) why[0] = '\0';
    if (document(&r, &l)) return true;
    trace_file_free(out);
    return false;
}

bool trace_load(const char *path, TraceFile *out, char *why, size_t cap) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    char msg[FS_MSG_MAX];
    *out = (TraceFile){.pid = -1};
    if (fs_read_file(path, MAX_FILE, &bytes, &len, msg, sizeof msg) != 0) {
        snprintf(why, cap, "%s", msg);
        return false;
    }
    const bool ok = trace_parse((const char *)bytes, len, path, out, why, cap);
    free(bytes);
    return ok;
}

void trace_file_free(TraceFile *t) {
    xfree(t->events);
    *t = (TraceFile){.pid = -1};
}
