/* TODO 0.1 and 0.2: launch arithmetic and bandwidth, plain C on the host. */
#include "lesson.h"

int lesson_blocks(int64_t n, int threads) {
    /* TODO 0.1: a grid of blocks, each of `threads` threads, must have at least one
     * thread per element. n / threads rounds down and loses the last, partial block
     * whenever n is not a multiple of threads: round up instead, in integers. */
    TODO_STOP("0.1");
}

double lesson_peak_bandwidth_gbs(int memory_clock_khz, int bus_width_bits) {
    /* TODO 0.2: transfers per second times bytes per transfer, in GB/s (1e9 B/s).
     * The clock is in kHz; the memory moves data twice per clock (double data
     * rate); one transfer moves bus_width_bits / 8 bytes. */
    TODO_STOP("0.2");
}

double lesson_bandwidth_gbs(size_t bytes, double seconds) {
    /* TODO 0.2: bytes moved per second, in GB/s (1e9 bytes per second). */
    TODO_STOP("0.2");
}
