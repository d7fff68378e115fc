/* Measures the machine's single-precision FMA peak: each thread runs many
 * independent fused multiply-add chains on full vector registers, so the result
 * is the rate the FMA units reach when nothing waits for memory. */
#ifndef BENCH_PEAK_FLOPS_H
#define BENCH_PEAK_FLOPS_H

double measure_peak_gflops(int threads);

/* The peak a share is taken of, for work timed between two measurements: `before`
 * (measure_peak_gflops before the work) or the one after it, whichever is higher (on a
 * shared machine a disturbed measurement understates the peak and overstates the share
 * of it). Also measures one core's peak into *one_core, and warns on stderr where the
 * peak on `threads` is under 0.6 x threads x one core's: cores were taken while it was
 * measured, and the share is not meaningful (0.6, not 1: all-core clocks run lower than
 * one core's on real machines too). */
double settle_peak_gflops(int threads, double before, double *one_core);

#endif
