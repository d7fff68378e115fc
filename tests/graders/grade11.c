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

/* Runs a bash script; whether it ended with status 0. */
static bool bash_ok(const char *script, CommandResult *r) {
    const char *argv[] = {"bash", "-c", script, NULL};
    run_command(argv, 30, r);
    return !r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

/* What a script that failed said, and how it ended. */
static void say_end(const CommandResult *r, const char *what) {
    char end[96];
    printf("%s ended: %s. It said:\n%s", what, describe_end(r, end, sizeof end), r->out);
    if (strstr(r->out, "is not done yet")) printf("hint: a TODO it needs is not done yet (above)\n");
}

/* Runs a bash script (set -u; your file sourced first where it says so); false when it
 * did not end with status 0, after printing what it said. */
static bool bash(const char *script, CommandResult *r, const char *what) {
    if (bash_ok(script, r)) return true;
    say_end(r, what);
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

/* The recipe sourced as make image sources it (tools/image/build.sh: IMAGE_ARCH and
 * IMAGE_JOBS set first), with a stand-in make that refuses: a make at the recipe's top
 * level would run on the machine that reads it, not in the image. */
#define SOURCE_RECIPE "set -u; IMAGE_ARCH=x86-64-v3 IMAGE_JOBS=2; " \
    "make() { echo \"MAKE AT THE TOP LEVEL: make $*\"; return 1; }; . " LESSON_PATH "/image.conf; unset -f make; "

/* A command at the recipe's top level (outside image_build): it ran when the file was
 * read, on the host. */
static bool nothing_at_top_level(const CommandResult *r) {
    return expect_true(!strstr(r->out, "MAKE AT THE TOP LEVEL"), "image.conf ran make when it was read "
                       "(sourced), not inside image_build: make image reads the recipe on the host, so "
                       "that build would run there, not in the image. Put the make line inside "
                       "image_build() { ... }. It said:\n%s", r->out);
}

static int check_packages(void) {
    CommandResult r;
    if (!bash(SOURCE_RECIPE "printf '%s\\n' $IMAGE_PACKAGES", &r,
              "sourcing image.conf"))
        return CHECK_FAIL;
    if (!nothing_at_top_level(&r)) return CHECK_FAIL;
    /* the list is split at white space (printf '%s\n' $IMAGE_PACKAGES, as make image does) */
    for (const char *w = r.out; *w; w += strcspn(w, "\n"), w += *w == '\n')
        if (!expect_true(memchr(w, ',', strcspn(w, "\n")) == NULL, "IMAGE_PACKAGES has \"%.*s\": packages are "
                         "separated by spaces (or new lines), not commas, as in the stub's list", (int)strcspn(w, "\n"), w))
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

/* The first word ARCH=... that make saw (one word per line), or NULL. */
static const char *arch_word(const char *words) {
    for (const char *p = words; *p; p += strcspn(p, "\n"), p += *p == '\n')
        if (strncmp(p, "ARCH=", 5) == 0) return p;
    return NULL;
}

/* make was given ARCH="$IMAGE_ARCH" (IMAGE_ARCH=zen7 here); the hint names what it got
 * instead: no ARCH (this machine's -march=native), a fixed one, or the variable's name
 * itself (single quotes). */
static bool arch_right(const char *words) {
    if (has_word(words, "ARCH=zen7")) return true;
    const char *a = arch_word(words);
    const int n = a ? (int)strcspn(a, "\n") : 0;
    if (!a)
        return expect_true(false, "make was not given ARCH=\"$IMAGE_ARCH\" (with IMAGE_ARCH=zen7 it saw:\n%s): the "
                           "image runs on the cluster's CPUs, not on this machine's (-march=native)", words);
    if (memchr(a, '$', (size_t)n))
        return expect_true(false, "make was given %.*s, the variable's name, not its value: single quotes keep the "
                           "variable from expanding: use double quotes, ARCH=\"$IMAGE_ARCH\" (make saw:\n%s)",
                           n, a, words);
    return expect_true(false, "make was given a fixed %.*s instead of ARCH=\"$IMAGE_ARCH\" (IMAGE_ARCH=zen7 here): "
                       "make image sets IMAGE_ARCH before it reads the recipe (x86-64-v3 unless told otherwise), and the "
                       "image is built for that; make saw:\n%s", n, a, words);
}

static int check_build_step(void) {
    CommandResult r;
    char cwd[1024];
    if (!getcwd(cwd, sizeof cwd)) return CHECK_FAIL;
    /* a stand-in make that prints where it ran (the physical path, as getcwd gives it:
     * the course may be reached through a symbolic link, and then $PWD is another name
     * for the same directory) and its words, one per line; image_build runs in the
     * course's directory (here: this one). cd and pushd are recorded, then done. */
    const bool ran = bash_ok(SOURCE_RECIPE "make() { printf 'MAKE\\n'; printf 'PWD=%s\\n' \"$(pwd -P)\"; "
                             "printf '%s\\n' \"$@\"; }; cd() { printf 'CD %s\\n' \"$*\"; builtin cd \"$@\"; }; "
                             "pushd() { printf 'CD %s\\n' \"$*\"; builtin pushd \"$@\"; }; "
                             "IMAGE_ARCH=zen7 IMAGE_JOBS=5 image_build", &r);
    const char *cd = strncmp(r.out, "CD ", 3) == 0 ? r.out : strstr(r.out, "\nCD ");
    if (cd) {
        cd += *cd == '\n';
        expect_true(false, "image_build ran cd %.*s: it runs in the course's copy in the image "
                    "(/opt/course) already, make image starts it there: make without cd (and without "
                    "make -C). It said:\n%s", (int)strcspn(cd + 3, "\n"), cd + 3, r.out);
        return CHECK_FAIL;
    }
    if (!ran) {
        say_end(&r, "image_build (IMAGE_ARCH=zen7 IMAGE_JOBS=5)");
        return CHECK_FAIL;
    }
    static const char *targets[] = {"build/libcourse.a", "build/solutions/01-cpu-cnn/train",
                                    "build/solutions/01-cpu-cnn/grade", "build/lessons/01-cpu-cnn/train",
                                    "build/lessons/01-cpu-cnn/grade", "build/solutions/06-ddp/train",
                                    "build/lessons/06-ddp/train"};
    char here[1100];
    snprintf(here, sizeof here, "PWD=%s", cwd);
    bool moved = false; /* make -C DIR, -CDIR, --directory[=]DIR */
    for (const char *p = r.out; *p; p += strcspn(p, "\n"), p += *p == '\n')
        moved = moved || strncmp(p, "-C", 2) == 0 || strncmp(p, "--directory", 11) == 0;
    bool ok = nothing_at_top_level(&r) &&
              expect_true(strstr(r.out, "MAKE\n") != NULL, "image_build did not run make; it said:\n%s", r.out) &&
              expect_true(has_word(r.out, here) && !moved, "image_build runs in the course's copy in the image "
                          "(/opt/course) already: make there, without cd or make -C (elsewhere it builds "
                          "another tree, or none). make saw (PWD: where it ran; %s expected):\n%s", cwd, r.out) &&
              arch_right(r.out) &&
              expect_true(has_word(r.out, "-j5") || strstr(r.out, "-j\n5\n"), "make was not given "
                          "-j\"$IMAGE_JOBS\" (IMAGE_JOBS=5); it saw:\n%s", r.out);
    for (size_t i = 0; ok && i < sizeof targets / sizeof targets[0]; i++)
        ok = expect_true(has_word(r.out, targets[i]), "make was not asked for %s; it saw:\n%s", targets[i], r.out);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

#define KEY_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789abcdefghijklmnopqrstuvwxyz"

/* Two mistakes of quoting in IMAGE_ENVIRONMENT's words (one per line), named before the
 * words are looked for: a $ still there ('ARCH=$IMAGE_ARCH': single quotes), and two
 * KEY=VALUEs in one word ("ARCH=$IMAGE_ARCH OMPI_...=none": quoted together). */
static bool environment_words_apart(const char *words) {
    for (const char *w = words; *w; w += strcspn(w, "\n"), w += *w == '\n') {
        const int n = (int)strcspn(w, "\n");
        const char *dollar = memchr(w, '$', (size_t)n);
        if (!expect_true(!dollar, "IMAGE_ENVIRONMENT has the word %.*s, with the variable's name in it, not its value: "
                         "single quotes keep the variable from expanding: use double quotes (ARCH=\"$IMAGE_ARCH\")",
                         n, w))
            return false;
        for (const char *sp = w; sp < w + n; sp++) {
            if (*sp != ' ' && *sp != '\t') continue;
            const size_t key = strspn(sp + 1, KEY_CHARS);
            if (!expect_true(!(key > 0 && sp + 1 + key < w + n && sp[1 + key] == '='), "IMAGE_ENVIRONMENT has the "
                             "word \"%.*s\": two variables quoted together in one word; they must be separate words, "
                             "one KEY=VALUE each (a line each, or quoted apart: ARCH=\"$IMAGE_ARCH\" "
                             "OMPI_MCA_btl_vader_single_copy_mechanism=none)", n, w))
                return false;
        }
    }
    return true;
}

static int check_environment(void) {
    CommandResult r;
    if (!bash(SOURCE_RECIPE "printf '%s\\n' \"${IMAGE_ENVIRONMENT[@]}\"", &r,
              "sourcing image.conf"))
        return CHECK_FAIL;
    /* IMAGE_ARCH=x86-64-v3 as make image sets it: ARCH="$IMAGE_ARCH" or ARCH=x86-64-v3 */
    static const struct { const char *word, *why; } need[] = {
        {"LANG=C.UTF-8", ""},
        {"COURSE_ROOT=/opt/course", ""},
        {"PMIX_MCA_gds=hash", " (the stub's: without it every rank prints \"PMIX ERROR ... "
                              "gds_ds12_lock_pthread.c\": PMIx in a container cannot lock the host "
                              "Slurm's shared store; keep it)"},
        {"ARCH=x86-64-v3", " (ARCH=\"$IMAGE_ARCH\" or ARCH=x86-64-v3: make in the image must use the "
                           "flags it was built with)"},
        {"OMPI_MCA_btl_vader_single_copy_mechanism=none", ""},
    };
    if (!nothing_at_top_level(&r)) return CHECK_FAIL;
    if (!environment_words_apart(r.out)) return CHECK_FAIL;
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!expect_true(has_word(r.out, need[i].word), "IMAGE_ENVIRONMENT lacks the word %s%s; it is:\n%s",
                         need[i].word, need[i].why, r.out))
            return CHECK_FAIL;
    for (const char *line = r.out; *line;) { /* each word KEY=VALUE, as /etc/environment wants */
        const size_t n = strcspn(line, "\n"), key = strspn(line, KEY_CHARS);
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

/* The data path, /srv/my data, has a space in it: an unquoted $data splits it into two
 * words, one ending in "/srv/my". */
static bool quoted(const char *runtime, const char *words) {
    bool split = false;
    for (const char *p = words; *p; p += strcspn(p, "\n"), p += *p == '\n') {
        const size_t n = strcspn(p, "\n");
        split = split || (n >= 7 && strncmp(p + n - 7, "/srv/my", 7) == 0);
    }
    return expect_true(!split, "%s: the data path (/srv/my data here, with a space in it) was split into two "
                       "words at the space: quote the expansions, \"$data:/data\" (the words were:\n%s)",
                       runtime, words);
}

/* One runtime's list of mounts, SRC:DST[:FLAGS] separated by commas (Pyxis's
 * --container-mounts, Apptainer's --bind): the data read-only at /data, the scratch
 * writable at /scratch, nothing else. Flags: Pyxis joins several with '+' (ro+rprivate),
 * Apptainer takes one (ro or rw). A '+' between two mounts is read by both runtimes as
 * part of one mount's flags (or path): the second mount is lost. */
static bool mounts_right(const char *runtime, const char *list, const char *words) {
    bool data = false, scratch = false;
    char item[600];
    for (const char *p = list; *p; p += *p == ',') {
        const size_t n = strcspn(p, ",");
        snprintf(item, sizeof item, "%.*s", (int)n, p);
        char whole[600];
        snprintf(whole, sizeof whole, "%s", item);
        p += n;
        char *dst = strchr(item, ':'), *flags = dst ? strchr(dst + 1, ':') : NULL;
        if (dst) *dst++ = '\0';
        if (flags) *flags++ = '\0';
        if (!expect_true(dst && *item && *dst && (!flags || !strchr(flags, ':')) && !strchr(item, '+') &&
                         !strchr(dst, '+') && (!flags || !strchr(flags, '/')) &&
                         (strcmp(runtime, "apptainer") != 0 || !flags || !strchr(flags, '+')),
                         "%s: \"%s\" is not one SRC:DST[:FLAGS] mount: the mounts are separated by commas "
                         "(SRC:DST:ro,SRC:DST)%s. The words were:\n%s", runtime, whole,
                         strcmp(runtime, "pyxis") == 0 ? "; '+' joins the flags of one mount (ro+rprivate), "
                         "never two mounts" : "; Apptainer has no '+' at all", words))
            return false;
        bool ro = false; /* flags: Pyxis's joined by '+', Apptainer's one word (ro or rw) */
        for (const char *f = flags ? flags : ""; *f; f += *f == '+') {
            const size_t k = strcspn(f, "+");
            ro = ro || (k == 2 && strncmp(f, "ro", 2) == 0);
            f += k;
        }
        if (strcmp(dst, "/data") == 0)
            data = expect_true(strcmp(item, "/srv/my data") == 0 && ro, "%s: /data must be the data directory "
                               "(/srv/my data here), read-only (SRC:/data:ro); the words were:\n%s", runtime, words);
        else if (strcmp(dst, "/scratch") == 0)
            scratch = expect_true(strcmp(item, "/work/scratch") == 0 && !ro, "%s: /scratch must be the scratch "
                                  "directory (/work/scratch here), writable (no ro); the words were:\n%s", runtime, words);
        else
            return expect_true(false, "%s: %s:%s is mounted too: only /data and /scratch; the words were:\n%s",
                               runtime, item, dst, words);
        if ((strcmp(dst, "/data") == 0 && !data) || (strcmp(dst, "/scratch") == 0 && !scratch)) return false;
    }
    return expect_true(data, "%s: no mount of the data read-only at /data (SRC:/data:ro); the words "
                       "were:\n%s", runtime, words) &&
           expect_true(scratch, "%s: no writable mount of the scratch directory at /scratch; the words "
                       "were:\n%s", runtime, words);
}

/* container_setup (given, in binds.sh): with COURSE_DEVICE=cuda each runtime's way to
 * the GPUs, without it none. The arrays and the NVIDIA_* variables, one per line. */
static bool setup_of(const char *runtime, const char *device, CommandResult *r) {
    char script[700], what[96];
    snprintf(script, sizeof script, "set -u; . %s/binds.sh; unset NVIDIA_VISIBLE_DEVICES NVIDIA_DRIVER_CAPABILITIES; "
             "COURSE_DEVICE=%s container_setup %s /img/dl '/srv/my data' /work/scratch && "
             "printf 'SRUN %%s\\n' \"${CONTAINER_SRUN[@]}\" && printf 'RUN %%s\\n' \"${CONTAINER_RUN[@]}\" && "
             "printf 'PREPARE %%s\\n' \"${CONTAINER_PREPARE[@]}\" && "
             "echo \"NVIDIA_VISIBLE_DEVICES=$(printenv NVIDIA_VISIBLE_DEVICES)\"", LESSON_PATH, device, runtime);
    snprintf(what, sizeof what, "COURSE_DEVICE=%s container_setup %s", device, runtime);
    return bash(script, r, what);
}

static bool gpus_right(void) {
    static const char *given = "container_setup in binds.sh is given code: put it back as it came "
                               "(git diff lessons/11-containers/binds.sh)";
    CommandResult r;
    bool ok = true;
    for (int cuda = 0; ok && cuda < 2; cuda++) {
        const char *dev = cuda ? "cuda" : "cpu";
        ok = setup_of("apptainer", dev, &r) &&
             expect_true(has_word(r.out, "RUN --nv") == cuda, "apptainer with COURSE_DEVICE=%s: %s --nv (the "
                         "host's NVIDIA libraries and devices); %s. It gave:\n%s", dev, cuda ? "no" : "an unasked",
                         given, r.out) &&
             expect_true(has_word(r.out, "RUN /img/dl") && strstr(r.out, "RUN apptainer\nRUN exec\n"),
                         "apptainer: CONTAINER_RUN must be apptainer exec ... IMAGE; %s. It gave:\n%s", given, r.out) &&
             setup_of("charliecloud", dev, &r) &&
             expect_true((strstr(r.out, "PREPARE ch-fromhost\nPREPARE --nvidia\nPREPARE /img/dl\n") != NULL) == cuda,
                         "charliecloud with COURSE_DEVICE=%s: CONTAINER_PREPARE must be %s (ch-run has no GPU flag: "
                         "the host's driver libraries are copied into the image); %s. It gave:\n%s", dev,
                         cuda ? "ch-fromhost --nvidia IMAGE" : "empty", given, r.out) &&
             setup_of("pyxis", dev, &r) &&
             expect_true(has_word(r.out, "NVIDIA_VISIBLE_DEVICES=all") == cuda, "pyxis with COURSE_DEVICE=%s: "
                         "Enroot's NVIDIA hook brings the GPUs in only where NVIDIA_VISIBLE_DEVICES is set "
                         "(exported for srun: %s); %s. It gave:\n%s", dev, cuda ? "all" : "not at all", given, r.out);
    }
    return ok;
}

static int check_binds(void) {
    CommandResult r;
    /* charliecloud: -b (or --bind=) for each, a private /tmp, no home, no writable image */
    if (!binds_of("charliecloud", &r) || !quoted("charliecloud", r.out)) return CHECK_FAIL;
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
    if (!binds_of("pyxis", &r) || !quoted("pyxis", r.out)) return CHECK_FAIL;
    const char *m = strstr(r.out, "--container-mounts=");
    char mounts[512] = "";
    const char *v = m ? m + strlen("--container-mounts=") : "";
    snprintf(mounts, sizeof mounts, "%.*s", (int)strcspn(v, "\n"), v);
    ok = expect_true(m != NULL && (m == r.out || m[-1] == '\n') && !strstr(m + 1, "--container-mounts"),
                     "pyxis: one word --container-mounts=SRC:DST:ro,SRC:DST with both mounts; the words "
                     "were:\n%s", r.out) &&
         mounts_right("pyxis", mounts, r.out) &&
         expect_true(has_word(r.out, "--no-container-mount-home"), "pyxis: without "
                     "--no-container-mount-home the home directory is mounted; the words were:\n%s", r.out);
    if (!ok) return CHECK_FAIL;
    /* apptainer: --contain (not --containall: the ranks need Slurm's environment); the
     * binds of every --bind / -B / --bind=, joined by commas */
    if (!binds_of("apptainer", &r) || !quoted("apptainer", r.out)) return CHECK_FAIL;
    char binds[1024] = "";
    for (const char *p = r.out; *p; p += strcspn(p, "\n"), p += *p == '\n') {
        const char *spec = NULL;
        if (strncmp(p, "--bind=", 7) == 0) spec = p + 7;
        else if (strncmp(p, "--bind\n", 7) == 0 || strncmp(p, "-B\n", 3) == 0) spec = strchr(p, '\n') + 1;
        if (spec && *spec)
            snprintf(binds + strlen(binds), sizeof binds - strlen(binds), "%s%.*s", *binds ? "," : "",
                     (int)strcspn(spec, "\n"), spec);
    }
    ok = expect_true(!has_word(r.out, "--containall") && !has_word(r.out, "-C"), "apptainer: --containall "
                     "also empties the environment, and the ranks need Slurm's PMIx variables: --contain") &&
         expect_true(has_word(r.out, "--contain") || has_word(r.out, "-c"), "apptainer: without --contain the "
                     "home directory and /tmp of the host are there; the words were:\n%s", r.out) &&
         expect_true(*binds != '\0', "apptainer: no --bind SRC:DST:ro,SRC:DST; the words were:\n%s", r.out) &&
         mounts_right("apptainer", binds, r.out);
    if (!ok) return CHECK_FAIL;
    const char *argv[] = {"bash", "-c", ". " LESSON_PATH "/binds.sh; container_binds docker /a /b", NULL};
    run_command(argv, 30, &r);
    char end[96];
    if (!expect_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0 && strstr(r.out, "docker"),
                     "container_binds docker (no such runtime here) must print a message naming it and "
                     "return non-zero (return 1), so that the job stops there; it ended: %s, and said:\n%s",
                     describe_end(&r, end, sizeof end), r.out))
        return CHECK_FAIL;
    return gpus_right() ? CHECK_PASS : CHECK_FAIL;
}

/* ---------------------------------------------------------------- TODO 11.5 */

static bool write_script(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return expect_true(false, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
    return chmod(path, 0755) == 0;
}

/* Runs the job script as Slurm would, with stand-ins for srun and the runtimes (each
 * records its call on a line: its name, then every word in brackets, so that a word
 * split at a space, or words joined into one, show) and the image. The data directory,
 * DIR/my data, has a space in it, as in TODO 11.4's check. COURSE_DEVICE=device; with
 * cuda, on a node with a GPU. */
static bool run_job(const char *dir, const char *runtime, const char *device, char *calls, size_t cap) {
    char bin[600], path[1400], log[700], text[900], build[700], image[700], cwd[1024], script[1200];
    snprintf(bin, sizeof bin, "%s/bin", dir);
    mkdir(bin, 0755);
    snprintf(log, sizeof log, "%s/srun.log", dir);
    /* srun, and the runtimes a script might start without it: each records its words */
    static const char *tools[] = {"srun", "ch-run", "apptainer", "ch-fromhost"};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        snprintf(text, sizeof text, "#!/bin/sh\n{ printf %%s %s; for w in \"$@\"; do printf ' [%%s]' \"$w\"; done; "
                 "echo; } >> '%s'\n", tools[i], log);
        snprintf(path, sizeof path, "%s/%s", bin, tools[i]);
        if (!write_script(path, text)) return false;
    }
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
    static char env_path[4096];
    if (!*env_path)
        snprintf(env_path, sizeof env_path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin");
    setenv("PATH", env_path, 1);
    setenv("SLURM_JOB_ID", "4242", 1), setenv("SLURM_NTASKS", "2", 1), setenv("SLURM_CPUS_PER_TASK", "3", 1);
    setenv("SLURM_SUBMIT_DIR", cwd, 1), setenv("COURSE_SITE", "generic", 1);
    setenv("COURSE_BUILD", build, 1), setenv("COURSE_SCRATCH_DIR", dir, 1);
    setenv("COURSE_CONTAINER_RUNTIME", runtime, 1), setenv("COURSE_IMAGE", image, 1);
    char data[700];
    snprintf(data, sizeof data, "%s/my data", dir);
    mkdir(data, 0755);
    setenv("COURSE_DATA_DIR", data, 1), setenv("COURSE_DEVICE", device, 1);
    if (strcmp(device, "cuda") == 0) setenv("SLURM_GPUS_ON_NODE", "1", 1);
    else unsetenv("SLURM_GPUS_ON_NODE");
    unsetenv("CUDA_VISIBLE_DEVICES");
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

/* Lesson 06's call: the one after the first srun (lesson 01's, given); "" when none. */
static const char *lesson06_call(const char *calls) {
    const char *first = strncmp(calls, "srun ", 5) == 0 ? calls : strstr(calls, "\nsrun ");
    if (!first) return "";
    const char *second = strchr(first + 1, '\n');
    return second ? second + 1 : "";
}

/* The word after the word [OPTION] on the first line of `line` into buf ("" when not there). */
static void option_value(const char *line, const char *option, char *buf, size_t cap) {
    char key[64];
    snprintf(key, sizeof key, " [%s] [", option);
    const size_t end = strcspn(line, "\n");
    const char *p = strstr(line, key);
    if (!p || p >= line + end) {
        snprintf(buf, cap, "%s", "");
        return;
    }
    p += strlen(key);
    snprintf(buf, cap, "%.*s", (int)strcspn(p, "]\n"), p);
}

/* Each word of lesson 06's call one word: the data path (".../my data") not split at
 * its space (unquoted arrays), no words joined into one ("${ARRAY[*]}" in quotes). */
static bool words_apart(const char *runtime, const char *line) {
    const size_t end = strcspn(line, "\n");
    for (const char *w = strchr(line, '['); w && w < line + end; w = strstr(w, " [")) {
        w += *w == ' ';
        const size_t n = strcspn(w + 1, "]\n");
        bool joined = false;
        for (size_t i = 1; i <= n; i++) /* a space, other than the data path's own */
            joined = joined || (w[i] == ' ' && !(i >= 3 && strncmp(w + i - 2, "my data", 7) == 0));
        if (!expect_true(!(n >= 3 && strncmp(w + 1 + n - 3, "/my", 3) == 0), "%s: lesson 06's line split the data "
                         "path (.../my data here, with a space in it) into two words at the space: quote the arrays' "
                         "expansions, \"${JOB_LAUNCH[@]}\" \"${CONTAINER_SRUN[@]}\" \"${CONTAINER_RUN[@]}\", so that "
                         "each word stays one. srun saw (each word in brackets):\n%s", runtime, line) ||
            !expect_true(!joined, "%s: lesson 06's line has the word [%.*s], several words joined into one: "
                         "\"${ARRAY[*]}\" joins an array's words, \"${ARRAY[@]}\" keeps each apart. srun saw (each "
                         "word in brackets):\n%s", runtime, (int)n, w + 1, line))
            return false;
    }
    return true;
}

/* The device lesson 06's line asks for: cpu (or none: cpu is lesson 06's default). The
 * image is Debian's, without CUDA. */
static bool device_right(const char *line, const char *course_device) {
    char device[64];
    option_value(line, "--device", device, sizeof device);
    return expect_true(!*device || strcmp(device, "cpu") == 0, "lesson 06's line passes --device %s%s: the line "
                       "is --device cpu, written out. The image is built from Debian's packages, without CUDA (no "
                       "nvcc), so its lesson 06 stops with \"this build has no CUDA\" on any --device but cpu (the "
                       "GPU image starts from NVIDIA's, tools/image/cuda.def). srun saw:\n%s", device,
                       strcmp(course_device, "cuda") == 0 ? " with COURSE_DEVICE=cuda on a node with a GPU" : "", line);
}

static int body_job(const char *dir) {
    static char calls[1 << 16];
    char want[700];
    if (!run_job(dir, "charliecloud", "cpu", calls, sizeof calls)) return CHECK_FAIL;
    const char *second = lesson06_call(calls);
    snprintf(want, sizeof want, "[-b] [%s/my data:/data]", dir);
    bool ok = expect_true(*second != '\0', "srun was called once (lesson 01); lesson 06's launch line "
                          "is missing. srun saw:\n%s", calls) &&
              expect_true(strncmp(second, "srun ", 5) == 0, "lesson 06's container was started directly, "
                          "not by srun: the line must begin with \"${JOB_LAUNCH[@]}\" (srun --mpi=pmix starts "
                          "the ranks, each in a container of its own). What ran:\n%s", second) &&
              words_apart("charliecloud", second) &&
              expect_true(strstr(second, "[--mpi=pmix]") != NULL, "lesson 06's srun has no --mpi=pmix (the "
                          "ranks find each other through Slurm's PMIx): use \"${JOB_LAUNCH[@]}\". It saw:\n%s", second) &&
              expect_true(strstr(second, " [ch-run] [--set-env]") != NULL && strstr(second, want),
                          "lesson 06's srun does not start ch-run with the binds: put \"${CONTAINER_RUN[@]}\" "
                          "before the program. It saw:\n%s", second) &&
              expect_true(strstr(second, " [--] [/opt/course/build/solutions/06-ddp/train] ") != NULL ||
                          strstr(second, " [--] [/opt/course/build/lessons/06-ddp/train] ") != NULL,
                          "lesson 06's program must be the image's, /opt/course/build/solutions/06-ddp/train (or "
                          "your own, /opt/course/build/lessons/06-ddp/train), after ch-run's --. srun saw:\n%s", second) &&
              device_right(second, "cpu") &&
              expect_true(strstr(second, "[--ranks] [2]") && strstr(second, "[--threads] [3]"), "lesson 06 needs "
                          "--ranks \"${SLURM_NTASKS:-1}\" and --threads \"$threads\"; srun saw:\n%s", second) &&
              expect_true(strstr(second, "[--checkpoint-dir] [/scratch/checkpoints-4242]") != NULL, "lesson 06 "
                          "must write its checkpoints under /scratch (the bound scratch); srun saw:\n%s", second);
    /* in the container only /scratch is writable: the image is read-only, and the host's
     * paths (its run directory) are not there */
    char metrics[512];
    option_value(second, "--metrics", metrics, sizeof metrics);
    ok = ok && expect_true(*metrics != '\0', "lesson 06's line has no --metrics: it writes its metrics to "
                           "/scratch/metrics-06-$JOB_ID.jsonl; srun saw:\n%s", second) &&
         expect_true(strncmp(metrics, "/scratch/", 9) == 0, "lesson 06's --metrics %s "
                     "is not under /scratch: in the container only /scratch (the bound scratch) is writable; the "
                     "image (/opt/course) is read-only and the host's paths ($COURSE_RUN_DIR) are not there, so the "
                     "real job would fail there: --metrics \"/scratch/metrics-06-$JOB_ID.jsonl\"; srun saw:\n%s",
                     metrics, second);
    if (!ok) return CHECK_FAIL;
    /* a GPU node: the job passes the GPU in, yet the image has no CUDA: still cpu */
    if (!run_job(dir, "charliecloud", "cuda", calls, sizeof calls) || !device_right(lesson06_call(calls), "cuda"))
        return CHECK_FAIL;
    if (!run_job(dir, "pyxis", "cpu", calls, sizeof calls)) return CHECK_FAIL;
    second = lesson06_call(calls);
    return words_apart("pyxis", second) &&
           expect_true(strstr(second, "[--container-image=") && strstr(second, "[--container-mounts=") &&
                       !strstr(second, "ch-run"), "with Pyxis, srun itself takes the container: "
                       "\"${CONTAINER_SRUN[@]}\" on lesson 06's line. srun saw:\n%s", second)
               ? CHECK_PASS : CHECK_FAIL;
}
static int check_job(void) { return with_tmpdir("grade11", body_job); }

/* ---------------------------------------------------------------- TODO 11.6 */

/* What a lesson_find_digest that found the wrong number did, from the number: read in
 * decimal, 32 bits only, or the first digest line. The text's digest lines' digits. */
static const char *wrong_number(const char *text, uint64_t got) {
    const char *first = strstr(text, "parameter digest: "), *last = first;
    for (const char *p = first; p && (p = strstr(p + 1, "parameter digest: "));) last = p;
    if (!first) return "";
    const char *digits = last + strlen("parameter digest: ");
    if (got == strtoull(digits, NULL, 10))
        return ": the digits were read as a decimal number; they are hex (\"%16llx\" in sscanf, or strtoull with "
               "base 16)";
    if (got == (strtoull(digits, NULL, 16) & 0xffffffffu))
        return ": only the low 32 bits were kept (%x reads an unsigned int): \"%16llx\" into an unsigned long long";
    if (first != last && got == strtoull(first + strlen("parameter digest: "), NULL, 16))
        return ": that is the first digest line's number; the last one wins (a later run's, or the end of training)";
    return "";
}

/* The text as a C string literal would show it (\n for a new line), into buf. */
static const char *shown(const char *text, char *buf, size_t cap) {
    size_t k = 0;
    for (const char *p = text; *p && k + 3 < cap; p++) {
        if (*p == '\n') buf[k++] = '\\', buf[k++] = 'n';
        else buf[k++] = *p;
    }
    buf[k] = '\0';
    return buf;
}

static int check_find_digest(void) {
    /* each with what a lesson_find_digest that gets it wrong has missed */
    static const struct { const char *text; bool found; uint64_t digest; const char *why; } cases[] = {
        {"epoch 1 ...\nparameter digest: 00ff00ff12345678\n", true, 0x00ff00ff12345678ull, ""},
        {"parameter digest: 0123456789abcdef\nepoch 2 ...\n", true, 0x0123456789abcdefull,
         ": a digest line at the very start of the text counts too: it is the first line, with no '\\n' before it"},
        {"epoch 1 ...\nparameter digest: 0000000000000001", true, 1,
         ": a digest at the end of the text counts too: its line ends there, without a '\\n' after it"},
        {"parameter digest: 1111111111111111\nparameter digest: abcdefabcdef0123\n", true, 0xabcdefabcdef0123ull, ""},
        {"parameter digest: 123456781234567f\n", true, 0x123456781234567full,
         ": all 16 digits are lowercase hex digits (0-9, a-f), the 16th, f, too"},
        {"rank 0 parameter digest: 1234567812345678\n", false, 0,
         ": the text is in the middle of that line; only a line that starts with it counts"},
        {"parameter digest: 12345\n", false, 0, ": 5 digits; a digest has exactly 16"},
        {"parameter digest: 1234567812345678ff\n", false, 0, ": 18 digits; a digest has exactly 16"},
        {"parameter digest: 123456781234567G\n", false, 0,
         ": the 16th digit, G, is no hex digit: all 16 must be 0-9 or a-f, the last one too"},
        {"parameter digest: 123456781234567F\n", false, 0,
         ": the 16th digit is an uppercase F; lesson 01 prints the digest in lowercase hex (%016llx), so only "
         "0-9 and a-f are digits here, the last one too"},
        {"parameter digest: 00FF00FF12345678\n", false, 0,
         ": lesson 01 prints the digest in lowercase hex (%016llx), so only 0-9 and a-f are digits here"},
        {"the loss is 0.5\n", false, 0, ""},
        {"", false, 0, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t d = 42;
        const bool found = lesson_find_digest(cases[i].text, &d);
        char want[64], text[256];
        if (cases[i].found) snprintf(want, sizeof want, "true, %016llx", (unsigned long long)cases[i].digest);
        else snprintf(want, sizeof want, "false (and the digest untouched)");
        const char *why = found != cases[i].found ? cases[i].why /* what the text is about */
                          : found ? wrong_number(cases[i].text, d)
                          : ": *digest must stay as it was when no digest line is found";
        if (!expect_true(found == cases[i].found && d == (found ? cases[i].digest : 42),
                         "lesson_find_digest(\"%s\") gave %s, %016llx; expected %s%s",
                         shown(cases[i].text, text, sizeof text), found ? "true" : "false", (unsigned long long)d,
                         want, why))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

static const char *verdict_name(DigestVerdict v) {
    return v == DIGESTS_SAME ? "DIGESTS_SAME" : v == DIGESTS_DIFFERENT ? "DIGESTS_DIFFERENT"
           : v == DIGESTS_MISSING ? "DIGESTS_MISSING" : "no verdict";
}

static int check_compare(void) {
    const char *a = "parameter digest: 0123456789abcdef\n", *b = "parameter digest: 0123456789abcdee\n";
    const uint64_t A = 0x0123456789abcdefull, B = 0x0123456789abcdeeull;
    uint64_t x = 0, y = 0;
    DigestVerdict v = lesson_compare_digests(a, a, &x, &y);
    if (!expect_true(v == DIGESTS_SAME && x == A && y == A, "two outputs with the digest %016llx gave %s, digests "
                     "%016llx and %016llx; expected DIGESTS_SAME and both digests%s", (unsigned long long)A,
                     verdict_name(v), (unsigned long long)x, (unsigned long long)y,
                     v == DIGESTS_DIFFERENT && x == A && y == A ? ": equal numbers found different: were the "
                     "pointers compared (outside_digest == inside_digest), not what they point to?" : ""))
        return CHECK_FAIL;
    x = y = 0;
    v = lesson_compare_digests(a, b, &x, &y);
    const char *why = v != DIGESTS_SAME ? ""
                      : y == A ? ": the outside digest was compared with itself: the inside digest was read from "
                                 "the outside's output (lesson_find_digest(inside, inside_digest) for the inside's)"
                      : y == B ? ": the inside digest was found, but not compared with the outside's" : "";
    if (!expect_true(v == DIGESTS_DIFFERENT && x == A && y == B, "outside %016llx, inside %016llx gave %s, digests "
                     "%016llx and %016llx; expected DIGESTS_DIFFERENT and both digests%s", (unsigned long long)A,
                     (unsigned long long)B, verdict_name(v), (unsigned long long)x, (unsigned long long)y, why))
        return CHECK_FAIL;
    y = 7;
    v = lesson_compare_digests("killed\n", a, &x, &y);
    if (!expect_true(v == DIGESTS_MISSING && y == A, "no digest outside, %016llx inside gave %s, inside digest "
                     "%016llx; expected DIGESTS_MISSING, and the inside digest looked for all the same",
                     (unsigned long long)A, verdict_name(v), (unsigned long long)y))
        return CHECK_FAIL;
    v = lesson_compare_digests(a, "", &x, &y);
    if (!expect_true(v == DIGESTS_MISSING, "%016llx outside, no digest inside gave %s; expected DIGESTS_MISSING",
                     (unsigned long long)A, verdict_name(v)))
        return CHECK_FAIL;
    /* two failed runs: neither has a digest, and the untouched numbers must not be
     * compared (equal here, then different) */
    for (int k = 0; k < 2; k++) {
        x = 5, y = k ? 6 : 5;
        v = lesson_compare_digests("Segmentation fault\n", "ch-run: error\n", &x, &y);
        if (!expect_true(v == DIGESTS_MISSING, "two outputs without a digest (two failed runs) gave %s; expected "
                         "DIGESTS_MISSING%s", verdict_name(v), v == DIGESTS_SAME ? ": two missing digests are not "
                         "equal ones (the untouched numbers were compared): MISSING when either is missing, or both"
                         : ""))
            return CHECK_FAIL;
    }
    return CHECK_PASS;
}

int main(void) {
    check_begin("lesson 11: containers");
    check_needs("TODO 11.5", "11.4"); /* the job script sources binds.sh */
    check_run("TODO 11.1", "the image's packages: build tools, OpenBLAS, zlib, Open MPI; nothing host-only", check_packages, 30);
    check_run("TODO 11.2", "the build step: make with the image's ARCH and jobs, lessons 01 and 06", check_build_step, 30);
    check_run("TODO 11.3", "the environment: ARCH, Open MPI's single copy off, KEY=VALUE words", check_environment, 30);
    check_run("TODO 11.4", "binds: data read-only at /data, scratch at /scratch, no home (ch-run, Pyxis, Apptainer)", check_binds, 60);
    check_run("TODO 11.5", "job script: lesson 06 on 2 ranks through srun --mpi=pmix into the container", check_job, 60);
    check_run("TODO 11.6", "the parameter digest found in a program's output", check_find_digest, 10);
    check_run("TODO 11.6", "inside and outside compared: same, different, missing", check_compare, 10);
    return check_end();
}
