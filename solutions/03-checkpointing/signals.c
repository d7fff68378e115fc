/* TODO 3.4: the signal.
 *
 * Slurm can warn a job before its time limit (sbatch --signal=B:USR1@120: SIGUSR1,
 * 120 s before the end), and sends SIGTERM when it cancels or pre-empts a job,
 * some seconds before SIGKILL. A handler may run between any two instructions of
 * the training step, so it must not write a checkpoint itself (nearly nothing is
 * safe in a handler: no malloc, no printf, no half-updated model). It only notes
 * the request in a flag of type volatile sig_atomic_t, and the training loop looks
 * at the flag between two steps, where the state is consistent (TODO 3.5). */
#include <string.h>

#include "lesson.h"

volatile sig_atomic_t lesson_stop_signal = 0;

static void on_stop(int sig) { lesson_stop_signal = sig; }

void lesson_install_stop_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* a read() or write() that the signal interrupts goes on */
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0 && sigaction(SIGTERM, &sa, NULL) == 0,
          "sigaction failed");
}
