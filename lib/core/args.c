#include "args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

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

static void set_value(const ArgSpec *s, const char *value) {
    char *end = NULL;
    errno = 0;
    switch (s->type) {
    case ARG_INT: {
        long long v = strtoll(value, &end, 10);
        if (end == value || *end || (errno && errno != ERANGE))
            fatal("--%s expects an integer, got '%s'", s->name, value);
        /* an integer, but not one an int holds: say the limit, not "an integer" */
        if (errno == ERANGE || v > INT_MAX)
            fatal("--%s: %s is too large; the largest value allowed is %d", s->name, value, INT_MAX);
        if (v < INT_MIN)
            fatal("--%s: %s is too small; the smallest value allowed is %d", s->name, value, INT_MIN);
        *(int *)s->dest = (int)v;
        break;
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
        *(float *)s->dest = v;
        break;
    }
    case ARG_CHOICE:
        if (!in_choices(value, s->choices))
            fatal("--%s must be one of %s, got '%s'", s->name, s->choices, value);
        *(const char **)s->dest = value;
        break;
    case ARG_STRING: *(const char **)s->dest = value; break;
    case ARG_FLAG: *(int *)s->dest = 1; break;
    }
}

void args_parse(int argc, char **argv, const ArgSpec *specs, int nspecs, const char *about) {
    for (int a = 0; a < nspecs; a++) /* a program's mistake: the later one would win, silently */
        for (int b = a + 1; b < nspecs; b++)
            CHECK(strcmp(specs[a].name, specs[b].name) != 0, "option --%s is declared twice",
                  specs[a].name);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help(argv[0], specs, nspecs, about);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0)
            fatal("unexpected argument '%s' (options start with --; see --help)", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const ArgSpec *s = NULL;
        for (int k = 0; k < nspecs; k++)
            if (strlen(specs[k].name) == len && strncmp(specs[k].name, name, len) == 0)
                s = &specs[k];
        if (!s) fatal("unknown option '%.*s' (see %s --help)", (int)(len + 2), arg, argv[0]);
        if (s->type == ARG_FLAG) {
            if (eq) fatal("--%s takes no value", s->name);
            set_value(s, "");
        } else if (eq) {
            set_value(s, eq + 1);
        } else {
            if (i + 1 >= argc) fatal("--%s needs a value (see %s --help)", s->name, argv[0]);
            set_value(s, argv[++i]);
        }
    }
}
