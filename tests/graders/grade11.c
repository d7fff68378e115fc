/* Grader of lesson 11. TODOs 11.1 to 11.5 are shell (the image's recipe, the binds,
 * the batch script): each check runs your file in bash, with stand-ins for make,
 * srun and ch-run that record what they were asked, so no image has to be built and no
 * container started (make check-image does that, with the solution's files). TODO
 * 11.6 is C. Run with `make check-lesson 11` (your code) or `make check-lesson 11
 * SOLUTION=1`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "framework/check.h"
#include "lesson.h"

#ifndef LESSON_PATH /* the lesson's directory, from the Makefile: lessons/... or solutions/... */
#define LESSON_PATH "lessons/11-containers"
#endif

/* Runs a bash script (set -u; your file sourced first where it says so); false when it
 * did not end with status 0, after printing what it said. */
static bool bash(const char *script, CommandResult *r, const char *what) {
    const char *argv[] = {"bash", "-c", script, NULL};
    run_command(argv, 30, r);
    char end[96];
    if (!r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) return true;
    printf("%s ended: %s. It said:\n%s", what, describe_end(r, end, sizeof end), r->out);
    if (strstr(r->out, "is not done yet")) printf("hint: a TODO it needs is not done yet (above)\n");
    return false;
}

/* Whether `word` is one of the lines of `lines` (one word per line). */
static bool has_word(const char *lines, const char *word) {
    const size_t n = strlen(word);
    for (const char *p = lines; (p = strstr(p, word)); p++)
        if ((p == lines || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0')) return true;
    return false;
}

/* ---------------------------------------------------------------- TODO 11.1-11.3 */

static int check_packages(void) {
    CommandResult r;
    if (!bash("set -u; . " LESSON_PATH "/image.conf; printf '%s\\n' $IMAGE_PACKAGES", &r,
              "sourcing image.conf"))
        return CHECK_FAIL;
    static const char *need[] = {"build-essential", "make", "pkg-config", "zlib1g-dev",
                                 "libopenblas-openmp-dev", "libopenmpi-dev", "openmpi-bin"};
    static const char *host_only[] = {"slurm-wlm", "slurm-client", "munge", "python3-torch", "pandoc",
                                      "chromium", "dataset-fashion-mnist", "gnuplot-nox", "curl"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!expect_true(has_word(r.out, need[i]), "IMAGE_PACKAGES lacks %s%s", need[i],
                         strstr(need[i], "mpi") ? " (lesson 06's ranks need Open MPI in the image: "
                                                  "its library to build, its programs to run)" : ""))
            return CHECK_FAIL;
    for (size_t i = 0; i < sizeof host_only / sizeof host_only[0]; i++)
        if (!expect_true(!has_word(r.out, host_only[i]), "IMAGE_PACKAGES has %s, which the image does "
                         "not need (data sets are bound from the host; Slurm, slides and PyTorch "
                         "stay outside)", host_only[i]))
            return CHECK_FAIL;
    return CHECK_PASS;
}

static int check_build_step(void) {
    CommandResult r;
    /* a stand-in make that prints its words, one per line */
    if (!bash("set -u; . " LESSON_PATH "/image.conf; make() { printf 'MAKE\\n'; printf '%s\\n' \"$@\"; };"
              " IMAGE_ARCH=zen7 IMAGE_JOBS=5 image_build", &r, "image_build (IMAGE_ARCH=zen7 IMAGE_JOBS=5)"))
        return CHECK_FAIL;
    static const char *targets[] = {"build/libcourse.a", "build/solutions/01-cpu-cnn/train",
                                    "build/solutions/01-cpu-cnn/grade", "build/lessons/01-cpu-cnn/train",
                                    "build/lessons/01-cpu-cnn/grade", "build/solutions/06-ddp/train",
                                    "build/lessons/06-ddp/train"};
    bool ok = expect_true(strstr(r.out, "MAKE\n") != NULL, "image_build did not run make; it said:\n%s", r.out) &&
              expect_true(has_word(r.out, "ARCH=zen7"), "make was not given ARCH=\"$IMAGE_ARCH\" (with "
                          "IMAGE_ARCH=zen7 it saw:\n%s): the image runs on the cluster's CPUs, not on "
                          "this machine's (-march=native)", r.out) &&
              expect_true(has_word(r.out, "-j5") || strstr(r.out, "-j\n5\n"), "make was not given "
                          "-j\"$IMAGE_JOBS\" (IMAGE_JOBS=5); it saw:\n%s", r.out);
    for (size_t i = 0; ok && i < sizeof targets / sizeof targets[0]; i++)
        ok = expect_true(has_word(r.out, targets[i]), "make was not asked for %s; it saw:\n%s", targets[i], r.out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_environment(void) {
    CommandResult r;
    if (!bash("set -u; . " LESSON_PATH "/image.conf; printf '%s\\n' \"${IMAGE_ENVIRONMENT[@]}\"", &r,
              "sourcing image.conf"))
        return CHECK_FAIL;
    static const char *need[] = {"LANG=C.UTF-8", "COURSE_ROOT=/opt/course", "ARCH=x86-64-v3",
                                 "OMPI_MCA_btl_vader_single_copy_mechanism=none"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!expect_true(has_word(r.out, need[i]), "IMAGE_ENVIRONMENT lacks the word %s; it is:\n%s", need[i], r.out))
            return CHECK_FAIL;
    for (const char *line = r.out; *line;) { /* each word KEY=VALUE, as /etc/environment wants */
        const size_t n = strcspn(line, "\n"), key = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789abcdefghijklmnopqrstuvwxyz");
        if (!expect_true(key > 0 && key < n && line[key] == '=', "IMAGE_ENVIRONMENT has \"%.*s\": each word "
                         "must be KEY=VALUE", (int)n, line))
            return CHECK_FAIL;
        line += n + (line[n] == '\n');
    }
    return CHECK_PASS;
}

/* ---------------------------------------------------------------- TODO 11.4 */

/* The binds of one runtime, one word per line, for a data path with a space in it. */
static bool binds_of(const char *runtime, CommandResult *r) {
    char script[512];
    snprintf(script, sizeof script, "set -u; . %s/binds.sh; container_binds %s '/srv/my data' /work/scratch "
             "&& printf '%%s\\n' \"${CONTAINER_BINDS[@]}\"", LESSON_PATH, runtime);
    char what[96];
    snprintf(what, sizeof what, "container_binds %s", runtime);
    return bash(script, r, what);
}

static int check_binds(void) {
    CommandResult r;
    /* charliecloud: -b (or --bind=) for each, a private /tmp, no home, no writable image */
    if (!binds_of("charliecloud", &r)) return CHECK_FAIL;
    bool ok = expect_true((strstr(r.out, "-b\n/srv/my data:/data\n") || strstr(r.out, "--bind=/srv/my data:/data\n")),
                          "charliecloud: no bind of the data directory at /data (-b \"$data:/data\"); "
                          "the words were:\n%s", r.out) &&
              expect_true((strstr(r.out, "-b\n/work/scratch:/scratch\n") || strstr(r.out, "--bind=/work/scratch:/scratch\n")),
                          "charliecloud: no bind of the scratch directory at /scratch; the words were:\n%s", r.out) &&
              expect_true(has_word(r.out, "-t") || has_word(r.out, "--private-tmp"), "charliecloud: the host's "
                          "/tmp is shared unless -t (a private /tmp); the words were:\n%s", r.out) &&
              expect_true(!has_word(r.out, "--home") && !has_word(r.out, "-w") && !has_word(r.out, "--write"),
                          "charliecloud: --home shows the home directory, -w makes the image writable: "
                          "neither; the words were:\n%s", r.out);
    if (!ok) return CHECK_FAIL;
    /* pyxis: one --container-mounts, data ro, scratch not; no home */
    if (!binds_of("pyxis", &r)) return CHECK_FAIL;
    const char *m = strstr(r.out, "--container-mounts=");
    char mounts[512] = "";
    if (m) snprintf(mounts, sizeof mounts, "%.*s", (int)strcspn(m, "\n"), m);
    ok = expect_true(m != NULL, "pyxis: no --container-mounts=...; the words were:\n%s", r.out) &&
         expect_true(strstr(mounts, "/srv/my data:/data:ro") != NULL, "pyxis: %s does not mount the data "
                     "read-only at /data (SRC:DST:ro)", mounts) &&
         expect_true(strstr(mounts, "/work/scratch:/scratch") != NULL && !strstr(mounts, "/scratch:ro"),
                     "pyxis: %s does not mount the scratch directory writable at /scratch", mounts) &&
         expect_true(has_word(r.out, "--no-container-mount-home"), "pyxis: without "
                     "--no-container-mount-home the home directory is mounted; the words were:\n%s", r.out);
    if (!ok) return CHECK_FAIL;
    /* apptainer: --contain (not --containall: the ranks need Slurm's environment) */
    if (!binds_of("apptainer", &r)) return CHECK_FAIL;
    ok = expect_true(!has_word(r.out, "--containall") && !has_word(r.out, "-C"), "apptainer: --containall "
                     "also empties the environment, and the ranks need Slurm's PMIx variables: --contain") &&
         expect_true(has_word(r.out, "--contain") || has_word(r.out, "-c"), "apptainer: without --contain the "
                     "home directory and /tmp of the host are there; the words were:\n%s", r.out) &&
         expect_true(strstr(r.out, "/srv/my data:/data:ro") != NULL, "apptainer: no --bind of the data "
                     "read-only at /data (SRC:DST:ro); the words were:\n%s", r.out) &&
         expect_true(strstr(r.out, "/work/scratch:/scratch") != NULL && !strstr(r.out, "/scratch:ro"),
                     "apptainer: no writable bind of the scratch at /scratch; the words were:\n%s", r.out);
    if (!ok) return CHECK_FAIL;
    const char *argv[] = {"bash", "-c", ". " LESSON_PATH "/binds.sh; container_binds docker /a /b", NULL};
    run_command(argv, 30, &r);
    return expect_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0 && strstr(r.out, "docker"),
                       "container_binds docker (no such runtime here) must fail with a message naming it; "
                       "it said:\n%s", r.out) ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 11.5 */

static bool write_script(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return expect_true(false, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return chmod(path, 0755) == 0;
}

/* Runs the job script as Slurm would, with stand-ins for srun (records its words, one
 * call per line) and the image; the second srun call is lesson 06's. */
static bool run_job(const char *dir, const char *runtime, char *calls, size_t cap) {
    char bin[600], path[1400], log[700], text[900], build[700], image[700], cwd[1024], script[1200];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    mkdir(bin, 0755);
    snprintf(log, sizeof log, "%s/srun.log", dir);
    snprintf(text, sizeof text, "#!/bin/sh\necho \"srun $*\" >> '%s'\n", log);
    snprintf(path, sizeof path, "%s/srun", bin);
    if (!write_script(path, text)) return false;
    snprintf(build, sizeof build, "%s/build", dir); /* the lesson's program only has to exist */
    make_dirs(build, "lessons/11-containers"), make_dirs(build, "solutions/11-containers");
    snprintf(path, sizeof path, "%s/lessons/11-containers/train", build);
    if (!write_script(path, "#!/bin/sh\n")) return false;
    snprintf(path, sizeof path, "%s/solutions/11-containers/train", build);
    if (!write_script(path, "#!/bin/sh\n")) return false;
    snprintf(image, sizeof image, "%s/image", dir);
    mkdir(image, 0755);
    if (!getcwd(cwd, sizeof cwd)) return false;
    snprintf(script, sizeof script, "%s/%s/containers.sbatch", cwd, LESSON_PATH);
    char env_path[4096];
    snprintf(env_path, sizeof env_path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin");
    setenv("PATH", env_path, 1);
    setenv("SLURM_JOB_ID", "4242", 1), setenv("SLURM_NTASKS", "2", 1), setenv("SLURM_CPUS_PER_TASK", "3", 1);
    setenv("SLURM_SUBMIT_DIR", cwd, 1), setenv("COURSE_SITE", "generic", 1);
    setenv("COURSE_BUILD", build, 1), setenv("COURSE_SCRATCH_DIR", dir, 1);
    setenv("COURSE_CONTAINER_RUNTIME", runtime, 1), setenv("COURSE_IMAGE", image, 1);
    char data[700];
    snprintf(data, sizeof data, "%s/data", dir);
    mkdir(data, 0755);
    setenv("COURSE_DATA_DIR", data, 1), setenv("COURSE_DEVICE", "cpu", 1);
    setenv("SOLUTION", strncmp(LESSON_PATH, "solutions", 9) == 0 ? "1" : "0", 1);
    unlink(log);
    const char *argv[] = {"bash", script, NULL};
    CommandResult r;
    run_command(argv, 30, &r);
    char end[96];
    uint8_t *bytes = NULL;
    size_t len = 0;
    char msg[FS_MSG_MAX];
    const bool logged = fs_read_file(log, 1 << 16, &bytes, &len, msg, sizeof msg) == 0;
    snprintf(calls, cap, "%s", logged ? (char *)bytes : "");
    free(bytes);
    return expect_true(!r.timed_out && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0 && logged,
                       "the job script (%s) ended: %s. It said:\n%s%s", runtime, describe_end(&r, end, sizeof end),
                       r.out, strstr(r.out, "TODO 11.4") ? "hint: it needs TODO 11.4 (binds.sh) first\n" : "");
}

static int body_job(const char *dir) {
    static char calls[1 << 16];
    if (!run_job(dir, "charliecloud", calls, sizeof calls)) return CHECK_FAIL;
    const char *second = strchr(calls, '\n');
    second = second ? second + 1 : "";
    bool ok = expect_true(*second != '\0', "srun was called once (lesson 01); lesson 06's launch line "
                          "is missing. srun saw:\n%s", calls) &&
              expect_true(strstr(second, "--mpi=pmix") != NULL, "lesson 06's srun has no --mpi=pmix (the "
                          "ranks find each other through Slurm's PMIx): use \"${JOB_LAUNCH[@]}\". It saw:\n%s", second) &&
              expect_true(strstr(second, " ch-run --set-env") != NULL && strstr(second, "/data:/data "),
                          "lesson 06's srun does not start ch-run with the binds: put \"${CONTAINER_RUN[@]}\" "
                          "before the program. It saw:\n%s", second) &&
              expect_true(strstr(second, " -- /opt/course/build/solutions/06-ddp/train ") != NULL,
                          "lesson 06's program must be the image's, /opt/course/build/solutions/06-ddp/train, "
                          "after ch-run's --. srun saw:\n%s", second) &&
              expect_true(strstr(second, "--ranks 2") && strstr(second, "--threads 3"), "lesson 06 needs --ranks "
                          "\"${SLURM_NTASKS:-1}\" and --threads \"$threads\"; srun saw:\n%s", second) &&
              expect_true(strstr(second, "--checkpoint-dir /scratch/checkpoints-4242") != NULL, "lesson 06 "
                          "must write its checkpoints under /scratch (the bound scratch); srun saw:\n%s", second);
    if (!ok) return CHECK_FAIL;
    if (!run_job(dir, "pyxis", calls, sizeof calls)) return CHECK_FAIL;
    second = strchr(calls, '\n');
    second = second ? second + 1 : "";
    return expect_true(strstr(second, "--container-image=") && strstr(second, "--container-mounts=") &&
                       !strstr(second, "ch-run"), "with Pyxis, srun itself takes the container: "
                       "\"${CONTAINER_SRUN[@]}\" on lesson 06's line. srun saw:\n%s", second)
               ? CHECK_PASS : CHECK_FAIL;
}
static int check_job(void) { return with_tmpdir("grade11", body_job); }

/* ---------------------------------------------------------------- TODO 11.6 */

static int check_find_digest(void) {
    static const struct { const char *text; bool found; uint64_t digest; } cases[] = {
        {"epoch 1 ...\nparameter digest: 00ff00ff12345678\n", true, 0x00ff00ff12345678ull},
        {"parameter digest: 0000000000000001", true, 1},                          /* no newline at the end */
        {"parameter digest: 1111111111111111\nparameter digest: abcdefabcdef0123\n", true, 0xabcdefabcdef0123ull},
        {"rank 0 parameter digest: 1234567812345678\n", false, 0},                  /* not at a line's start */
        {"parameter digest: 12345\n", false, 0},                                    /* too short */
        {"parameter digest: 1234567812345678ff\n", false, 0},                       /* too long */
        {"the loss is 0.5\n", false, 0},
        {"", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t d = 42;
        const bool found = lesson_find_digest(cases[i].text, &d);
        if (!expect_true(found == cases[i].found && d == (found ? cases[i].digest : 42),
                         "lesson_find_digest(\"%s\") gave %s, %016llx; expected %s%s", cases[i].text,
                         found ? "true" : "false", (unsigned long long)d, cases[i].found ? "true, " : "false",
                         cases[i].found ? "the last digest line's number" : " (and the digest untouched)"))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static int check_compare(void) {
    const char *a = "parameter digest: 0123456789abcdef\n", *b = "parameter digest: 0123456789abcdee\n";
    uint64_t x = 0, y = 0;
    bool ok = expect_true(lesson_compare_digests(a, a, &x, &y) == DIGESTS_SAME && x == y && x == 0x0123456789abcdefull,
                          "two outputs with the same digest: not DIGESTS_SAME, or the digests not returned") &&
              expect_true(lesson_compare_digests(a, b, &x, &y) == DIGESTS_DIFFERENT && y == 0x0123456789abcdeeull,
                          "two different digests: not DIGESTS_DIFFERENT, or the second not returned");
    y = 7;
    ok = ok && expect_true(lesson_compare_digests("killed\n", a, &x, &y) == DIGESTS_MISSING && y == 0x0123456789abcdefull,
                           "no digest outside: not DIGESTS_MISSING, or the inside digest not looked for") &&
         expect_true(lesson_compare_digests(a, "", &x, &y) == DIGESTS_MISSING, "no digest inside: not DIGESTS_MISSING");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("lesson 11: containers");
    check_run("TODO 11.1", "the image's packages: build tools, OpenBLAS, zlib, Open MPI; nothing host-only", check_packages, 30);
    check_run("TODO 11.2", "the build step: make with the image's ARCH and jobs, lessons 01 and 06", check_build_step, 30);
    check_run("TODO 11.3", "the environment: ARCH, Open MPI's single copy off, KEY=VALUE words", check_environment, 30);
    check_run("TODO 11.4", "binds: data read-only at /data, scratch at /scratch, no home (ch-run, Pyxis, Apptainer)", check_binds, 60);
    check_run("TODO 11.5", "job script: lesson 06 on 2 ranks through srun --mpi=pmix into the container", check_job, 60);
    check_run("TODO 11.6", "the parameter digest found in a program's output", check_find_digest, 10);
    check_run("TODO 11.6", "inside and outside compared: same, different, missing", check_compare, 10);
    return check_end();
}
