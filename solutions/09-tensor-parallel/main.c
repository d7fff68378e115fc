#include "lesson.h"

int main(int argc, char **argv) { return lesson_main(argc, argv); }
