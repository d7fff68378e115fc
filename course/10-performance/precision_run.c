/* Placeholder until lesson 10's mixed-precision part lands: its own file replaces this one. */
#include <stdio.h>

#include "lesson.h"

int precision_main(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "--precision-demo, --compare-precision: not yet\n");
    return 2;
}
