/* Unit tests of lib/dist and lib/parallel that need no second process to talk to: what
 * the launcher's environment says (Open MPI, srun, torchrun, a batch script alone),
 * Slurm node lists, the TCP rendezvous between forked processes, the single-process
 * backend, wrong launches, and how data-parallel training cuts the gradient buffer
 * into buckets. The checks with several ranks are in tests/dist/ (mpirun). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/check.h"
#include "core/timer.h"
#include "cuda/device.h"
#include "dist/dist.h"
#include "dist/dist_backend.h"
#include "dist/launcher.h"
#include "dist/rendezvous.h"
#include "framework/check.h"
#include "models/params.h"
#include "parallel/ddp.h"

/* Every variable a launcher sets, cleared, so each case starts from nothing. */
static void clear_launch_env(void) {
    static const char *vars[] = {
        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
        "OMPI_COMM_WORLD_LOCAL_SIZE", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID",
        "SLURM_STEP_NUM_NODES", "SLURM_NTASKS", "SLURM_JOB_NODELIST", "SLURM_STEP_NODELIST",
        "SLURM_JOB_ID", "PMIX_RANK", "PMI_RANK", "RANK", "WORLD_SIZE", "LOCAL_RANK",
        "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* ------------------------------------------------------------ the launcher */

static void body_launches(void *arg) {
    (void)arg;
    clear_launch_env();
    Launch l = launcher_read();
    printf("none: %s %d/%d mpi=%d\n", l.name, l.rank, l.world_size, l.by_mpi);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1), setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1), setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    l = launcher_read();
    printf("mpirun: %s %d/%d local %d/%d mpi=%d\n", l.name, l.rank, l.world_size, l.local_rank,
           l.local_size, l.by_mpi);
    clear_launch_env();
    /* a batch script alone: Slurm's job variables, but no job step */
    setenv("SLURM_NTASKS", "4", 1), setenv("SLURM_PROCID", "0", 1), setenv("SLURM_JOB_ID", "4711", 1);
    setenv("SLURM_JOB_NODELIST", "gpu[07-08]", 1);
    l = launcher_read();
    printf("batch: %s %d/%d master %s:%d\n", l.name, l.rank, l.world_size, l.master_addr,
           l.master_port);
    setenv("SLURM_STEP_NUM_TASKS", "8", 1), setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_LOCALID", "1", 1), setenv("SLURM_STEP_NUM_NODES", "2", 1);
    l = launcher_read();
    printf("srun: %s %d/%d local %d nodes %d mpi=%d\n", l.name, l.rank, l.world_size,
           l.local_rank, l.nodes, l.by_mpi);
    setenv("PMIX_RANK", "5", 1);
    l = launcher_read();
    printf("pmix: %s mpi=%d\n", l.name, l.by_mpi);
    clear_launch_env();
    setenv("RANK", "2", 1), setenv("WORLD_SIZE", "3", 1), setenv("LOCAL_RANK", "0", 1);
    setenv("MASTER_ADDR", "10.0.0.7", 1), setenv("MASTER_PORT", "12345", 1);
    l = launcher_read();
    printf("torchrun: %s %d/%d master %s:%d\n", l.name, l.rank, l.world_size, l.master_addr,
           l.master_port);
}

static int check_launches(void) {
    ChildResult r;
    run_child(body_launches, NULL, &r);
    return expect_exit("launcher_read", &r, 0, "none: none 0/1 mpi=0",
                       "mpirun: mpirun 3/4 local 1/2 mpi=1", "batch: none 0/1 master gpu07:30211",
                       "srun: srun 5/8 local 1 nodes 2 mpi=0", "pmix: srun --mpi=pmix mpi=1",
                       "torchrun: torchrun-style 2/3 master 10.0.0.7:12345", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
}

static void body_rank_too_big(void *arg) {
    (void)arg;
    clear_launch_env();
    setenv("RANK", "3", 1), setenv("WORLD_SIZE", "3", 1);
    launcher_read();
}

static void body_rank_not_number(void *arg) {
    (void)arg;
    clear_launch_env();
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1), setenv("OMPI_COMM_WORLD_RANK", "one", 1);
    launcher_read();
}

static void body_rank_alone(void *arg) {
    (void)arg;
    clear_launch_env();
    setenv("RANK", "0", 1);
    launcher_read();
}

static int check_launch_errors(void) {
    ChildResult r;
    run_child(body_rank_too_big, NULL, &r);
    bool ok = expect_exit("RANK=3 of WORLD_SIZE=3", &r, 1, "RANK=\"3\"", "0 to 2", (const char *)NULL);
    run_child(body_rank_not_number, NULL, &r);
    ok = ok && expect_exit("a rank that is not a number", &r, 1, "OMPI_COMM_WORLD_RANK", (const char *)NULL);
    run_child(body_rank_alone, NULL, &r);
    ok = ok && expect_exit("RANK without WORLD_SIZE", &r, 1, "RANK and WORLD_SIZE", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_first_node(void) {
    static const char *cases[][2] = {
        {"node17", "node17"},           {"a1,b2", "a1"},
        {"gpu[003-008,011]", "gpu003"}, {"gpu[003-008,011],cpu01", "gpu003"},
        {"x[7]", "x7"},                 {"jwb[0001-0004]-ib", "jwb0001-ib"},
    };
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof cases / sizeof cases[0]; i++) {
        char out[64] = "";
        ok = expect_true(launcher_first_node(cases[i][0], out, sizeof out) &&
                             strcmp(out, cases[i][1]) == 0,
                         "first node of \"%s\" is \"%s\", expected \"%s\"", cases[i][0], out,
                         cases[i][1]);
    }
    char out[64];
    ok = ok && expect_true(!launcher_first_node("gpu[03", out, sizeof out) &&
                               !launcher_first_node("", out, sizeof out) &&
                               !launcher_first_node("gpu[x]", out, sizeof out),
                           "a malformed node list was accepted");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ rendezvous */

/* A port for this test only: from the pid, above the usual ranges. */
static int test_port(void) { return 40000 + (int)(getpid() % 20000); }

static int check_rendezvous(void) {
    const int world = 3, port = test_port();
    char blob[128];
    for (int i = 0; i < 128; i++) blob[i] = (char)(i * 7 + 1);
    pid_t kids[2];
    for (int r = 1; r < world; r++) {
        kids[r - 1] = fork();
        if (kids[r - 1] == 0) {
            char got[128] = {0}, why[256];
            bool ok = rendezvous_share("127.0.0.1", port, r, world, got, sizeof got, 10, why,
                                       sizeof why);
            _exit(ok && memcmp(got, blob, sizeof got) == 0 ? 0 : 1);
        }
    }
    char why[256];
    bool ok = expect_true(rendezvous_share("127.0.0.1", port, 0, world, blob, sizeof blob, 10,
                                           why, sizeof why), "rank 0: %s", why);
    for (int k = 0; k < 2; k++) {
        int status = -1;
        waitpid(kids[k], &status, 0);
        ok = expect_true(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                         "rank %d did not receive the blob intact", k + 1) && ok;
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Rank 2 never comes: rank 0 gives up after its timeout and names it. */
static int check_rendezvous_missing(void) {
    const int port = test_port() + 1;
    pid_t kid = fork();
    if (kid == 0) {
        char got[16], why[256];
        _exit(rendezvous_share("localhost", port, 1, 3, got, sizeof got, 5, why, sizeof why) ? 0 : 1);
    }
    char blob[16] = "id", why[256];
    double t0 = now_seconds();
    bool shared = rendezvous_share("127.0.0.1", port, 0, 3, blob, sizeof blob, 1.5, why, sizeof why);
    double took = now_seconds() - t0;
    waitpid(kid, NULL, 0);
    bool ok = expect_true(!shared && strstr(why, "never connected: 2") && !strstr(why, " 1"),
                          "rank 0 said: %s", shared ? "(shared)" : why) &&
              expect_true(took > 1.0 && took < 5.0, "rank 0 waited %.1f s for a 1.5 s timeout", took);
    /* a client whose rank 0 never starts gives up too */
    char got[16];
    ok = ok && expect_true(!rendezvous_share("127.0.0.1", port + 1, 1, 2, got, sizeof got, 0.5, why,
                                             sizeof why) && strstr(why, "rank 1 could not get"),
                           "a client without a server: %s", why);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ the single backend */

static int check_single(void) {
    clear_launch_env();
    Dist *d = dist_init(&(DistOptions){.backend = "auto"});
    bool ok = expect_true(d->world_size == 1 && d->rank == 0 && strcmp(d->backend, "single") == 0,
                          "no launcher: %s backend, rank %d of %d", d->backend, d->rank, d->world_size);
    Tensor t = tensor_zeros(1, 5), g = tensor_zeros(1, 5), s = tensor_zeros(1, 5);
    fill_uniform(t.data, 5, 1, -1, 1);
    Tensor before = tensor_to(&t, DEVICE_CPU);
    dist_broadcast(d, &t, 0);
    dist_all_reduce(d, &t, DIST_AVG);
    dist_all_reduce(d, &t, DIST_SUM);
    dist_wait(d, dist_all_reduce_start(d, &t, DIST_MAX));
    dist_all_gather(d, &g, &t);
    dist_reduce_scatter(d, &s, &t, DIST_SUM);
    dist_barrier(d);
    ok = ok && expect_close("after the collectives of one rank", t.data, before.data, 5, 0, 0) &&
         expect_close("all-gather of one rank", g.data, before.data, 5, 0, 0) &&
         expect_close("reduce-scatter of one rank", s.data, before.data, 5, 0, 0) &&
         expect_true(dist_sum_double(d, 2.5) == 2.5, "sum of one double");
    dist_check_same(d, 42, "a value");
    char text[256];
    dist_describe(d, text, sizeof text);
    ok = ok && expect_true(strstr(text, "single backend, 1 rank on 1 node") != NULL, "%s", text);
    dist_finalize(d);
    tensor_free(&t), tensor_free(&g), tensor_free(&s), tensor_free(&before);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_send_alone(void *arg) {
    (void)arg;
    clear_launch_env();
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Tensor t = tensor_zeros(1, 3);
    dist_send(d, &t, 1);
}

static void body_nccl_on_cpu(void *arg) {
    (void)arg;
    clear_launch_env();
    dist_init(&(DistOptions){.backend = "nccl", .device = DEVICE_CPU});
}

static void body_single_but_two(void *arg) {
    (void)arg;
    clear_launch_env();
    setenv("RANK", "0", 1), setenv("WORLD_SIZE", "2", 1);
    dist_init(&(DistOptions){.backend = "single"});
}

static void body_torchrun_cpu(void *arg) {
    (void)arg;
    clear_launch_env();
    setenv("RANK", "1", 1), setenv("WORLD_SIZE", "2", 1);
    dist_init(&(DistOptions){.backend = "auto", .device = DEVICE_CPU});
}

static void body_expect_four(void *arg) {
    (void)arg;
    clear_launch_env();
    dist_init(&(DistOptions){.backend = "auto", .expect_world = 4});
}

/* GPU tensors on one rank: dist_init starts the GPU itself (check_gpu runs the
 * collectives on it). Lesson 07 on one GPU once made CUDA tensors with no GPU started. */
static void body_gpu_one_rank(void *arg) {
    (void)arg;
    clear_launch_env();
    Dist *d = dist_init(&(DistOptions){.backend = "auto", .device = DEVICE_CUDA});
    printf("%s backend, tensors on %s\n", d->backend, device_name(d->device));
    exit(d->device == DEVICE_CUDA && cuda_current_device() >= 0 ? 0 : 3);
}

/* Whether this machine has a GPU, asked in a child: CUDA does not survive fork. */
static void body_gpu_probe(void *arg) {
    (void)arg;
    char why[512];
    exit(cuda_init(why, sizeof why) ? 0 : 1);
}

static void body_mpi_for_gpu(void *arg) {
    (void)arg;
    clear_launch_env();
    dist_init(&(DistOptions){.backend = "mpi", .device = DEVICE_CUDA});
}

#ifndef HAVE_NCCL
static void body_gpus_without_nccl(void *arg) {
    (void)arg;
    clear_launch_env();
    setenv("RANK", "0", 1), setenv("WORLD_SIZE", "2", 1);
    dist_init(&(DistOptions){.backend = "auto", .device = DEVICE_CUDA});
}
#endif

static void body_unknown(void *arg) {
    (void)arg;
    clear_launch_env();
    dist_init(&(DistOptions){.backend = "gloo"});
}

/* The backend for each launch and device that is not an error: GPU tensors take NCCL
 * where it is built, on any number of ranks and whoever launched them (mpirun -n 1 with
 * --device cuda once took MPI), else the single backend on one rank. */
static int check_backend_choice(void) {
#ifdef HAVE_NCCL
    const char *gpu = "nccl";
#else
    const char *gpu = "single";
#endif
#ifdef HAVE_MPI
    const char *mpi = "mpi";
#else
    const char *mpi = "single";
#endif
    const struct {
        const char *asked;
        int world;
        bool by_mpi;
        Device device;
        const char *want;
    } cases[] = {
        {"auto", 1, false, DEVICE_CPU, "single"}, {"auto", 1, true, DEVICE_CPU, mpi},
        {"auto", 1, false, DEVICE_CUDA, gpu},     {"auto", 1, true, DEVICE_CUDA, gpu},
        {"single", 1, false, DEVICE_CUDA, "single"}, {"single", 1, true, DEVICE_CPU, "single"},
#ifdef HAVE_MPI
        {"auto", 2, true, DEVICE_CPU, "mpi"},     {"mpi", 1, false, DEVICE_CPU, "mpi"},
#endif
#ifdef HAVE_NCCL
        {"auto", 2, true, DEVICE_CUDA, "nccl"},   {"auto", 2, false, DEVICE_CUDA, "nccl"},
        {"nccl", 1, false, DEVICE_CUDA, "nccl"},
#endif
    };
    bool ok = true;
    for (size_t i = 0; ok && i < sizeof cases / sizeof cases[0]; i++) {
        Launch l = {.world_size = cases[i].world, .by_mpi = cases[i].by_mpi, .name = "a test"};
        const char *got = dist_choose_backend(cases[i].asked, &l, cases[i].device);
        ok = expect_true(strcmp(got, cases[i].want) == 0,
                         "--dist %s, %d rank%s%s, %s tensors: the %s backend, expected %s",
                         cases[i].asked, cases[i].world, cases[i].world == 1 ? "" : "s",
                         cases[i].by_mpi ? " by MPI" : "", device_name(cases[i].device), got,
                         cases[i].want);
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_wrong_launches(void) {
    ChildResult r;
    run_child(body_send_alone, NULL, &r);
    bool ok = expect_exit("a send in a single-process job", &r, 2, "peer 1 from rank 0 of a communicator of 1 ranks", (const char *)NULL);
    run_child(body_nccl_on_cpu, NULL, &r);
    ok = ok && expect_exit("nccl for CPU tensors", &r, 1, "nccl", (const char *)NULL);
    run_child(body_single_but_two, NULL, &r);
    ok = ok && expect_exit("the single backend for 2 ranks", &r, 1, "started 2 ranks", (const char *)NULL);
    run_child(body_torchrun_cpu, NULL, &r);
#ifdef HAVE_MPI
    ok = ok && expect_exit("2 CPU ranks without MPI", &r, 1, "without MPI", "mpirun", (const char *)NULL);
#else /* a build without Open MPI says that, and how to get it */
    ok = ok && expect_exit("2 CPU ranks in a build without MPI", &r, 1, "this build has no MPI",
                           "sudo make deps", (const char *)NULL);
#endif
    ChildResult probe;
    run_child(body_gpu_probe, NULL, &probe);
    run_child(body_gpu_one_rank, NULL, &r);
    if (WIFEXITED(probe.status) && WEXITSTATUS(probe.status) == 0) /* a GPU node */
        ok = ok && expect_exit("GPU tensors on one rank", &r, 0, "tensors on cuda", (const char *)NULL);
    else /* no GPU here: the reason, before any tensor exists */
        ok = ok && expect_exit("GPU tensors on one rank, no GPU", &r, 1, "--device cuda:",
                               (const char *)NULL);
    run_child(body_mpi_for_gpu, NULL, &r);
#ifdef HAVE_MPI
    ok = ok && expect_exit("--dist mpi with GPU tensors", &r, 1, "moves host memory", "--dist nccl",
                           (const char *)NULL);
#else /* a build without MPI says that first */
    ok = ok && expect_exit("--dist mpi in a build without MPI", &r, 1, "not in this build",
                           (const char *)NULL);
#endif
#ifndef HAVE_NCCL
    run_child(body_gpus_without_nccl, NULL, &r);
    ok = ok && expect_exit("2 GPU ranks in a build without NCCL", &r, 1, "this build has no NCCL",
                           (const char *)NULL);
#endif
    run_child(body_expect_four, NULL, &r);
    ok = ok && expect_exit("1 rank where 4 were asked for", &r, 1, "1 rank but 4 were asked for",
                           (const char *)NULL);
    run_child(body_unknown, NULL, &r);
    ok = ok && expect_exit("an unknown backend", &r, 1, "unknown communication backend 'gloo'",
                           (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* ------------------------------------------------------------ data-parallel buckets */

/* Five parameters of 1000, 10, 3000, 10, 500 values; buckets of at most about 4,000
 * bytes (1,000 floats), filled from the last parameter backwards. */
static int check_ddp_buckets(void) {
    clear_launch_env();
    ParamList list = {0};
    static const int sizes[5] = {1000, 10, 3000, 10, 500};
    for (int i = 0; i < 5; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        params_add(&list, name, 1, &sizes[i]);
    }
    params_allocate(&list);
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Ddp ddp;
    ddp_init(&ddp, d, &list, 0.004, true);
    /* backwards: {p4 500, p3 10, p2 3000} closes over 1000; then {p1 10, p0 1000} */
    bool ok = expect_true(ddp.nbuckets == 2, "%d buckets, expected 2", ddp.nbuckets) &&
              expect_true(ddp.buckets[0].start == 1010 && ddp.buckets[0].count == 3510 &&
                              ddp.buckets[1].start == 0 && ddp.buckets[1].count == 1010,
                          "buckets [%lld, +%lld) and [%lld, +%lld)",
                          (long long)ddp.buckets[0].start, (long long)ddp.buckets[0].count,
                          (long long)ddp.buckets[1].start, (long long)ddp.buckets[1].count) &&
              expect_true(ddp.bucket_of[4] == 0 && ddp.bucket_of[2] == 0 && ddp.bucket_of[1] == 1,
                          "parameters in the wrong buckets");
    /* a backward reports p4..p2: bucket 0 starts at once, bucket 1 only after p1, p0 */
    for (int i = 4; i >= 2; i--) params_grad_ready(&list, list.items[i]);
    ok = ok && expect_true(ddp.buckets[0].request && !ddp.buckets[1].request,
                           "bucket 0 complete but not started, or bucket 1 started early");
    params_grad_ready(&list, list.items[1]);
    params_grad_ready(&list, list.items[0]);
    tensor_fill(&list.grads, 0.5f);
    ddp_finish_gradients(&ddp);
    ok = ok && expect_true(list.grads.data[0] == 0.5f && !ddp.buckets[0].request &&
                               ddp.buckets[0].waiting == 3 && ddp.buckets[1].waiting == 2,
                           "after ddp_finish_gradients: the average of one rank changed the "
                           "gradient, or the buckets were not reset for the next backward");
    ddp_free(&ddp);
    ok = ok && expect_true(list.listener_count == 0, "ddp_free left its listener in place");
    dist_finalize(d);
    params_free(&list);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static void body_twice(void *arg) {
    (void)arg;
    clear_launch_env();
    ParamList list = {0};
    params_add(&list, "w", 1, (int[]){8});
    params_allocate(&list);
    Dist *d = dist_init(&(DistOptions){.backend = "single"});
    Ddp ddp;
    ddp_init(&ddp, d, &list, 25, true);
    params_grad_ready(&list, list.items[0]);
    params_grad_ready(&list, list.items[0]);
}

static int check_ddp_misuse(void) {
    ChildResult r;
    run_child(body_twice, NULL, &r);
    return expect_exit("a gradient reported twice in one backward", &r, 2, "reported twice",
                       (const char *)NULL) ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("dist and parallel (one process)");
    check_run(NULL, "launcher: none, mpirun, a batch script alone, srun, srun --mpi=pmix, torchrun", check_launches, 10);
    check_run(NULL, "launcher: a rank out of range, not a number, RANK alone: exit 1", check_launch_errors, 10);
    check_run(NULL, "launcher: the first node of Slurm node lists", check_first_node, 10);
    check_run(NULL, "rendezvous: rank 0 hands 128 bytes to 2 forked ranks over TCP", check_rendezvous, 30);
    check_run(NULL, "rendezvous: a rank that never comes is named within the timeout", check_rendezvous_missing, 30);
    check_run(NULL, "single backend: every collective of one rank is the identity", check_single, 10);
    check_run(NULL, "the backend for each launch and device: NCCL for GPU tensors, also on one rank", check_backend_choice, 10);
    check_run(NULL, "wrong launches and backends: one clear message each", check_wrong_launches, 20);
    check_run(NULL, "DDP: buckets in reverse order, started as they fill up, reset", check_ddp_buckets, 10);
    check_run(NULL, "DDP: a gradient reported twice stops with status 2", check_ddp_misuse, 10);
    return check_end();
}
