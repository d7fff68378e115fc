/* Lesson 00: hello, GPU.
 *
 *   hello [--size-mb 256] [--repeats 5] [--device auto|cuda|cpu]
 *
 * 1. lists the visible GPUs: name, memory, compute capability, multiprocessors;
 * 2. times copies host->device, device->host and device->device against the
 *    memory's peak bandwidth;
 * 3. adds two vectors with your first kernel and checks the sum on the CPU.
 * Without a GPU (or with --device cpu) it says why and runs the CPU part only; with
 * --device cuda a missing GPU is an error (exit 1), as in the later lessons. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/check.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "lesson.h"

static void list_devices(int count) {
    for (int d = 0; d < count; d++) {
        CudaDeviceInfo g;
        cuda_device_info(d, &g);
        printf("GPU %d: %s, %.1f GiB, compute capability %d.%d, %d multiprocessors",
               d, g.name, g.total_bytes / 1073741824.0, g.major, g.minor, g.multiprocessors);
        if (g.memory_clock_khz && g.bus_width_bits)
            printf(", memory %d MHz x %d bit = %.0f GB/s peak", g.memory_clock_khz / 1000,
                   g.bus_width_bits, lesson_peak_bandwidth_gbs(g.memory_clock_khz, g.bus_width_bits));
        printf("%s\n", d == cuda_current_device() ? "  <- this process" : "");
    }
}

/* The CPU part: the same vector add, and how fast the host copies memory. */
static void cpu_part(float *c, const float *a, const float *b, int n, int repeats) {
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = now_seconds();
        memcpy(c, a, (size_t)n * sizeof(float));
        double s = now_seconds() - t0;
        best = s < best ? s : best;
    }
    /* a copy reads and writes every byte: 2 x bytes move through memory */
    printf("host memcpy of %.0f MB: %.2f ms, %.1f GB/s (read + write)\n", n * 4 / 1e6, best * 1e3,
           lesson_bandwidth_gbs(2 * (size_t)n * sizeof(float), best));
    double t0 = now_seconds();
    for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
    double s = now_seconds() - t0;
    printf("vector add on the CPU (1 core): %d elements in %.2f ms\n", n, s * 1e3);
}

#ifdef HAVE_CUDA
static int gpu_part(float *c, const float *a, const float *b, int n, int repeats) {
    CudaDeviceInfo g;
    cuda_device_info(cuda_current_device(), &g);
    double peak = g.memory_clock_khz && g.bus_width_bits
                      ? lesson_peak_bandwidth_gbs(g.memory_clock_khz, g.bus_width_bits) : 0;
    size_t bytes = (size_t)n * sizeof(float);
    printf("\ncopies of %.0f MB (best of %d)          time     GB/s", bytes / 1e6, repeats);
    printf("%s\n", peak > 0 ? "   of device peak" : "");
    for (int pinned = 0; pinned <= 1; pinned++) {
        CopyTimes t = time_copies(bytes, repeats, pinned);
        const char *mem = pinned ? "pinned  " : "pageable";
        printf("  host -> device (%s host)  %7.2f ms %8.1f\n", mem, t.h2d * 1e3, lesson_bandwidth_gbs(bytes, t.h2d));
        printf("  device -> host (%s host)  %7.2f ms %8.1f\n", mem, t.d2h * 1e3, lesson_bandwidth_gbs(bytes, t.d2h));
        if (pinned) {
            double d2d = lesson_bandwidth_gbs(2 * bytes, t.d2d); /* reads and writes each byte */
            printf("  device -> device (read + write)  %7.2f ms %8.1f", t.d2d * 1e3, d2d);
            if (peak > 0) printf("   %5.1f %%", 100 * d2d / peak);
            printf("\n");
        }
    }
    double t0 = now_seconds();
    lesson_vector_add_gpu(c, a, b, n);
    double s = now_seconds() - t0;
    int wrong = 0;
    for (int i = 0; i < n; i++) wrong += c[i] != a[i] + b[i];
    printf("\nvector add on the GPU: %d elements in %.2f ms (copies in and out included), "
           "%d wrong\n", n, s * 1e3, wrong);
    return wrong ? 1 : 0;
}
#endif

int main(int argc, char **argv) {
    int size_mb = 256, repeats = 5;
    const char *device = "auto";
    ArgSpec specs[] = {
        {"size-mb", ARG_INT, &size_mb, "size of each vector and copy, in MB", NULL},
        {"repeats", ARG_INT, &repeats, "timed repetitions (the best counts)", NULL},
        {"device", ARG_CHOICE, &device,
         "auto: the GPU part where there is a GPU; cuda: it must run (no GPU: an error); cpu: "
         "only the CPU part", "auto|cuda|cpu"},
    };
    args_parse(argc, argv, specs, ARRAY_LEN(specs),
               "Lesson 00: list the GPUs, time host/device copies, add two vectors on the GPU.");
    /* at most 8192: n below stays an int (2^31 - 1 floats is 8589 MB), as the kernel's
     * index and lesson_vector_add_gpu's n are */
    if (size_mb < 1 || size_mb > 8192) fatal("--size-mb must be 1 to 8192, got %d", size_mb);
    if (repeats < 1 || repeats > 1000) fatal("--repeats must be 1 to 1000, got %d", repeats);
    const int n = (int)((size_t)size_mb * 1000000 / sizeof(float));
    float *a = xmalloc((size_t)n * sizeof(float)), *b = xmalloc((size_t)n * sizeof(float));
    float *c = xcalloc((size_t)n, sizeof(float));
    for (int i = 0; i < n; i++) a[i] = (float)(i % 1000), b[i] = 0.5f * (float)(i % 7);

    char why[512] = "--device cpu";
    int count = strcmp(device, "cpu") != 0 ? cuda_device_count(why, sizeof why) : -1;
    if (count > 0 && !cuda_init(why, sizeof why)) count = -1;
    if (count <= 0 && strcmp(device, "cuda") == 0)
        fatal("--device cuda: %s (or run with --device cpu, or --device auto)", why);
    if (count > 0) list_devices(count);
    else printf("no GPU: %s\nrunning the CPU part only\n", why);
    cpu_part(c, a, b, n, repeats);
    int status = 0;
#ifdef HAVE_CUDA
    if (count > 0) status = gpu_part(c, a, b, n, repeats);
#endif
    xfree(a), xfree(b), xfree(c);
    return status;
}
