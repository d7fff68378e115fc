/* The first contact of a job without MPI: rank 0 hands a few bytes (NCCL's unique id)
 * to every other rank over TCP at MASTER_ADDR:MASTER_PORT, as torchrun's store does.
 * Plain sockets, no threads; every wait is bounded. */
#ifndef DIST_RENDEZVOUS_H
#define DIST_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>

/* Rank 0 listens on port and sends blob[0..len) to each of the world_size - 1 others,
 * which connect to addr:port (retrying while rank 0 starts) and receive it. False with
 * the reason in why (which ranks never came, an address that does not resolve, a
 * port in use) when it cannot finish within timeout_s. */
bool rendezvous_share(const char *addr, int port, int rank, int world_size, void *blob,
                      size_t len, double timeout_s, char *why, size_t why_cap);

#endif
