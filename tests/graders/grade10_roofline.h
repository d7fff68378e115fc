/* Placeholder until lesson 10's roofline part lands: its own file replaces this one
 * (the checks of TODOs 10.4-10.5, called by grade10.c). */
#ifndef GRADE10_ROOFLINE_H
#define GRADE10_ROOFLINE_H

static void grade10_roofline_checks(void) {}

#endif
