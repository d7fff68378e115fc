/* Unit tests of lib/core/args: both spellings (--x v, --x=v), flags, choices, defaults,
 * --help, and one clear message with exit status 1 for every kind of wrong input (each
 * parse that must stop runs in a child process of its own), an option taken for a
 * forgotten value among them; an int's range from its spec; what was set. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "framework/check.h"

typedef struct {
    int epochs, verbose, quiet;
    float lr;
    const char *dataset, *out;
} Config;

static const char *const DATASETS = "fashion-mnist|mnist|cifar10|synthetic";

/* Parses the NULL-terminated argv into cfg (starting from the defaults). */
static void parse_into(Config *cfg, const char **argv) {
    *cfg = (Config){.epochs = 5, .lr = 0.001f, .dataset = "mnist", .out = NULL};
    ArgSpec specs[] = {
        {"epochs", ARG_INT, &cfg->epochs, "passes over the training set", NULL},
        {"lr", ARG_FLOAT, &cfg->lr, "learning rate", NULL},
        {"dataset", ARG_CHOICE, &cfg->dataset, "data set", DATASETS},
        {"out", ARG_STRING, &cfg->out, "output file", NULL},
        {"verbose", ARG_FLAG, &cfg->verbose, "say more", NULL},
        {"quiet", ARG_FLAG, &cfg->quiet, "say less", NULL},
    };
    int argc = 0;
    while (argv[argc]) argc++;
    args_parse(argc, (char **)argv, specs, ARRAY_LEN(specs), "a test program");
}

static int check_args_parse(void) {
    Config c;
    bool ok = true;
    const char *none[] = {"prog", NULL};
    parse_into(&c, none);
    ok = ok && expect_true(c.epochs == 5 && c.lr == 0.001f && strcmp(c.dataset, "mnist") == 0 &&
                               c.out == NULL && !c.verbose && !c.quiet,
                           "no options changed the defaults");
    const char *spaced[] = {"prog", "--epochs", "3", "--lr", "0.5", "--dataset", "cifar10",
                            "--out", "a b.txt", "--verbose", NULL};
    parse_into(&c, spaced);
    ok = ok && expect_true(c.epochs == 3 && c.lr == 0.5f && strcmp(c.dataset, "cifar10") == 0 &&
                               c.out && strcmp(c.out, "a b.txt") == 0 && c.verbose && !c.quiet,
                           "--x value: epochs %d, lr %g, dataset %s, out %s, verbose %d, quiet %d",
                           c.epochs, c.lr, c.dataset, c.out ? c.out : "(null)", c.verbose, c.quiet);
    const char *equals[] = {"prog", "--epochs=3", "--lr=-2e-3", "--dataset=synthetic",
                            "--out=x=y", "--quiet", NULL};
    parse_into(&c, equals);
    ok = ok && expect_true(c.epochs == 3 && c.lr == -2e-3f && strcmp(c.dataset, "synthetic") == 0 &&
                               c.out && strcmp(c.out, "x=y") == 0 && !c.verbose && c.quiet,
                           "--x=value: epochs %d, lr %g, dataset %s, out %s, verbose %d, quiet %d",
                           c.epochs, c.lr, c.dataset, c.out ? c.out : "(null)", c.verbose, c.quiet);
    /* the last occurrence wins; negative integers; a value that looks like an option but
     * is none of the program's, and one of them given with = */
    const char *twice[] = {"prog", "--epochs", "3", "--epochs=-7", "--out", "--not-an-option", NULL};
    parse_into(&c, twice);
    ok = ok && expect_true(c.epochs == -7 && c.out && strcmp(c.out, "--not-an-option") == 0,
                           "repeated option / option-like value: epochs %d, out %s", c.epochs,
                           c.out ? c.out : "(null)");
    const char *eq_option[] = {"prog", "--out=--verbose", NULL};
    parse_into(&c, eq_option);
    ok = ok && expect_true(c.out && strcmp(c.out, "--verbose") == 0 && !c.verbose,
                           "--out=--verbose: out %s, verbose %d", c.out ? c.out : "(null)", c.verbose);
    /* a name that is a prefix of another is not that other */
    const char *prefix[] = {"prog", "--dataset", "fashion-mnist", NULL};
    parse_into(&c, prefix);
    ok = ok && expect_true(strcmp(c.dataset, "fashion-mnist") == 0, "dataset %s", c.dataset);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_parse(void *arg) {
    Config c;
    parse_into(&c, (const char **)arg);
}

/* Parses argv in a child: it must exit with `code` and a message that contains each of
 * the NULL-terminated strings that follow. */
static bool parse_exits(const char *what, const char **argv, int code, ...) {
    ChildResult o;
    run_child(body_parse, argv, &o);
    va_list ap;
    va_start(ap, code);
    bool ok = expect_exitv(what, &o, code, ap);
    va_end(ap);
    return ok;
}

/* Two options of one name: the later would silently win (lesson 06's own --trace once
 * lost to the shared one), so the parser refuses the program's specs. */
static void body_duplicate(void *arg) {
    const char *out = NULL, *again = NULL;
    const ArgSpec specs[] = {{"out", ARG_STRING, &out, "where", NULL},
                             {"out", ARG_STRING, &again, "where, again", NULL}};
    char *argv[] = {"prog", "--out", "x", NULL};
    (void)arg;
    args_parse(3, argv, specs, 2, "two options of one name");
}

static int check_args_duplicate(void) {
    ChildResult o;
    run_child(body_duplicate, NULL, &o);
    return expect_exit("an option declared twice", &o, EXIT_BUG, "option --out is declared twice",
                       (const char *)NULL) ? CHECK_PASS : CHECK_FAIL;
}

static int check_args_errors(void) {
    bool ok = true;
    const char *unknown[] = {"prog", "--epochs", "3", "--bogus", "1", NULL};
    ok = ok && parse_exits("unknown option", unknown, 1, "error: ", "unknown option", "--bogus",
                           "--help", (const char *)NULL);
    const char *unknown_eq[] = {"prog", "--bogus=2", NULL};
    ok = ok && parse_exits("unknown option with =", unknown_eq, 1, "unknown option '--bogus'",
                           (const char *)NULL);
    const char *bad_int[] = {"prog", "--epochs", "abc", NULL};
    ok = ok && parse_exits("bad integer", bad_int, 1, "--epochs", "integer", "abc",
                           (const char *)NULL);
    const char *trailing[] = {"prog", "--epochs=3x", NULL};
    ok = ok && parse_exits("integer with trailing text", trailing, 1, "--epochs", "3x",
                           (const char *)NULL);
    const char *fraction[] = {"prog", "--epochs", "2.5", NULL};
    ok = ok && parse_exits("fraction for an integer", fraction, 1, "--epochs", "2.5",
                           (const char *)NULL);
    const char *huge[] = {"prog", "--epochs", "99999999999", NULL};
    ok = ok && parse_exits("integer out of range", huge, 1, "--epochs", "99999999999",
                           (const char *)NULL);
    /* one past an int's largest value: the message says the limit (2^31 - 1), not
     * "expects an integer" (issue 30, fault 7) */
    const char *past_int[] = {"prog", "--epochs", "2147483648", NULL};
    ok = ok && parse_exits("one past the largest int", past_int, 1, "--epochs", "2147483648",
                           "largest value allowed is 2147483647", (const char *)NULL);
    const char *far_past[] = {"prog", "--epochs=99999999999999999999999", NULL};
    ok = ok && parse_exits("past even a long long", far_past, 1, "largest value allowed is 2147483647",
                           (const char *)NULL);
    const char *below_int[] = {"prog", "--epochs", "-2147483649", NULL};
    ok = ok && parse_exits("below the smallest int", below_int, 1, "-2147483649",
                           "smallest value allowed is -2147483648", (const char *)NULL);
    const char *empty[] = {"prog", "--epochs=", NULL};
    ok = ok && parse_exits("empty integer", empty, 1, "--epochs", "integer", (const char *)NULL);
    const char *bad_float[] = {"prog", "--lr", "fast", NULL};
    ok = ok && parse_exits("bad number", bad_float, 1, "--lr", "number", "fast",
                           (const char *)NULL);
    const char *bad_choice[] = {"prog", "--dataset", "imagenet", NULL};
    ok = ok && parse_exits("bad choice", bad_choice, 1, "--dataset", DATASETS, "imagenet",
                           (const char *)NULL);
    const char *part_choice[] = {"prog", "--dataset=mnis", NULL};
    ok = ok && parse_exits("part of a choice", part_choice, 1, "--dataset", "mnis",
                           (const char *)NULL);
    const char *no_value[] = {"prog", "--lr", NULL};
    ok = ok && parse_exits("missing value", no_value, 1, "--lr", "needs a value",
                           (const char *)NULL);
    /* a value forgotten: the next of the program's options is not taken for it (issue 39) */
    const char *forgot[] = {"prog", "--out", "--epochs", "2000", NULL};
    ok = ok && parse_exits("a string option followed by an option", forgot, 1, "--out needs a value",
                           "the option --epochs follows it", "--out=VALUE", (const char *)NULL);
    const char *forgot_eq[] = {"prog", "--out", "--lr=3", NULL};
    ok = ok && parse_exits("a string option followed by --x=v", forgot_eq, 1, "--out needs a value",
                           "--lr=3", (const char *)NULL);
    const char *forgot_flag[] = {"prog", "--dataset", "--verbose", NULL};
    ok = ok && parse_exits("a choice followed by a flag", forgot_flag, 1, "--dataset needs a value",
                           (const char *)NULL);
    const char *forgot_help[] = {"prog", "--out", "--help", NULL};
    ok = ok && parse_exits("a string option followed by --help", forgot_help, 1, "--out needs a value",
                           (const char *)NULL);
    const char *flag_value[] = {"prog", "--verbose=1", NULL};
    ok = ok && parse_exits("value for a flag", flag_value, 1, "--verbose", "no value",
                           (const char *)NULL);
    const char *positional[] = {"prog", "data.bin", NULL};
    ok = ok && parse_exits("positional argument", positional, 1, "data.bin", "--",
                           (const char *)NULL);
    const char *help[] = {"prog", "--epochs", "9", "--help", NULL};
    ok = ok && parse_exits("--help", help, 0, "usage: prog", "a test program", "--epochs",
                           "passes over the training set", "[default: 9]", "--dataset",
                           DATASETS, "--verbose", "--lr", "[default: 0.001]", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* A number too small for a float is still a number (a learning rate of 1e-60 reads as
 * 0 or a denormal: refusing it is the program's range check); one too large for a float
 * is refused by name, as something that is not a number is. */
static int check_args_float_range(void) {
    Config c;
    const char *tiny[] = {"prog", "--lr", "1e-60", NULL};
    parse_into(&c, tiny);
    bool ok = expect_true(c.lr == 0.0f, "--lr 1e-60 read as %g, expected 0", (double)c.lr);
    const char *denormal[] = {"prog", "--lr=-1e-40", NULL};
    parse_into(&c, denormal);
    ok = ok && expect_true(c.lr < 0 && c.lr > -1.2e-38f, "--lr -1e-40 read as %g", (double)c.lr);
    const char *largest[] = {"prog", "--lr", "3.4e38", NULL};
    parse_into(&c, largest);
    ok = ok && expect_true(c.lr == 3.4e38f, "--lr 3.4e38 read as %g", (double)c.lr);
    const char *huge[] = {"prog", "--lr", "1e39", NULL};
    ok = ok && parse_exits("a number too large for a float", huge, 1, "--lr", "1e39",
                           "too large for a float", (const char *)NULL);
    const char *minus_huge[] = {"prog", "--lr=-1e60", NULL};
    ok = ok && parse_exits("a negative number too large for a float", minus_huge, 1, "-1e60",
                           "too large", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The ends of an int are values like any other. */
static int check_args_int_range(void) {
    Config c;
    const char *largest[] = {"prog", "--epochs", "2147483647", NULL};
    parse_into(&c, largest);
    bool ok = expect_true(c.epochs == INT_MAX, "--epochs 2147483647 read as %d", c.epochs);
    const char *smallest[] = {"prog", "--epochs=-2147483648", NULL};
    parse_into(&c, smallest);
    ok = ok && expect_true(c.epochs == INT_MIN, "--epochs -2147483648 read as %d", c.epochs);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* An int's range from its spec ("MIN..MAX"): a value outside it, however large, is refused
 * with that range, never with an int's limits (issue 39); --help shows it. */
static void body_range(void *arg) {
    int steps = 0;
    const ArgSpec specs[] = {{"max-steps", ARG_INT, &steps, "stop after this many steps", "0..1073741824"}};
    const char **argv = arg;
    int argc = 0;
    while (argv[argc]) argc++;
    args_parse(argc, (char **)argv, specs, 1, "a range");
    printf("steps %d\n", steps);
}

static bool range_exits(const char *what, const char **argv, int code, ...) {
    ChildResult o;
    run_child(body_range, argv, &o);
    va_list ap;
    va_start(ap, code);
    bool ok = expect_exitv(what, &o, code, ap);
    va_end(ap);
    return ok;
}

static int check_args_spec_range(void) {
    bool ok = true;
    const char *past_int[] = {"prog", "--max-steps", "3000000000", NULL};
    ok = range_exits("past an int", past_int, 1, "--max-steps must be 0 to 1073741824, got 3000000000",
                     (const char *)NULL) && ok;
    const char *past_range[] = {"prog", "--max-steps=2000000000", NULL};
    ok = range_exits("past the range, within an int", past_range, 1,
                     "--max-steps must be 0 to 1073741824, got 2000000000", (const char *)NULL) && ok;
    const char *below[] = {"prog", "--max-steps", "-1", NULL};
    ok = range_exits("below the range", below, 1, "--max-steps must be 0 to 1073741824, got -1",
                     (const char *)NULL) && ok;
    const char *ends[] = {"prog", "--max-steps", "1073741824", NULL};
    ok = range_exits("the range's end", ends, 0, "steps 1073741824", (const char *)NULL) && ok;
    const char *help[] = {"prog", "--help", NULL};
    ok = range_exits("--help", help, 0, "(0 to 1073741824)", (const char *)NULL) && ok;
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* args_value_set: what the command line set away from its default, as the program holds
 * it; NULL for what it left alone or set to its default. */
static int check_args_value_set(void) {
    Config c;
    const char *argv[] = {"prog", "--lr", "3e38", "--epochs", "5", "--out=x", "--verbose", NULL};
    parse_into(&c, argv);
    const char *lr = args_value_set("lr"), *out = args_value_set("out");
    bool ok = expect_true(lr && strcmp(lr, "3e+38") == 0, "--lr 3e38: '%s'", lr ? lr : "(null)") &&
              expect_true(out && strcmp(out, "x") == 0, "--out=x: '%s'", out ? out : "(null)") &&
              expect_true(args_value_set("epochs") == NULL, "--epochs 5, its default, counted as set") &&
              expect_true(args_value_set("verbose") != NULL, "--verbose not counted as set") &&
              expect_true(args_value_set("dataset") == NULL && args_value_set("bogus") == NULL,
                          "options not given counted as set");
    const char *none[] = {"prog", NULL};
    parse_into(&c, none);
    ok = ok && expect_true(args_value_set("lr") == NULL, "a later parse keeps the earlier one's --lr");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: args");
    check_run(NULL, "args: --x v, --x=v, flags, choices, defaults", check_args_parse, 10);
    check_run(NULL, "args: every wrong input gives status 1 and a message; --help", check_args_errors, 10);
    check_run(NULL, "args: an option declared twice stops the program, naming it", check_args_duplicate, 10);
    check_run(NULL, "args: an int's largest and smallest values are accepted", check_args_int_range, 10);
    check_run(NULL, "args: an int's range from its spec: refused with that range, even past an int",
              check_args_spec_range, 10);
    check_run(NULL, "args: args_value_set names what the command line set away from its default",
              check_args_value_set, 10);
    check_run(NULL, "args: 1e-60 is a number (0); 1e39 is too large for a float",
              check_args_float_range, 10);
    return check_end();
}
