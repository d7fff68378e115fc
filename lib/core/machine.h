/* What the machine can do at most, measured, on the threads a run uses: the float32
 * FMA peak (GFLOP/s) and the memory bandwidth of a STREAM triad (GB/s). Together they
 * are a roofline's two roofs (core/roofline.h); both take well under a second.
 *
 *   MachineRoof m = machine_measure(threads);   // "cpu", peak, bandwidth, ridge
 *
 * Measured on the run's thread count: a rank's share of a node, not the whole node. */
#ifndef CORE_MACHINE_H
#define CORE_MACHINE_H

#include <stdint.h>

/* FMA peak: each thread runs 12 independent fused multiply-add chains on full vector
 * registers (the width the build's -march gives), so the result is the rate the FMA
 * units reach when nothing waits for memory; best of 3 (about 0.1 s). GFLOP/s, an FMA
 * counted as 2 FLOP. */
double machine_fma_peak_gflops(int threads);

/* The peak a share is taken of, for work timed between two measurements: `before`
 * (machine_fma_peak_gflops before the work) or the one after it, whichever is higher (on
 * a shared machine a disturbed measurement understates the peak and overstates the share
 * of it). Also measures one core's peak into *one_core, and warns on stderr where the
 * peak on `threads` is under 0.6 x threads x one core's: cores were taken while it was
 * measured, and the share is not meaningful (0.6, not 1: all-core clocks run lower than
 * one core's on real machines too). */
double machine_settle_peak_gflops(int threads, double before, double *one_core);

/* STREAM's triad a[i] = b[i] + s c[i] on float32 arrays of n elements, split over
 * `threads` in equal static pieces (the same pieces that first touched the arrays). */
void machine_triad(float *a, const float *b, const float *c, float s, int64_t n, int threads);

/* The size of each triad array for a bandwidth that is memory's, not a cache's: 4 x the
 * last-level cache (sysfs; 32 MiB if unknown), at least 32 MiB, at most 256 MiB (the
 * cap keeps the measurement under a second on a small machine; on a node with more
 * cache than that, some of it is still cached and the bandwidth reads high). */
int64_t machine_triad_array_bytes(void);

/* Memory bandwidth in GB/s (1e9 bytes a second): the triad on three arrays of
 * array_bytes each (0: machine_triad_array_bytes()), first touched by the threads that
 * run it, best of 5. Bytes counted as STREAM counts them, 12 an element (read b and c,
 * write a); a cache that reads a line before writing it (write-allocate) moves 16, so
 * the memory does 4/3 of this number. */
double machine_triad_gbs(int threads, int64_t array_bytes);

typedef struct {
    char device[16];     /* "cpu", or "cuda" (filled by the caller that measured a GPU) */
    int threads;         /* the threads both were measured on (CPU) */
    double peak_gflops;  /* FLOP/s / 1e9 the arithmetic can reach */
    double bandwidth_gbs; /* bytes/s / 1e9 the memory can deliver */
} MachineRoof;

/* Both roofs of the CPU on `threads` threads: the FMA peak and the triad's bandwidth
 * (about 0.6 s on 2 cores). */
MachineRoof machine_measure(int threads);

/* The ridge point in FLOP per byte: peak / bandwidth. A layer that does fewer FLOP per
 * byte than this cannot reach the peak: memory is its limit. */
double machine_ridge(const MachineRoof *m);

#endif
