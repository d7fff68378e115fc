/* Printing for training programs.
 *
 * print0 prints on rank 0 only, so N ranks do not print N copies of each line.
 * progress() draws a self-overwriting status line when stdout is a terminal and
 * prints nothing in a batch job's log file, where such lines would be noise. */
#ifndef CORE_LOG_H
#define CORE_LOG_H

#include <stdbool.h>

void log_set_rank(int rank);
int log_rank(void);
void print0(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool stdout_is_terminal(void);
void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Off for ranks of a launched job: mpirun and srun hand each rank a terminal of their
 * own even when the job's output goes to a file, so isatty cannot tell. */
void progress_enable(bool on);
void progress_clear(void);

#endif
