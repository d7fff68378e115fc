/* The rank grid: the ranks of a job laid out as data x pipeline x tensor, each rank a
 * point (d, p, t) with
 *
 *   rank = (d * pp + p) * tp + t        d < dp, p < pp, t < tp
 *
 * tensor fastest, data slowest (Megatron's RankGenerator and picotron's process-group
 * manager order them so too): the tp ranks of a tensor group are consecutive, and
 * launchers place consecutive ranks on the same node (Slurm's block distribution,
 * mpirun's default), so the chattiest groups talk over the node's links. With tp = 1
 * this is lesson 07's layout: rank r is stage r % pp of pipeline r / pp.
 *
 * A group of an axis is the ranks that differ only in that axis's coordinate: the
 * tensor group of rank r is the ranks (d, p, 0 .. tp-1), its pipeline the stages
 * (d, 0 .. pp-1, t), its data group the replicas (0 .. dp-1, p, t) of the same shard.
 *
 *   Grid g;
 *   grid_init(&g, world, (GridShape){.dp = 2, .pp = 0, .tp = 2});   // pp: what remains
 *   char line[160];
 *   grid_describe(&g, line, sizeof line);
 *   print0("%s\n", line);
 *   ... dist_all_reduce(g.tensor, ...); dist_sendrecv(g.pipe, ...); ...
 *   grid_free(&g);
 *
 * Every rank gets a communicator for every axis, also for an axis of size 1 (then a
 * communicator of one rank, whose collectives return at once), so code can call
 * collectives on each axis without asking whether it is split. Its rank there is the
 * rank's coordinate on the axis: g.pipe->rank is the stage, g.data->rank the replica,
 * g.tensor->rank the shard.
 *
 * The functions that take a GridShape are pure: they need no ranks (a program can plan
 * a layout with them before a job starts, and the tests check every layout with them). */
#ifndef PARALLEL_GRID_H
#define PARALLEL_GRID_H

#include <stdbool.h>
#include <stddef.h>

#include "dist/dist.h"

typedef enum { GRID_DATA, GRID_PIPE, GRID_TENSOR, GRID_AXES } GridAxis; /* slowest first */

typedef struct {
    int dp, pp, tp; /* ranks along each axis; in grid_check_shape and grid_init one of
                     * them may be 0: the world size over the other two */
} GridShape;

typedef struct {
    GridShape shape;
    Dist *world;                 /* the job's ranks (not owned) */
    Dist *data, *pipe, *tensor;  /* this rank's group on each axis (owned); rank there =
                                  * the coordinate */
    int coord[GRID_AXES];        /* this rank's (d, p, t) */
    int prev_stage, next_stage;  /* world ranks of the stages before and after this one
                                  * in its pipeline; -1 at the ends */
    int per_node;                /* ranks per node: the world's local size */
    bool inside_node[GRID_AXES]; /* every group of the axis lies on one node (as the
                                  * communicators found them, on every rank) */
} Grid;

/* "data", "pipeline", "tensor" */
const char *grid_axis_name(GridAxis a);
int grid_axis_size(GridShape s, GridAxis a);

/* 0 when dp x pp x tp = world (a 0 among them is first replaced by what remains);
 * else -1 with a message in msg (when not NULL) that names the sizes, the divisors of
 * world and a shape that fits: "grid: data 3 x pipeline 1 x tensor 2 is 6 ranks, but
 * the job has 8; sizes that divide 8: 1, 2, 4, 8 (e.g. data 4 x pipeline 1 x tensor 2)" */
int grid_check_shape(GridShape *s, int world, char *msg, size_t cap);

/* rank <-> (d, p, t) */
void grid_coords(GridShape s, int rank, int coord[GRID_AXES]);
int grid_rank(GridShape s, const int coord[GRID_AXES]);

/* The groups of axis a: world / size(a) of them, numbered 0, 1, ... by the other two
 * coordinates (slower one first); rank's group is the color of its dist_split. */
int grid_groups(GridShape s, GridAxis a);
int grid_group_of(GridShape s, GridAxis a, int rank);
/* members[0 .. size(a)) = the group's world ranks, by their coordinate on a */
void grid_group_members(GridShape s, GridAxis a, int group, int *members);

/* The world rank `step` places along axis a from rank (its coordinate on a plus step,
 * the others the same); -1 outside the grid: pipeline neighbours are steps -1 and +1. */
int grid_neighbour(GridShape s, GridAxis a, int rank, int step);

/* Whether a group lies on one node when nodes hold per_node consecutive ranks each
 * (ranks r and q share a node when r / per_node == q / per_node); the _axis form: every
 * group of a. */
bool grid_group_inside_node(GridShape s, GridAxis a, int group, int per_node);
bool grid_axis_inside_nodes(GridShape s, GridAxis a, int per_node);

/* Splits world into the three axes' communicators (a collective: every rank calls it
 * with the same shape). A shape that does not fit the world is a user error (the
 * message of grid_check_shape); a tensor group that spans nodes gets a warning. */
void grid_init(Grid *g, Dist *world, GridShape shape);
/* "grid: 2 data x 2 pipeline x 2 tensor over 8 ranks, 4 per node; tensor groups inside
 * nodes" */
void grid_describe(const Grid *g, char *out, size_t cap);
void grid_free(Grid *g);

#endif
