/* Command-line options, declared as a table:
 *
 *   ArgSpec specs[] = {
 *       {"epochs", ARG_INT, &cfg.epochs, "number of passes over the training set"},
 *       {"dataset", ARG_CHOICE, &cfg.dataset, "data set", "fashion-mnist|mnist|synthetic"},
 *       {"max-steps", ARG_INT, &cfg.max_steps, "stop after this many steps", "0..1073741824"},
 *   };
 *   args_parse(argc, argv, specs, ARRAY_LEN(specs), "what the program does");
 *
 * Accepts --name value and --name=value; --help prints every option with its
 * default. A wrong option or value is a user error: one message, exit status 1. An
 * ARG_INT may give its range as "MIN..MAX" where a choice gives its choices: a value
 * outside it, however large, is refused with that range ("--max-steps must be 0 to
 * 1073741824, got 3000000000"), never with an int's limits that the program would
 * then refuse again. An option followed by another of the program's options has no
 * value (--target-return --steps 2000): refused by name (--x=--y gives such a value). */
#ifndef CORE_ARGS_H
#define CORE_ARGS_H

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef enum { ARG_INT, ARG_FLOAT, ARG_STRING, ARG_CHOICE, ARG_FLAG } ArgType;

typedef struct {
    const char *name;    /* without the leading dashes */
    ArgType type;
    void *dest;          /* int*, float*, const char**, const char**, int* (flag) */
    const char *help;
    const char *choices; /* ARG_CHOICE: "a|b|c"; ARG_INT: its range "MIN..MAX" or NULL */
} ArgSpec;

void args_parse(int argc, char **argv, const ArgSpec *specs, int nspecs, const char *about);

/* After args_parse: the value the command line set option `name` to (a number as the
 * program holds it, "3e+38" for 3e38), when that differs from the value it held before
 * (its default); NULL when the command line left it as it was. A diverged run's message
 * names what was set (lib/train/loop.h). */
const char *args_value_set(const char *name);

#endif
