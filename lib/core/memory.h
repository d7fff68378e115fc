/* The memory a program may take, checked before it takes it. A request that would bring
 * the process past the machine's memory (or its job's limit) stops with both numbers,
 * instead of the kernel killing the program halfway with no word (issue 30: a text of 2
 * million distinct words was killed at 21.6 GB).
 *
 *   mem_require(bytes, "the transformer (...): parameters, gradients, activations");
 *
 * xmalloc asks mem_require for every block of MEM_CHECK_FROM bytes or more, so each
 * large allocation of the library is checked; a model checks its whole need up front,
 * where it can say what the memory is for. */
#ifndef CORE_MEMORY_H
#define CORE_MEMORY_H

#include <stddef.h>
#include <stdint.h>

enum { MEM_MSG_MAX = 1024 };
#define MEM_CHECK_FROM ((size_t)64 << 20) /* xmalloc checks blocks from 64 MiB up */

/* The bytes this process may use: the smaller of the machine's memory (its physical
 * pages) and the memory limit of the control group it runs in (a Slurm job's --mem, a
 * container's limit), and COURSE_MEMORY_LIMIT when set (bytes, or with a k, M or G
 * suffix: a smaller share of a node, and the tests' hook; anything else is refused by
 * name). source (cap bytes) says which it is: "this machine's memory", "the memory
 * limit of this job (its cgroup)", "the memory COURSE_MEMORY_LIMIT allows". */
uint64_t mem_limit_bytes(char *source, size_t cap);
/* The bytes this process holds in memory now (its resident set). */
uint64_t mem_resident_bytes(void);
/* 0 when `more` bytes on top of what the process holds fit under mem_limit_bytes; else
 * -1 and msg, naming what (when not NULL), the need and the limit. */
int mem_check(uint64_t more, const char *what, char *msg, size_t cap);
/* mem_check, or fatal (exit 1) with its message. */
void mem_require(uint64_t more, const char *what);
/* bytes as "512 MB" or "21.6 GB" (decimal units) into buf. */
const char *mem_format(uint64_t bytes, char *buf, size_t cap);

#endif
