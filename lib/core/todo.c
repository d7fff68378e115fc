#include "todo.h"

#include <stdio.h>
#include <stdlib.h>

void todo_stop(const char *todo, const char *lesson_dir, const char *function) {
    fflush(stdout);
    fprintf(stderr,
            "TODO %s is not implemented yet (%s): see %s/README.md, section \"TODO %s\"\n",
            todo, function, lesson_dir, todo);
    exit(EXIT_TODO);
}
