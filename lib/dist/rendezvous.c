#include "rendezvous.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/check.h"
#include "core/timer.h"

/* Milliseconds left until deadline (0 when past it). */
static int ms_left(double deadline) {
    double left = deadline - now_seconds();
    return left > 0 ? (int)(left * 1000) + 1 : 0;
}

/* Reads or writes exactly len bytes before the deadline. */
static bool transfer(int fd, void *buf, size_t len, bool out, double deadline) {
    uint8_t *p = buf;
    while (len > 0) {
        struct pollfd w = {fd, out ? POLLOUT : POLLIN, 0};
        if (poll(&w, 1, ms_left(deadline)) <= 0) return false;
        ssize_t n = out ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static bool serve(int port, int world, void *blob, size_t len, double deadline, char *why,
                  size_t cap) {
    int fd = socket(AF_INET6, SOCK_STREAM, 0), on = 1, off = 0;
    if (fd < 0) return snprintf(why, cap, "socket: %s", strerror(errno)), false;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off); /* IPv4 clients too */
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
                             .sin6_addr = in6addr_any};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, world) != 0) {
        snprintf(why, cap, "rank 0 cannot listen on port %d: %s (another job on this node? set "
                 "MASTER_PORT to a free port)", port, strerror(errno));
        close(fd);
        return false;
    }
    bool *came = xcalloc((size_t)world, sizeof *came);
    int done = 1;
    while (done < world) {
        struct pollfd w = {fd, POLLIN, 0};
        if (poll(&w, 1, ms_left(deadline)) <= 0) break;
        int c = accept(fd, NULL, NULL);
        if (c < 0) continue;
        int32_t rank = -1; /* each client says who it is first */
        if (transfer(c, &rank, sizeof rank, false, deadline) && rank > 0 && rank < world &&
            !came[rank] && transfer(c, blob, len, true, deadline)) {
            came[rank] = true;
            done++;
        }
        close(c);
    }
    close(fd);
    if (done < world) {
        size_t used = (size_t)snprintf(why, cap, "rank 0 waited on port %d, but these ranks "
                                       "never connected:", port);
        for (int r = 1; r < world && used < cap; r++)
            if (!came[r]) used += (size_t)snprintf(why + used, cap - used, " %d", r);
    }
    xfree(came);
    return done == world;
}

static bool fetch(const char *addr, int port, int rank, void *blob, size_t len, double deadline,
                  char *why, size_t cap) {
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(addr, service, &hints, &res);
    if (rc != 0)
        return snprintf(why, cap, "MASTER_ADDR %s does not resolve: %s", addr, gai_strerror(rc)),
               false;
    bool ok = false;
    while (!ok && ms_left(deadline) > 0) { /* rank 0 may not listen yet: try again */
        for (struct addrinfo *p = res; p && !ok; p = p->ai_next) {
            int fd = socket(p->ai_family, p->ai_socktype, p->ai_protocol);
            if (fd < 0) continue;
            int32_t me = rank;
            ok = connect(fd, p->ai_addr, p->ai_addrlen) == 0 &&
                 transfer(fd, &me, sizeof me, true, deadline) &&
                 transfer(fd, blob, len, false, deadline);
            close(fd);
        }
        if (!ok) nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    freeaddrinfo(res);
    if (!ok)
        snprintf(why, cap, "rank %d could not get the job's id from rank 0 at %s:%d (is rank 0 "
                 "running, and MASTER_ADDR the first node of the job?)", rank, addr, port);
    return ok;
}

bool rendezvous_share(const char *addr, int port, int rank, int world_size, void *blob,
                      size_t len, double timeout_s, char *why, size_t why_cap) {
    CHECK(port > 0 && port < 65536, "rendezvous port %d", port);
    why[0] = '\0';
    const double deadline = now_seconds() + timeout_s;
    if (world_size == 1) return true;
    return rank == 0 ? serve(port, world_size, blob, len, deadline, why, why_cap)
                     : fetch(addr, port, rank, blob, len, deadline, why, why_cap);
}
