/* stop_note.h: two buffers, so that the handler never reads one half written; the
 * index of the complete one is switched after it is filled. */
#include "stop_note.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/check.h"

static char notes[2][512];
static volatile sig_atomic_t current = -1; /* the complete buffer; -1: none yet */

static void say(const char *s) {
    size_t n = strlen(s);
    while (n > 0) {
        const ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w, n -= (size_t)w;
    }
}

static void on_stop(int sig) {
    say(sig == SIGTERM ? "\nstopped by SIGTERM (mpirun, srun, scancel or the batch system)"
        : sig == SIGINT ? "\nstopped by SIGINT (Ctrl-C)"
                        : "\nstopped by SIGHUP (the terminal closed)");
    const int k = current;
    if (k >= 0) say(" "), say(notes[k]);
    say("\n");
    signal(sig, SIG_DFL); /* and end as the signal would have: the launcher sees it */
    raise(sig);
}

void stop_note_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGTERM, &sa, NULL) == 0 && sigaction(SIGINT, &sa, NULL) == 0 &&
              sigaction(SIGHUP, &sa, NULL) == 0,
          "sigaction failed");
}

void stop_note_set(const char *fmt, ...) {
    const int k = current == 0 ? 1 : 0; /* the buffer the handler is not reading */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(notes[k], sizeof notes[k], fmt, ap);
    va_end(ap);
    current = k;
}
