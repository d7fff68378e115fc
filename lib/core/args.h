/* Command-line options, declared as a table:
 *
 *   ArgSpec specs[] = {
 *       {"epochs", ARG_INT, &cfg.epochs, "number of passes over the training set"},
 *       {"dataset", ARG_CHOICE, &cfg.dataset, "data set", "fashion-mnist|mnist|synthetic"},
 *   };
 *   args_parse(argc, argv, specs, ARRAY_LEN(specs), "what the program does");
 *
 * Accepts --name value and --name=value; --help prints every option with its
 * default. A wrong option or value is a user error: one message, exit status 1. */
#ifndef CORE_ARGS_H
#define CORE_ARGS_H

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef enum { ARG_INT, ARG_FLOAT, ARG_STRING, ARG_CHOICE, ARG_FLAG } ArgType;

typedef struct {
    const char *name;    /* without the leading dashes */
    ArgType type;
    void *dest;          /* int*, float*, const char**, const char**, int* (flag) */
    const char *help;
    const char *choices; /* ARG_CHOICE only: "a|b|c" */
} ArgSpec;

void args_parse(int argc, char **argv, const ArgSpec *specs, int nspecs, const char *about);

#endif
