#include <string.h>

#include "lesson.h"

/* --roofline: roofline_run.c; --precision-demo, --compare-precision: precision_run.c;
 * anything else: the profiled run (program.c). */
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--roofline") == 0) return roofline_main(argc, argv);
        if (strcmp(argv[i], "--precision-demo") == 0 || strcmp(argv[i], "--compare-precision") == 0)
            return precision_main(argc, argv);
    }
    return lesson_main(argc, argv);
}
