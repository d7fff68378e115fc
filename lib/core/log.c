#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "timer.h"

static int g_rank = 0;
static bool g_progress_shown = false;
static bool g_progress_on = true;

void progress_enable(bool on) { g_progress_on = on; }

void log_set_rank(int rank) { g_rank = rank; }
int log_rank(void) { return g_rank; }

bool stdout_is_terminal(void) { return isatty(fileno(stdout)) == 1; }

void print0(const char *fmt, ...) {
    if (g_rank != 0) return;
    progress_clear();
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

void progress(const char *fmt, ...) {
    if (g_rank != 0 || !g_progress_on || !stdout_is_terminal()) return;
    va_list ap;
    va_start(ap, fmt);
    printf("\r\033[K");
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    g_progress_shown = true;
}

void progress_clear(void) {
    if (!g_progress_shown) return;
    printf("\r\033[K");
    fflush(stdout);
    g_progress_shown = false;
}

static double g_rate_t0, g_rate_first = -1, g_rate_last = -1;

double progress_rate(double done) {
    const double now = now_seconds();
    if (g_rate_first < 0 || !(done > g_rate_last)) { /* a new count */
        g_rate_t0 = now;
        g_rate_first = g_rate_last = done;
        return 0.0;
    }
    g_rate_last = done;
    return now > g_rate_t0 ? (done - g_rate_first) / (now - g_rate_t0) : 0.0;
}
