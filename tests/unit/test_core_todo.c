/* Unit tests of lib/core/todo: todo_stop() exits with status 3 after the program's
 * earlier output, naming the TODO, the function and the lesson's README. */
#include <stdio.h>
#include <string.h>

#include "core/todo.h"
#include "framework/check.h"

static void body_todo(void *arg) {
    (void)arg;
    printf("before\n");
    todo_stop("1.2", "lessons/01-cpu-cnn", "maxpool_forward");
}

static int check_todo_stop(void) {
    ChildResult o;
    run_child(body_todo, NULL, &o);
    bool ok = expect_exit("todo_stop", &o, EXIT_TODO, "TODO 1.2", "maxpool_forward",
                          "lessons/01-cpu-cnn/README.md", (const char *)NULL);
    ok = ok && expect_true(EXIT_TODO == 3, "EXIT_TODO is %d, the framework expects 3", EXIT_TODO);
    /* stdout is flushed before the message, so "before" comes first */
    const char *b = strstr(o.out, "before"), *t = strstr(o.out, "TODO");
    ok = ok && expect_true(b && t && b < t, "the program's earlier output was lost or reordered");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: todo");
    check_run(NULL, "todo_stop: status 3, names the TODO and the README", check_todo_stop, 10);
    return check_end();
}
