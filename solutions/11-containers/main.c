/* Lesson 11: does the image change the result? Runs lesson 01's solution for a few
 * steps outside the image and inside it (ch-run by default), then compares the
 * parameter digests both print (TODO 11.6).
 *
 *   train                                   # build/image/root against the host build
 *                                           # (make image-host: lesson 01 with the image's ARCH)
 *   train --inside "apptainer exec dl-course.sif /opt/course/build/solutions/01-cpu-cnn/train"
 *
 * --outside and --inside are shell commands; the training options (--steps' worth of
 * a synthetic set, one thread, seed 42) are appended to both. Without --inside the
 * image must be make image's, whole: --image DIR with DIR/etc/dl-course-image and the
 * build's stamp beside it (DIR/../stamp, written last). Exit status 0: the same digest;
 * 1: different; 2: a run failed or printed none, or no (whole) image. */
#include <libgen.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/args.h"
#include "core/check.h"
#include "core/fs.h"
#include "lesson.h"

enum { OUTPUT_MAX = 1 << 16, COMMAND_MAX = 8192 };
#define DEFAULT_OUTSIDE "build/image/host/solutions/01-cpu-cnn/train" /* make image-host */

/* Runs `command` through the shell, stderr too; its output (the first OUTPUT_MAX - 1
 * bytes) into out; its exit status (-1: could not start it). */
static int run(const char *command, char *out) {
    char full[COMMAND_MAX + 16];
    if (snprintf(full, sizeof full, "%s 2>&1", command) >= (int)sizeof full) fatal("command too long: %s", command);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, OUTPUT_MAX - 1, p);
    out[n] = '\0';
    while (fgetc(p) != EOF) {} /* the rest, unread, so the program is not cut off */
    return pclose(p);
}

/* How a command run through the shell ended, in words, not as a wait status (256 is
 * exit 1): "exit 3", "killed by signal 9 (Killed)". The shell reports a command that a
 * signal ended as exit 128 + the signal. */
static void describe_status(int status, char *buf, size_t cap) {
    if (status == -1) snprintf(buf, cap, "not started");
    else if (WIFSIGNALED(status))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (!WIFEXITED(status)) snprintf(buf, cap, "ended, wait status %d", status);
    else if (WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + NSIG)
        snprintf(buf, cap, "exit %d: killed by signal %d (%s)", WEXITSTATUS(status), WEXITSTATUS(status) - 128,
                 strsignal(WEXITSTATUS(status) - 128));
    else if (WEXITSTATUS(status) == 127) snprintf(buf, cap, "exit 127: command not found");
    else snprintf(buf, cap, "exit %d", WEXITSTATUS(status));
}

static void show(const char *where, const char *command, int status, const char *out, bool found,
                 uint64_t digest) {
    printf("%s: %s\n", where, command);
    if (found) printf("  parameter digest %016llx\n", (unsigned long long)digest);
    if (!found || status != 0) {
        char end[128];
        describe_status(status, end, sizeof end);
        printf("  %s (%s); it said:\n", found ? "it failed" : "no parameter digest", end);
        const char *tail = strlen(out) > 2000 ? out + strlen(out) - 2000 : out;
        printf("%s%s", *tail ? tail : "  (nothing)\n", *tail && tail[strlen(tail) - 1] != '\n' ? "\n" : "");
    }
}

/* Whether make image finished the image directory `image`: its /etc/dl-course-image
 * (written after the build inside) and the stamp beside it (written last). Says what
 * is missing on stderr. */
static bool image_whole(const char *image) {
    char info[FS_PATH_MAX], dir[FS_PATH_MAX], stamp[FS_PATH_MAX];
    if (!fs_is_dir(image)) {
        fprintf(stderr, "error: no image %s: make image builds it (2-4 minutes the first time)\n", image);
        return false;
    }
    snprintf(dir, sizeof dir, "%s", image);
    fs_join_or_die(info, sizeof info, image, "etc/dl-course-image");
    fs_join_or_die(stamp, sizeof stamp, dirname(dir), "stamp");
    if (fs_is_regular_file(info) && fs_is_regular_file(stamp)) return true;
    fprintf(stderr, "error: the image %s is half-built (no %s: make image stopped before its end, or is still "
            "running): run make image\n", image, fs_is_regular_file(info) ? stamp : info);
    return false;
}

int main(int argc, char **argv) {
    const char *image = "build/image/root";
    const char *outside = DEFAULT_OUTSIDE;
    const char *inside = NULL;
    int steps = 5, threads = 1;
    ArgSpec specs[] = {
        {"image", ARG_STRING, &image, "the image directory ch-run runs: make image's, whole (its "
                                      "etc/dl-course-image, and the stamp beside it)", NULL},
        {"outside", ARG_STRING, &outside, "the command run outside the image (lesson 01's program, "
                                          "built with the image's -march)", NULL},
        {"inside", ARG_STRING, &inside, "the command run inside (default: ch-run on --image)", NULL},
        {"steps", ARG_INT, &steps, "training steps of 100 images", NULL},
        {"threads", ARG_INT, &threads, "threads of both runs", NULL},
    };
    args_parse(argc, argv, specs, (int)(sizeof specs / sizeof specs[0]),
               "Lesson 11: lesson 01 for a few steps outside and inside the image; the same parameters?");
    if (steps < 1 || steps > 600) fatal("--steps %d: give 1 to 600", steps);
    if (threads < 1) fatal("--threads %d: give at least 1", threads);
    /* ch-run stops with "$USER not set" without it (a cron job, env -i, some containers) */
    const struct passwd *me = getpwuid(getuid());
    if (!getenv("USER") && me) setenv("USER", me->pw_name, 1);
    char default_inside[COMMAND_MAX];
    if (!inside) {
        if (!image_whole(image)) return (int)DIGESTS_MISSING;
        snprintf(default_inside, sizeof default_inside,
                 "ch-run --set-env -t '%s' -- /opt/course/build/solutions/01-cpu-cnn/train", image);
        inside = default_inside;
    }
    char args[256], cmd_out[COMMAND_MAX], cmd_in[COMMAND_MAX];
    snprintf(args, sizeof args, " --dataset synthetic --train-limit %d --test-limit 100 --batch-size 100 "
             "--epochs 1 --seed 42 --threads %d", 100 * steps, threads);
    if (snprintf(cmd_out, sizeof cmd_out, "%s%s", outside, args) >= (int)sizeof cmd_out ||
        snprintf(cmd_in, sizeof cmd_in, "%s%s", inside, args) >= (int)sizeof cmd_in)
        fatal("--outside or --inside is too long");

    if (strcmp(outside, DEFAULT_OUTSIDE) == 0 && access(outside, X_OK) != 0) {
        fprintf(stderr, "error: no %s (lesson 01 outside the image, with the image's ARCH): make image-host "
                "builds it\n", outside);
        return (int)DIGESTS_MISSING;
    }

    char *out_a = xcalloc(OUTPUT_MAX, 1), *out_b = xcalloc(OUTPUT_MAX, 1);
    const int status_a = run(cmd_out, out_a), status_b = run(cmd_in, out_b);
    uint64_t a = 0, b = 0, da = 0, db = 0;
    const DigestVerdict v = lesson_compare_digests(out_a, out_b, &a, &b);
    /* looked for again, so that each run's digest is shown whatever the verdict */
    const bool found_a = lesson_find_digest(out_a, &da), found_b = lesson_find_digest(out_b, &db);
    show("outside", cmd_out, status_a, out_a, found_a, da);
    show("inside ", cmd_in, status_b, out_b, found_b, db);
    DigestVerdict end = v;
    if (status_a != 0 || status_b != 0) { /* a digest printed before a failure proves nothing */
        printf("a run failed: see its output above\n");
        end = DIGESTS_MISSING;
    } else if (v == DIGESTS_SAME && found_a && found_b)
        printf("the same parameters inside the image as outside (%d steps)\n", steps);
    else if (v == DIGESTS_SAME) {
        printf("lesson_compare_digests (TODO 11.6) says DIGESTS_SAME, but a run printed no parameter digest: "
               "two missing digests are not the same\n");
        end = DIGESTS_MISSING;
    } else if (v == DIGESTS_DIFFERENT)
        printf("different parameters: is the program inside built with the same -march (ARCH) and "
               "libraries as the one outside?\n");
    else {
        printf("a run printed no parameter digest: see its output above\n");
        end = DIGESTS_MISSING;
    }
    xfree(out_a);
    xfree(out_b);
    return (int)end;
}
