#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

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
