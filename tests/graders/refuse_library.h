/* For a grader: a TODO must not call the library's version of itself (that one is there
 * to compare with once the checks pass). The grader is linked with --wrap=NAME for each
 * such function (Makefile, GRADE_WRAPPED_NN) and -rdynamic, and declares the wrappers
 * with WRAP_VOID / WRAP_VALUE: a call lands in __wrap_NAME, which asks who called it
 * (dladdr on the return address) and fails the check when lesson_function(caller's name)
 * says it is the lesson's code. The grader defines lesson_function before including:
 *
 *   static bool lesson_function(const char *name) { return strncmp(name, "lesson_", 7) == 0; }
 *   #include "graders/refuse_library.h"
 *   WRAP_VOID(text_batchify, (const TokenStream *s, int b, const char *w, TextBatches *o), (s, b, w, o))
 */
#ifndef GRADERS_REFUSE_LIBRARY_H
#define GRADERS_REFUSE_LIBRARY_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "framework/check.h"

static bool lesson_function(const char *name);

static void refuse_from_lesson(const char *library_fn, void *caller) {
    Dl_info info;
    if (!dladdr(caller, &info) || !info.dli_sname || !lesson_function(info.dli_sname)) return;
    printf("%s calls the library's %s: write this TODO yourself (the library's version is "
           "there to compare with once your checks pass)\n", info.dli_sname, library_fn);
    fflush(stdout);
    _exit(CHECK_FAIL);
}

#define WRAP_VOID(name, params, args)                                                       \
    void __real_##name params;                                                              \
    void __wrap_##name params;                                                              \
    void __wrap_##name params {                                                             \
        refuse_from_lesson(#name, __builtin_return_address(0));                             \
        __real_##name args;                                                                 \
    }
#define WRAP_VALUE(type, name, params, args)                                                \
    type __real_##name params;                                                              \
    type __wrap_##name params;                                                              \
    type __wrap_##name params {                                                             \
        refuse_from_lesson(#name, __builtin_return_address(0));                             \
        return __real_##name args;                                                          \
    }

#endif
