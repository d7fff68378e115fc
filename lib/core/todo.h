/* What a lesson's unfinished TODO does when it is reached: it says which TODO and
 * where its explanation is, then stops (exit status 3), instead of returning
 * garbage that would surface later as a mysterious wrong number. */
#ifndef CORE_TODO_H
#define CORE_TODO_H

#define EXIT_TODO 3

__attribute__((noreturn)) void todo_stop(const char *todo, const char *lesson_dir, const char *function);

#endif
