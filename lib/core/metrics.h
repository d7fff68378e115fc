/* Metrics as JSON lines: one object per line, easy to plot or to read back.
 *
 *   MetricsFile *m = metrics_open(path);      // NULL path: no file, calls do nothing
 *   metrics_begin(m);
 *   metrics_int(m, "epoch", 1);
 *   metrics_num(m, "train_loss", 0.53);
 *   metrics_end(m);                           // writes {"epoch": 1, "train_loss": 0.53}
 *   metrics_close(m);
 */
#ifndef CORE_METRICS_H
#define CORE_METRICS_H

typedef struct MetricsFile MetricsFile;

MetricsFile *metrics_open(const char *path);
/* For a run resumed at first_epoch: keeps the file's lines of earlier epochs (lines
 * whose "epoch" is smaller; a line without one is kept) and appends after them, so a
 * requeued job's metrics cover the whole run, each epoch once. A missing file starts
 * empty, like metrics_open. */
MetricsFile *metrics_open_resumed(const char *path, long long first_epoch);
void metrics_begin(MetricsFile *m);
void metrics_int(MetricsFile *m, const char *key, long long value);
void metrics_num(MetricsFile *m, const char *key, double value);
void metrics_str(MetricsFile *m, const char *key, const char *value);
void metrics_end(MetricsFile *m);
/* A number the next metrics_end adds to its object, then forgets: a program's own key
 * on a line that another function writes (lesson 06's tokens_per_s). key must stay
 * valid until then (a string literal); up to METRICS_ALSO_MAX of them. A key queued
 * again before that line replaces its value (a line that was never written, say by a
 * participant's report that skips it, leaves no pile behind). */
enum { METRICS_ALSO_MAX = 4 };
void metrics_also_num(MetricsFile *m, const char *key, double value);
void metrics_close(MetricsFile *m);

#endif
