/* Unit tests of lib/core/memory (issue 30, fault 1): the limit is the machine's memory
 * (or less: a cgroup, COURSE_MEMORY_LIMIT), a request past it stops with both numbers
 * before anything is taken, in xmalloc and up front in transformer_init, where a text
 * of 2 million distinct words asks for gigabytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/memory.h"
#include "framework/check.h"
#include "models/transformer.h"

/* MemTotal of /proc/meminfo in bytes: the machine's memory by its own definition. */
static uint64_t meminfo_total(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    return (uint64_t)kb * 1024;
}

static int check_limit(void) {
    char source[128];
    unsetenv("COURSE_MEMORY_LIMIT");
    const uint64_t total = meminfo_total(), limit = mem_limit_bytes(source, sizeof source);
    /* MemTotal leaves out what the kernel reserved at boot: the physical pages are a
     * little more; a cgroup's limit can only be less */
    bool ok = expect_true(total > 0 && limit > 0 && limit <= total + total / 10,
                          "limit %llu bytes (%s), MemTotal %llu", (unsigned long long)limit, source,
                          (unsigned long long)total);
    const uint64_t held = mem_resident_bytes();
    ok = ok && expect_true(held > 1000000 && held < limit, "resident %llu bytes", (unsigned long long)held);
    setenv("COURSE_MEMORY_LIMIT", "100M", 1);
    ok = ok && expect_true(mem_limit_bytes(source, sizeof source) == 100u << 20 &&
                               strstr(source, "COURSE_MEMORY_LIMIT"), "100M: %s", source);
    setenv("COURSE_MEMORY_LIMIT", "1G", 1);
    ok = ok && expect_true(mem_limit_bytes(NULL, 0) == (uint64_t)1 << 30, "1G");
    setenv("COURSE_MEMORY_LIMIT", "999999G", 1);
    ok = ok && expect_true(mem_limit_bytes(NULL, 0) == limit, "a limit above the machine's counts as "
                           "the machine's");
    unsetenv("COURSE_MEMORY_LIMIT");
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_refused(void) {
    char msg[MEM_MSG_MAX + 512], source[128], s_limit[32];
    const uint64_t limit = mem_limit_bytes(source, sizeof source);
    bool ok = expect_true(mem_check(1 << 20, "a megabyte", msg, sizeof msg) == 0, "1 MB refused: %s", msg);
    ok = ok && expect_true(mem_check(limit, "the test's buffer", msg, sizeof msg) == -1, "the whole "
                           "limit on top of what is held was accepted");
    mem_format(limit, s_limit, sizeof s_limit);
    ok = ok && expect_true(strstr(msg, "the test's buffer needs") && strstr(msg, s_limit) &&
                               strstr(msg, source) && strstr(msg, "more than"),
                           "the message names neither the need nor the limit (%s): %s", s_limit, msg);
    char buf[32];
    ok = ok && expect_true(strcmp(mem_format(512000000, buf, sizeof buf), "512 MB") == 0 &&
                               strcmp(mem_format(21600000000ull, buf, sizeof buf), "21.6 GB") == 0,
                           "mem_format: %s", buf);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* xcalloc of a gigabyte under a 200 MB limit: refused, not taken (and not touched). */
static void body_xcalloc(void *arg) {
    (void)arg;
    setenv("COURSE_MEMORY_LIMIT", "200M", 1);
    void *p = xcalloc((size_t)1 << 30, 1);
    printf("allocated %p\n", p);
}

/* A text of 2 million distinct words on the tutorial's model under a 2 GB limit:
 * transformer_init refuses it up front, naming the vocabulary and both numbers. */
static void body_vocab(void *arg) {
    setenv("COURSE_MEMORY_LIMIT", "2G", 1);
    TransformerConfig c = transformer_config_tutorial(*(const int *)arg);
    Transformer m;
    transformer_init(&m, &c, 20, 35, 1);
    printf("built with %lld parameters\n", (long long)m.params.total);
    transformer_free(&m);
}

static void body_bad_limit(void *arg) {
    setenv("COURSE_MEMORY_LIMIT", (const char *)arg, 1);
    printf("limit %llu\n", (unsigned long long)mem_limit_bytes(NULL, 0));
}

static int check_children(void) {
    ChildResult r;
    const char *bad[] = {"lots", "4GB", "-1G", "0"};
    for (int i = 0; i < 4; i++) {
        run_child(body_bad_limit, (void *)bad[i], &r);
        if (!expect_exit("a malformed COURSE_MEMORY_LIMIT", &r, 1, "COURSE_MEMORY_LIMIT=", bad[i],
                         "is not a size", (const char *)NULL))
            return CHECK_FAIL;
    }
    run_child(body_xcalloc, NULL, &r);
    bool ok = expect_exit("1 GB under a 200 MB limit", &r, 1, "out of memory (refused before it is "
                          "taken)", "allocating 1.1 GB", "more than the 210 MB of the memory "
                          "COURSE_MEMORY_LIMIT allows", (const char *)NULL);
    int words = 2000000;
    run_child(body_vocab, &words, &r);
    ok = ok && expect_exit("2 million words under a 2 GB limit", &r, 1, "a vocabulary of 2000000 words",
                           "batches of 20 x 35", "more than the 2.1 GB", (const char *)NULL);
    words = 1000; /* the control: a small vocabulary is built */
    run_child(body_vocab, &words, &r);
    ok = ok && expect_exit("a thousand words under a 2 GB limit", &r, 0, "built with", (const char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("core: memory");
    check_run(NULL, "the limit: the machine's memory at most; COURSE_MEMORY_LIMIT lowers it", check_limit, 10);
    check_run(NULL, "a request past the limit is refused, naming the need and the limit", check_refused, 10);
    check_run(NULL, "xcalloc past the limit and a 2-million-word transformer stop with a message; "
              "a small one is built; a malformed limit is refused by name", check_children, 30);
    return check_end();
}
