/* The rank grid (grid.h): the pure layout arithmetic first, then the communicators. */
#include "parallel/grid.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/log.h"

static const char *const AXIS_NAMES[GRID_AXES] = {"data", "pipeline", "tensor"};

const char *grid_axis_name(GridAxis a) {
    CHECK(a >= 0 && a < GRID_AXES, "grid axis %d (0 to %d)", (int)a, GRID_AXES - 1);
    return AXIS_NAMES[a];
}

int grid_axis_size(GridShape s, GridAxis a) {
    const int size[GRID_AXES] = {s.dp, s.pp, s.tp};
    CHECK(a >= 0 && a < GRID_AXES, "grid axis %d (0 to %d)", (int)a, GRID_AXES - 1);
    return size[a];
}

static int world_of(GridShape s) { return s.dp * s.pp * s.tp; }

/* ---------------------------------------------------------------- the shape */

/* "data 3 x pipeline 1 x tensor 2", a 0 as "(what remains)" */
static void shape_text(const GridShape *s, char *out, size_t cap) {
    const int size[GRID_AXES] = {s->dp, s->pp, s->tp};
    size_t n = 0;
    for (int a = 0; a < GRID_AXES && n < cap; a++) {
        char num[16];
        snprintf(num, sizeof num, "%d", size[a]);
        n += (size_t)snprintf(out + n, cap - n, "%s%s %s", a ? " x " : "", AXIS_NAMES[a],
                              size[a] ? num : "(what remains)");
    }
}

/* "1, 2, 4, 8 (e.g. data 4 x pipeline 1 x tensor 2)": what divides world, and a shape
 * that fits it keeping as much of s as divides (tensor first, then pipeline). */
static void suggestion(const GridShape *s, int world, char *out, size_t cap) {
    size_t n = 0;
    for (int k = 1; k <= world && n < cap; k++)
        if (world % k == 0) n += (size_t)snprintf(out + n, cap - n, "%s%d", k > 1 ? ", " : "", k);
    const int tp = s->tp > 0 && world % s->tp == 0 ? s->tp : 1;
    const int pp = s->pp > 0 && (world / tp) % s->pp == 0 ? s->pp : 1;
    const GridShape fit = {world / (tp * pp), pp, tp};
    char text[96];
    shape_text(&fit, text, sizeof text);
    if (n < cap) snprintf(out + n, cap - n, " (e.g. %s)", text);
}

/* Fills msg (when not NULL) with the message of a shape that does not fit; returns -1. */
__attribute__((format(printf, 5, 6))) static int refuse(const GridShape *s, int world, char *msg,
                                                        size_t cap, const char *fmt, ...) {
    char what[256], fits[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    suggestion(s, world, fits, sizeof fits);
    return fail_msg(msg, cap, "grid: %s; sizes that divide %d: %s", what, world, fits);
}

int grid_check_shape(GridShape *s, int world, char *msg, size_t cap) {
    CHECK(world >= 1, "grid over %d ranks (1 or more)", world);
    char text[96];
    shape_text(s, text, sizeof text);
    int *size[GRID_AXES] = {&s->dp, &s->pp, &s->tp}, *rest = NULL;
    long long known = 1; /* the sizes given, multiplied: at most world^3 */
    for (int a = 0; a < GRID_AXES; a++) {
        if (*size[a] < 0)
            return refuse(s, world, msg, cap, "%s size %d: sizes are 1 or more, or 0 for what the "
                          "others leave", AXIS_NAMES[a], *size[a]);
        if (*size[a] > world)
            return refuse(s, world, msg, cap, "%s size %d, but the job has %d rank%s", AXIS_NAMES[a],
                          *size[a], world, world == 1 ? "" : "s");
        if (*size[a] == 0 && rest)
            return refuse(s, world, msg, cap, "%s: only one size can be left to what remains", text);
        if (*size[a] == 0) rest = size[a];
        else known *= *size[a];
    }
    if (rest && world % known != 0)
        return refuse(s, world, msg, cap, "%d ranks cannot form %s: %lld does not divide %d", world,
                      text, known, world);
    if (!rest && known != world)
        return refuse(s, world, msg, cap, "%s is %lld ranks, but the job has %d", text, known, world);
    if (rest) *rest = world / (int)known;
    return 0;
}

/* ---------------------------------------------------------------- coordinates */

static void check_shape(GridShape s) {
    CHECK(s.dp >= 1 && s.pp >= 1 && s.tp >= 1, "grid shape %d x %d x %d (each 1 or more: "
          "grid_check_shape fills a 0)", s.dp, s.pp, s.tp);
}

void grid_coords(GridShape s, int rank, int coord[GRID_AXES]) {
    check_shape(s);
    CHECK(rank >= 0 && rank < world_of(s), "grid rank %d of %d", rank, world_of(s));
    coord[GRID_TENSOR] = rank % s.tp;
    coord[GRID_PIPE] = rank / s.tp % s.pp;
    coord[GRID_DATA] = rank / (s.tp * s.pp);
}

int grid_rank(GridShape s, const int coord[GRID_AXES]) {
    check_shape(s);
    for (int a = 0; a < GRID_AXES; a++)
        CHECK(coord[a] >= 0 && coord[a] < grid_axis_size(s, (GridAxis)a),
              "%s coordinate %d of %d", AXIS_NAMES[a], coord[a], grid_axis_size(s, (GridAxis)a));
    return (coord[GRID_DATA] * s.pp + coord[GRID_PIPE]) * s.tp + coord[GRID_TENSOR];
}

/* ---------------------------------------------------------------- groups */

int grid_groups(GridShape s, GridAxis a) {
    check_shape(s);
    return world_of(s) / grid_axis_size(s, a);
}

/* A group's number: the coordinates off axis a, read as digits (the slower axis the
 * higher digit). */
int grid_group_of(GridShape s, GridAxis a, int rank) {
    int coord[GRID_AXES], group = 0;
    grid_coords(s, rank, coord);
    for (int b = 0; b < GRID_AXES; b++)
        if (b != (int)a) group = group * grid_axis_size(s, (GridAxis)b) + coord[b];
    return group;
}

/* The member of a group with coordinate c on axis a. */
static int member(GridShape s, GridAxis a, int group, int c) {
    CHECK(group >= 0 && group < grid_groups(s, a), "%s group %d of %d", grid_axis_name(a),
          group, grid_groups(s, a));
    int coord[GRID_AXES];
    for (int b = GRID_AXES - 1; b >= 0; b--) /* the digits back, fastest first */
        if (b != (int)a) {
            coord[b] = group % grid_axis_size(s, (GridAxis)b);
            group /= grid_axis_size(s, (GridAxis)b);
        }
    coord[a] = c;
    return grid_rank(s, coord);
}

void grid_group_members(GridShape s, GridAxis a, int group, int *members) {
    for (int c = 0; c < grid_axis_size(s, a); c++) members[c] = member(s, a, group, c);
}

int grid_neighbour(GridShape s, GridAxis a, int rank, int step) {
    int coord[GRID_AXES];
    grid_coords(s, rank, coord);
    coord[a] += step;
    return coord[a] >= 0 && coord[a] < grid_axis_size(s, a) ? grid_rank(s, coord) : -1;
}

bool grid_group_inside_node(GridShape s, GridAxis a, int group, int per_node) {
    CHECK(per_node >= 1, "%d ranks per node (1 or more)", per_node);
    const int node = member(s, a, group, 0) / per_node;
    for (int c = 1; c < grid_axis_size(s, a); c++)
        if (member(s, a, group, c) / per_node != node) return false;
    return true;
}

bool grid_axis_inside_nodes(GridShape s, GridAxis a, int per_node) {
    for (int g = 0; g < grid_groups(s, a); g++)
        if (!grid_group_inside_node(s, a, g, per_node)) return false;
    return true;
}

/* ---------------------------------------------------------------- communicators */

void grid_init(Grid *g, Dist *world, GridShape shape) {
    char msg[512];
    if (grid_check_shape(&shape, world->world_size, msg, sizeof msg) != 0) fatal("%s", msg);
    memset(g, 0, sizeof *g);
    g->shape = shape;
    g->world = world;
    g->per_node = world->local_size;
    grid_coords(shape, world->rank, g->coord);
    Dist **comm[GRID_AXES] = {&g->data, &g->pipe, &g->tensor};
    for (int a = 0; a < GRID_AXES; a++) {
        /* key = the coordinate: the sub-communicator's rank is the coordinate */
        Dist *d = dist_split(world, grid_group_of(shape, (GridAxis)a, world->rank), g->coord[a]);
        CHECK(d->world_size == grid_axis_size(shape, (GridAxis)a) && d->rank == g->coord[a],
              "the %s group: rank %d of %d after the split, but coordinate %d of %d", AXIS_NAMES[a],
              d->rank, d->world_size, g->coord[a], grid_axis_size(shape, (GridAxis)a));
        *comm[a] = d;
        /* the nodes as the communicator found them: true also where a launcher places
         * ranks other than in blocks */
        g->inside_node[a] = dist_sum_double(world, d->nodes > 1 ? 1 : 0) == 0;
    }
    g->prev_stage = grid_neighbour(shape, GRID_PIPE, world->rank, -1);
    g->next_stage = grid_neighbour(shape, GRID_PIPE, world->rank, +1);
    if (!g->inside_node[GRID_TENSOR])
        print0("warning: tensor groups of %d ranks span nodes (%d ranks per node): every layer's "
               "all-reduces cross the network; a tensor size that divides %d keeps them inside "
               "a node where ranks are placed in blocks (srun's and mpirun's default)\n", shape.tp, g->per_node, g->per_node);
}

void grid_describe(const Grid *g, char *out, size_t cap) {
    const int world = g->world->world_size;
    snprintf(out, cap, "grid: %d data x %d pipeline x %d tensor over %d rank%s, %d per node; "
             "tensor groups %s", g->shape.dp, g->shape.pp, g->shape.tp, world, world == 1 ? "" : "s",
             g->per_node, g->inside_node[GRID_TENSOR] ? "inside nodes" : "span nodes");
}

void grid_free(Grid *g) {
    dist_finalize(g->tensor);
    dist_finalize(g->pipe);
    dist_finalize(g->data);
    memset(g, 0, sizeof *g);
}
