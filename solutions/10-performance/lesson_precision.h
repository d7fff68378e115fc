/* Placeholder until lesson 10's mixed-precision part lands (TODOs 10.7-10.10): its own
 * file replaces this one. */
#ifndef LESSON10_PRECISION_H
#define LESSON10_PRECISION_H

/* --precision-demo and --compare-precision (precision_run.c) */
int precision_main(int argc, char **argv);

#endif
