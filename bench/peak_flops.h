/* Measures the machine's single-precision FMA peak: each thread runs many
 * independent fused multiply-add chains on full vector registers, so the result
 * is the rate the FMA units reach when nothing waits for memory. */
#ifndef BENCH_PEAK_FLOPS_H
#define BENCH_PEAK_FLOPS_H

double measure_peak_gflops(int threads);

#endif
