#include "args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* An ARG_INT's range "MIN..MAX" (its choices field) into lo and hi; an int's limits when
 * it has none. A malformed one is the program's mistake. */
static void int_range(const ArgSpec *s, long long *lo, long long *hi) {
    *lo = INT_MIN, *hi = INT_MAX;
    if (!s->choices) return;
    char *end;
    errno = 0;
    *lo = strtoll(s->choices, &end, 10);
    const bool dots = strncmp(end, "..", 2) == 0;
    *hi = dots ? strtoll(end + 2, &end, 10) : 0;
    CHECK(dots && !*end && !errno && INT_MIN <= *lo && *lo <= *hi && *hi <= INT_MAX,
          "option --%s: its range \"%s\" is not MIN..MAX within an int", s->name, s->choices);
}

static void print_help(const char *prog, const ArgSpec *specs, int nspecs, const char *about) {
    printf("usage: %s [options]\n\n%s\n\noptions:\n", prog, about);
    for (int i = 0; i < nspecs; i++) {
        const ArgSpec *s = &specs[i];
        char def[64] = "";
        switch (s->type) {
        case ARG_INT: snprintf(def, sizeof def, "%d", *(int *)s->dest); break;
        case ARG_FLOAT: snprintf(def, sizeof def, "%g", (double)*(float *)s->dest); break;
        case ARG_STRING:
        case ARG_CHOICE: {
            const char *v = *(const char **)s->dest;
            snprintf(def, sizeof def, "%s", v ? v : "none");
            break;
        }
        case ARG_FLAG: break;
        }
        char left[64];
        snprintf(left, sizeof left, "--%s%s", s->name,
                 s->type == ARG_FLAG ? "" : s->type == ARG_CHOICE ? " CHOICE" : " VALUE");
        printf("  %-26s %s", left, s->help);
        if (s->type == ARG_CHOICE) printf(" (%s)", s->choices);
        if (s->type == ARG_INT && s->choices) {
            long long lo, hi;
            int_range(s, &lo, &hi);
            printf(" (%lld to %lld)", lo, hi);
        }
        if (s->type != ARG_FLAG) printf(" [default: %s]", def);
        printf("\n");
    }
}

static int in_choices(const char *value, const char *choices) {
    size_t n = strlen(value);
    for (const char *p = choices; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

/* The options the last parse set away from their defaults, each with its value as
 * args_value_set gives it (a number as the program holds it: "3e+38" for 3e38). The
 * names point into the specs (string literals). */
enum { SET_MAX = 64 };
static struct {
    const char *name;
    char value[64];
} g_set[SET_MAX];
static int g_nset;

static void note_set(const ArgSpec *s, bool changed) {
    int i = 0;
    while (i < g_nset && strcmp(g_set[i].name, s->name) != 0) i++;
    if (!changed) return; /* the same value again: as it was */
    if (i == g_nset) {
        if (g_nset == SET_MAX) return;
        g_nset++;
    }
    g_set[i].name = s->name;
    char *v = g_set[i].value;
    const size_t cap = sizeof g_set[i].value;
    switch (s->type) {
    case ARG_INT: snprintf(v, cap, "%d", *(const int *)s->dest); break;
    case ARG_FLOAT: snprintf(v, cap, "%g", (double)*(const float *)s->dest); break;
    case ARG_STRING:
    case ARG_CHOICE: snprintf(v, cap, "%s", *(const char *const *)s->dest); break;
    case ARG_FLAG: v[0] = '\0'; break;
    }
}

const char *args_value_set(const char *name) {
    for (int i = 0; i < g_nset; i++)
        if (strcmp(g_set[i].name, name) == 0) return g_set[i].value;
    return NULL;
}

static bool set_string(const ArgSpec *s, const char *value) {
    const char *old = *(const char **)s->dest;
    *(const char **)s->dest = value;
    return !old || strcmp(old, value) != 0;
}

/* Sets s's destination from value; returns whether it differs from what was there. */
static bool set_value(const ArgSpec *s, const char *value) {
    char *end = NULL;
    errno = 0;
    switch (s->type) {
    case ARG_INT: {
        long long v = strtoll(value, &end, 10), lo, hi;
        if (end == value || *end || (errno && errno != ERANGE))
            fatal("--%s expects an integer, got '%s'", s->name, value);
        /* an integer, but not one the option takes: say its own limits (a range the
         * program gave, else an int's), not "an integer" */
        int_range(s, &lo, &hi);
        if (s->choices && (errno == ERANGE || v < lo || v > hi))
            fatal("--%s must be %lld to %lld, got %s", s->name, lo, hi, value);
        if (errno == ERANGE || v > hi)
            fatal("--%s: %s is too large; the largest value allowed is %lld", s->name, value, hi);
        if (v < lo)
            fatal("--%s: %s is too small; the smallest value allowed is %lld", s->name, value, lo);
        const bool changed = *(int *)s->dest != (int)v;
        *(int *)s->dest = (int)v;
        return changed;
    }
    case ARG_FLOAT: {
        float v = strtof(value, &end);
        if (end == value || *end || (errno && errno != ERANGE))
            fatal("--%s expects a number, got '%s'", s->name, value);
        /* ERANGE: a value below the smallest float is still a number (it reads as 0 or
         * a denormal; whether that is allowed is the program's range check); one above
         * the largest has no float to stand for it */
        if (errno == ERANGE && isinf(v))
            fatal("--%s: %s is too large for a float (at most about 3.4e38)", s->name, value);
        const bool changed = *(float *)s->dest != v;
        *(float *)s->dest = v;
        return changed;
    }
    case ARG_CHOICE:
        if (!in_choices(value, s->choices))
            fatal("--%s must be one of %s, got '%s'", s->name, s->choices, value);
        return set_string(s, value);
    case ARG_STRING: return set_string(s, value);
    case ARG_FLAG: {
        const bool changed = *(int *)s->dest != 1;
        *(int *)s->dest = 1;
        return changed;
    }
    }
    return false;
}

/* The spec named by arg ("--name" or "--name=value"), or NULL. */
static const ArgSpec *find_spec(const char *arg, const ArgSpec *specs, int nspecs) {
    if (strncmp(arg, "--", 2) != 0) return NULL;
    const char *name = arg + 2, *eq = strchr(name, '=');
    const size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (int k = 0; k < nspecs; k++)
        if (strlen(specs[k].name) == len && strncmp(specs[k].name, name, len) == 0) return &specs[k];
    return NULL;
}

void args_parse(int argc, char **argv, const ArgSpec *specs, int nspecs, const char *about) {
    for (int a = 0; a < nspecs; a++) /* a program's mistake: the later one would win, silently */
        for (int b = a + 1; b < nspecs; b++)
            CHECK(strcmp(specs[a].name, specs[b].name) != 0, "option --%s is declared twice",
                  specs[a].name);
    g_nset = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(argv[0], specs, nspecs, about);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0)
            fatal("unexpected argument '%s' (options start with --; see --help)", arg);
        const char *eq = strchr(arg + 2, '=');
        const ArgSpec *s = find_spec(arg, specs, nspecs);
        if (!s) {
            const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
            fatal("unknown option '%.*s' (see %s --help)", (int)len, arg, argv[0]);
        }
        const char *value;
        if (s->type == ARG_FLAG) {
            if (eq) fatal("--%s takes no value", s->name);
            value = "";
        } else if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc) fatal("--%s needs a value (see %s --help)", s->name, argv[0]);
            /* "--target-return --steps 2000": the value was forgotten, and the next option
             * is not a value (--x=--y gives one that looks like an option) */
            const char *next = argv[i + 1];
            if (find_spec(next, specs, nspecs) || strcmp(next, "--help") == 0 || strcmp(next, "-h") == 0)
                fatal("--%s needs a value, but the option %s follows it (--%s=VALUE for a value "
                      "that starts with --; see %s --help)", s->name, next, s->name, argv[0]);
            value = argv[++i];
        }
        note_set(s, set_value(s, value));
    }
}
