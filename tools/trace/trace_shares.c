/* trace-shares FILE...: the shares of a step of each rank's trace file, computed by the
 * library in C (core/trace_shares.h), one line per file in nanoseconds:
 *   pid 0 steps 6 step_ns 123 compute_ns 100 comm_ns 10 data_ns 8 idle_ns 5 in_flight_ns 30 hidden_ns 20
 * tests/trace/run.sh compares them with tools/trace/trace_read.py's, to the ns. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/trace_load.h"
#include "core/trace_shares.h"

static void usage(FILE *f, const char *self) {
    fprintf(f, "usage: %s run.rank0.json [run.rank1.json ...]\n"
               "  the shares of a step of each rank's trace file (a program's --trace), one line a file,\n"
               "  in nanoseconds, computed by the library (lib/core/trace_shares.h)\n", self);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr, argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout, argv[0]);
            return 0;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0') { /* "./-x.json" names such a file */
            fprintf(stderr, "error: unknown option %s (trace-shares takes only trace files; --help)\n", argv[i]);
            return 2;
        }
    }
    for (int i = 1; i < argc; i++) {
        TraceFile t;
        char why[512];
        if (!trace_load(argv[i], &t, why, sizeof why)) {
            fprintf(stderr, "error: %s\n", why);
            return 1;
        }
        const StepShares s = trace_step_shares(&t, t.pid);
        const CommSplit c = trace_comm_split(&t, t.pid);
        printf("pid %d steps %" PRId64 " step_ns %" PRId64 " compute_ns %" PRId64 " comm_ns %" PRId64
               " data_ns %" PRId64 " idle_ns %" PRId64 " in_flight_ns %" PRId64 " hidden_ns %" PRId64 "\n",
               t.pid, s.steps, s.step_ns, s.compute_ns, s.comm_ns, s.data_ns, s.idle_ns, c.in_flight_ns,
               c.hidden_ns);
        trace_file_free(&t);
    }
    return 0;
}
