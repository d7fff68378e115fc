/* The ranks of one job must be started with the same options: a --batch-size that
 * differs ends in MPI's internals (a truncated message), an --lr that differs trains
 * each rank to other parameters without a word. Compared once, right after dist_init:
 *
 *   ArgSpec specs[] = {...};
 *   args_parse(argc, argv, specs, n, about);
 *   Dist *d = dist_init(...);
 *   static const char *const own[] = {"metrics", "threads", NULL};
 *   dist_check_options(d, specs, n, own);
 *
 * and --help printed once in a job of N ranks: dist_help_once before args_parse. */
#ifndef DIST_DIST_OPTIONS_H
#define DIST_DIST_OPTIONS_H

#include "core/args.h"
#include "dist/dist.h"

/* Every rank of d calls it with the same table: when an option's parsed value (a default
 * or given) differs between ranks, the job ends (exit status 1) with one message from
 * rank 0 naming the first such option and both values: "the ranks were started with
 * different options: --lr is 0.01 on rank 0 but 0.1 on rank 1". may_differ: the names
 * (without dashes) that each rank may set its own way (a file only rank 0 writes, the
 * threads of each rank), ending in NULL; NULL for none. One rank: nothing to compare. */
void dist_check_options(Dist *d, const ArgSpec *specs, int nspecs, const char *const *may_differ);

/* Call before args_parse: with --help (or -h) on the command line, every rank but the
 * launcher's rank 0 exits 0 at once, so that help is printed once, not once per rank. */
void dist_help_once(int argc, char **argv);

#endif
