/* Placeholder until lesson 10's roofline part lands: its own file replaces this one. */
#include <stdio.h>

#include "lesson.h"

int roofline_main(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "--roofline: not yet\n");
    return 2;
}
