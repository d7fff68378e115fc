/* Lesson 03: train the simple CNN with checkpoints. The program is lesson_main in
 * train.c, so that the grader can run it too (in a child process of its own). */
#include "lesson.h"

int main(int argc, char **argv) { return lesson_main(argc, argv); }
