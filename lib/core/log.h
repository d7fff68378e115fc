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
/* Items per second for a progress line that counts `done` items (images, tokens):
 * measured from the first call of this count, whose items do not count; a call whose
 * done is not above the last one's starts a new count (the next epoch). 0 until the
 * count's second call. Rank 0 on a terminal shows it; elsewhere it only costs a clock
 * read.
 *   progress("  %d/%d images, %.0f images/s", n, total, progress_rate(n)); */
double progress_rate(double done);

#endif
