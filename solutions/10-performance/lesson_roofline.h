/* Placeholder until lesson 10's roofline part lands (TODOs 10.4-10.5): its own file
 * replaces this one. */
#ifndef LESSON10_ROOFLINE_H
#define LESSON10_ROOFLINE_H

/* --roofline (roofline_run.c) */
int roofline_main(int argc, char **argv);

#endif
