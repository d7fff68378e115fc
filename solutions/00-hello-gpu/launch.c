/* TODO 0.1 and 0.2: launch arithmetic and bandwidth, plain C on the host. */
#include "lesson.h"

int lesson_blocks(int64_t n, int threads) {
    return (int)((n + threads - 1) / threads); /* round up: the last block is partial */
}

double lesson_peak_bandwidth_gbs(int memory_clock_khz, int bus_width_bits) {
    /* double data rate: two transfers per clock, each bus_width_bits / 8 bytes wide */
    return 2.0 * memory_clock_khz * 1e3 * (bus_width_bits / 8.0) / 1e9;
}

double lesson_bandwidth_gbs(size_t bytes, double seconds) {
    return (double)bytes / seconds / 1e9;
}
