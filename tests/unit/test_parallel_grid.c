/* lib/parallel/grid without ranks: every layout dp x pp x tp of 1, 2, 4, 8 and 16 ranks
 * (every ordered factorisation) against the layout's definition, worked out here by
 * brute force: the ranks numbered in order with the tensor coordinate fastest, a group
 * as the ranks that agree on the other two coordinates, a neighbour as the rank one
 * step along an axis, a node as per_node consecutive ranks. Then the refusals of shapes
 * that do not fit, and grid_init on the single-process backend. The same grid with
 * several ranks and real collectives: tests/dist/test_grid.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "dist/dist.h"
#include "framework/check.h"
#include "parallel/grid.h"

enum { MAX_WORLD = 16, MAX_LAYOUTS = 64 };
static const int WORLDS[] = {1, 2, 4, 8, 16};
static const int PER_NODE[] = {1, 2, 3, 4, 8, 16};

/* Every (dp, pp, tp) with dp * pp * tp = world, for each world of WORLDS. */
static int all_layouts(GridShape *out) {
    int n = 0;
    for (size_t w = 0; w < sizeof WORLDS / sizeof WORLDS[0]; w++)
        for (int dp = 1; dp <= WORLDS[w]; dp++)
            for (int pp = 1; pp <= WORLDS[w]; pp++)
                for (int tp = 1; tp <= WORLDS[w]; tp++)
                    if (dp * pp * tp == WORLDS[w]) out[n++] = (GridShape){dp, pp, tp};
    return n;
}

/* The definition: the ranks counted out with d slowest and t fastest. */
typedef struct {
    int world;
    int coord[MAX_WORLD][GRID_AXES];
} Layout;

static void define(GridShape s, Layout *l) {
    l->world = 0;
    for (int d = 0; d < s.dp; d++)
        for (int p = 0; p < s.pp; p++)
            for (int t = 0; t < s.tp; t++) {
                l->coord[l->world][GRID_DATA] = d, l->coord[l->world][GRID_PIPE] = p;
                l->coord[l->world][GRID_TENSOR] = t;
                l->world++;
            }
}

/* Ranks r and q in the same group of axis a: the same coordinates off a. */
static bool same_group(const Layout *l, GridAxis a, int r, int q) {
    for (int b = 0; b < GRID_AXES; b++)
        if (b != (int)a && l->coord[r][b] != l->coord[q][b]) return false;
    return true;
}

static void name(GridShape s, char *out, size_t cap) {
    snprintf(out, cap, "%d x %d x %d", s.dp, s.pp, s.tp);
}

static int check_layouts_counted(void) {
    GridShape shapes[MAX_LAYOUTS];
    /* ordered factorisations of 2^k into 3 factors: (k + 2 choose 2) = 1, 3, 6, 10, 15 */
    const int n = all_layouts(shapes);
    return expect_true(n == 35, "%d layouts of 1, 2, 4, 8, 16 ranks, want 1 + 3 + 6 + 10 + 15 = 35", n)
               ? CHECK_PASS : CHECK_FAIL;
}

static int check_coordinates(void) {
    GridShape shapes[MAX_LAYOUTS];
    const int n = all_layouts(shapes);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const GridShape s = shapes[i];
        Layout l;
        define(s, &l);
        char what[32];
        name(s, what, sizeof what);
        for (int r = 0; r < l.world; r++) {
            int c[GRID_AXES];
            grid_coords(s, r, c);
            ok = ok && expect_true(memcmp(c, l.coord[r], sizeof c) == 0, "%s: rank %d at (%d, %d, %d), "
                                   "want (%d, %d, %d)", what, r, c[0], c[1], c[2], l.coord[r][0],
                                   l.coord[r][1], l.coord[r][2]);
            ok = ok && expect_true(grid_rank(s, l.coord[r]) == r, "%s: (%d, %d, %d) is rank %d, want %d",
                                   what, c[0], c[1], c[2], grid_rank(s, l.coord[r]), r);
            if (s.tp == 1) /* lesson 07's layout: rank r is stage r % P of pipeline r / P */
                ok = ok && expect_true(c[GRID_PIPE] == r % s.pp && c[GRID_DATA] == r / s.pp,
                                       "%s: rank %d is stage %d of pipeline %d, lesson 07 has %d of %d",
                                       what, r, c[GRID_PIPE], c[GRID_DATA], r % s.pp, r / s.pp);
        }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_groups(void) {
    GridShape shapes[MAX_LAYOUTS];
    const int n = all_layouts(shapes);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const GridShape s = shapes[i];
        Layout l;
        define(s, &l);
        char what[32];
        name(s, what, sizeof what);
        for (int a = 0; a < GRID_AXES && ok; a++) {
            const int size = grid_axis_size(s, (GridAxis)a), groups = grid_groups(s, (GridAxis)a);
            ok = ok && expect_true(groups * size == l.world, "%s: %d %s groups of %d", what, groups,
                                   grid_axis_name((GridAxis)a), size);
            bool used[MAX_WORLD] = {false};
            for (int r = 0; r < l.world && ok; r++) {
                /* the group: every rank that agrees off a, placed at its coordinate on a */
                int want[MAX_WORLD], found = 0, got[MAX_WORLD];
                for (int q = 0; q < l.world; q++)
                    if (same_group(&l, (GridAxis)a, r, q)) want[l.coord[q][a]] = q, found++;
                const int g = grid_group_of(s, (GridAxis)a, r);
                ok = ok && expect_true(found == size && g >= 0 && g < groups, "%s: rank %d in %s group %d "
                                       "of %d with %d members", what, r, grid_axis_name((GridAxis)a),
                                       g, groups, found);
                if (!ok) break;
                used[g] = true;
                grid_group_members(s, (GridAxis)a, g, got);
                for (int k = 0; k < size; k++)
                    ok = ok && expect_true(got[k] == want[k], "%s: %s group of rank %d: member %d is %d, "
                                           "want %d", what, grid_axis_name((GridAxis)a), r, k, got[k], want[k]);
                for (int q = 0; q < l.world; q++) /* the same number exactly for the same group */
                    ok = ok && expect_true((grid_group_of(s, (GridAxis)a, q) == g) ==
                                               same_group(&l, (GridAxis)a, r, q),
                                           "%s: ranks %d and %d %s a %s group", what, r, q,
                                           same_group(&l, (GridAxis)a, r, q) ? "share" : "do not share",
                                           grid_axis_name((GridAxis)a));
            }
            for (int g = 0; g < groups; g++)
                ok = ok && expect_true(used[g], "%s: %s group %d has no rank", what, grid_axis_name((GridAxis)a), g);
        }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_neighbours(void) {
    GridShape shapes[MAX_LAYOUTS];
    const int n = all_layouts(shapes);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const GridShape s = shapes[i];
        Layout l;
        define(s, &l);
        char what[32];
        name(s, what, sizeof what);
        for (int a = 0; a < GRID_AXES; a++)
            for (int r = 0; r < l.world; r++)
                for (int step = -2; step <= 2; step++) {
                    int want = -1; /* the rank of the same group whose coordinate is step further */
                    for (int q = 0; q < l.world; q++)
                        if (same_group(&l, (GridAxis)a, r, q) && l.coord[q][a] == l.coord[r][a] + step)
                            want = q;
                    const int got = grid_neighbour(s, (GridAxis)a, r, step);
                    ok = ok && expect_true(got == want, "%s: %d steps along %s from rank %d: %d, want %d",
                                           what, step, grid_axis_name((GridAxis)a), r, got, want);
                }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

static int check_node_locality(void) {
    GridShape shapes[MAX_LAYOUTS];
    const int n = all_layouts(shapes);
    bool ok = true;
    for (int i = 0; i < n; i++) {
        const GridShape s = shapes[i];
        Layout l;
        define(s, &l);
        char what[32];
        name(s, what, sizeof what);
        for (size_t k = 0; k < sizeof PER_NODE / sizeof PER_NODE[0]; k++) {
            const int per_node = PER_NODE[k];
            for (int a = 0; a < GRID_AXES; a++) {
                bool all_inside = true;
                for (int g = 0; g < grid_groups(s, (GridAxis)a); g++) {
                    int members[MAX_WORLD];
                    grid_group_members(s, (GridAxis)a, g, members);
                    bool want = true; /* every pair of members on one node */
                    for (int q = 0; q < l.world; q++)
                        for (int r = 0; r < l.world; r++)
                            if (same_group(&l, (GridAxis)a, members[0], q) &&
                                same_group(&l, (GridAxis)a, members[0], r))
                                want = want && q / per_node == r / per_node;
                    all_inside = all_inside && want;
                    const bool got = grid_group_inside_node(s, (GridAxis)a, g, per_node);
                    ok = ok && expect_true(got == want, "%s, %d per node: %s group %d %s, want %s", what,
                                           per_node, grid_axis_name((GridAxis)a), g, got ? "inside" : "spans",
                                           want ? "inside" : "spans");
                }
                const bool got = grid_axis_inside_nodes(s, (GridAxis)a, per_node);
                ok = ok && expect_true(got == all_inside, "%s, %d per node: every %s group inside: %d, "
                                       "want %d", what, per_node, grid_axis_name((GridAxis)a), got, all_inside);
            }
            /* why tensor goes fastest: a tensor size that divides the node keeps every
             * tensor group inside one; a larger one never can */
            const bool tensor_inside = grid_axis_inside_nodes(s, GRID_TENSOR, per_node);
            if (per_node % s.tp == 0)
                ok = ok && expect_true(tensor_inside, "%s, %d per node: tensor groups span nodes", what, per_node);
            if (s.tp > per_node)
                ok = ok && expect_true(!tensor_inside, "%s, %d per node: tensor groups inside", what, per_node);
        }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* Every (dp, pp, tp) of sizes 0 .. world + 1 for every world: accepted exactly when it
 * fits (with a 0: when the others' product divides the world), and a 0 filled so. */
static int check_shapes_accepted(void) {
    bool ok = true;
    for (size_t w = 0; w < sizeof WORLDS / sizeof WORLDS[0]; w++) {
        const int W = WORLDS[w];
        for (int dp = -1; dp <= W + 1; dp++)
            for (int pp = -1; pp <= W + 1; pp++)
                for (int tp = -1; tp <= W + 1; tp++) {
                    const int size[3] = {dp, pp, tp};
                    int zeros = 0, negative = 0, product = 1;
                    for (int a = 0; a < 3; a++) {
                        zeros += size[a] == 0, negative += size[a] < 0;
                        product *= size[a] ? size[a] : 1;
                    }
                    const bool fits = !negative && (zeros == 0 ? product == W : zeros == 1 && W % product == 0);
                    GridShape s = {dp, pp, tp};
                    char msg[512] = "";
                    const int got = grid_check_shape(&s, W, msg, sizeof msg);
                    ok = ok && expect_true((got == 0) == fits, "%d x %d x %d on %d ranks: %s, want %s (%s)",
                                           dp, pp, tp, W, got == 0 ? "accepted" : "refused",
                                           fits ? "accepted" : "refused", msg);
                    if (got == 0 && fits)
                        ok = ok && expect_true(s.dp * s.pp * s.tp == W && (!dp || s.dp == dp) &&
                                                   (!pp || s.pp == pp) && (!tp || s.tp == tp),
                                               "%d x %d x %d on %d ranks became %d x %d x %d", dp, pp, tp,
                                               W, s.dp, s.pp, s.tp);
                    if (got != 0)
                        ok = ok && expect_true(strstr(msg, "sizes that divide") != NULL,
                                               "%d x %d x %d on %d ranks: the message says nothing of "
                                               "what divides: %s", dp, pp, tp, W, msg);
                }
    }
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* The message of a refused shape: expect each of the NULL-terminated strings in it. */
static bool refused(GridShape s, int world, ...) {
    char msg[512] = "";
    const GridShape before = s;
    if (!expect_true(grid_check_shape(&s, world, msg, sizeof msg) == -1, "%d x %d x %d on %d ranks "
                     "accepted", before.dp, before.pp, before.tp, world))
        return false;
    bool ok = true;
    va_list ap;
    va_start(ap, world);
    for (const char *want; (want = va_arg(ap, const char *));)
        ok = ok && expect_true(strstr(msg, want) != NULL, "'%s' is not in: %s", want, msg);
    va_end(ap);
    return ok;
}

static int check_refusal_messages(void) {
    bool ok = refused((GridShape){3, 1, 2}, 8, "grid: data 3 x pipeline 1 x tensor 2 is 6 ranks, but the job has 8",
                      "sizes that divide 8: 1, 2, 4, 8", "e.g. data 4 x pipeline 1 x tensor 2", (char *)NULL);
    ok = ok && refused((GridShape){3, 0, 1}, 8, "8 ranks cannot form data 3 x pipeline (what remains) x tensor 1",
                       "3 does not divide 8", "e.g. data 8 x pipeline 1 x tensor 1", (char *)NULL);
    ok = ok && refused((GridShape){0, 0, 2}, 16, "only one size", "1, 2, 4, 8, 16", "e.g. data 8 x pipeline 1 x tensor 2",
                       (char *)NULL);
    ok = ok && refused((GridShape){1, 2, 16}, 8, "tensor size 16, but the job has 8 ranks", "e.g. data 4 x pipeline 2 x tensor 1",
                       (char *)NULL);
    ok = ok && refused((GridShape){1, -2, 1}, 4, "pipeline size -2: sizes are 1 or more", (char *)NULL);
    ok = ok && refused((GridShape){2, 2, 2}, 6, "is 8 ranks, but the job has 6", "1, 2, 3, 6",
                       "e.g. data 3 x pipeline 1 x tensor 2", (char *)NULL);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

/* grid_init on one process: a shape for 2 ranks is the user's error (exit 1). */
static void body_init_too_big(void *arg) {
    (void)arg;
    Dist *world = dist_init(&(DistOptions){.backend = "single"});
    Grid g;
    grid_init(&g, world, (GridShape){.dp = 1, .pp = 2, .tp = 1});
}

static int check_init_refuses(void) {
    ChildResult r;
    run_child(body_init_too_big, NULL, &r);
    return expect_exit("grid_init of 1 x 2 x 1 on one rank", &r, EXIT_USER_ERROR,
                       "grid: pipeline size 2, but the job has 1 rank;",
                       "e.g. data 1 x pipeline 1 x tensor 1", (const char *)NULL)
               ? CHECK_PASS : CHECK_FAIL;
}

/* One rank: three communicators of one rank, each usable; no neighbours. */
static int check_init_single(void) {
    Dist *world = dist_init(&(DistOptions){.backend = "single"});
    Grid g;
    grid_init(&g, world, (GridShape){.dp = 0, .pp = 1, .tp = 1});
    bool ok = expect_true(g.shape.dp == 1 && g.prev_stage == -1 && g.next_stage == -1,
                          "1 rank: data %d, stages before and after %d, %d", g.shape.dp, g.prev_stage,
                          g.next_stage);
    Dist *axes[GRID_AXES] = {g.data, g.pipe, g.tensor};
    for (int a = 0; a < GRID_AXES; a++) {
        Tensor t = tensor_zeros(1, 1);
        t.data[0] = 3.5f;
        dist_all_reduce(axes[a], &t, DIST_SUM);
        const float v = t.data[0];
        tensor_free(&t);
        ok = ok && expect_true(axes[a] && axes[a]->world_size == 1 && axes[a]->rank == 0 && v == 3.5f &&
                                   g.coord[a] == 0 && g.inside_node[a],
                               "the %s axis of one rank", grid_axis_name((GridAxis)a));
    }
    char line[200];
    grid_describe(&g, line, sizeof line);
    ok = ok && expect_true(strcmp(line, "grid: 1 data x 1 pipeline x 1 tensor over 1 rank, 1 per node; "
                                        "tensor groups inside nodes") == 0, "describe: %s", line);
    /* how it reads where tensor groups span nodes (as a 2-node job's communicators say) */
    Dist eight = {.world_size = 8};
    Grid spread = {.shape = {1, 1, 8}, .world = &eight, .per_node = 4};
    grid_describe(&spread, line, sizeof line);
    ok = ok && expect_true(strcmp(line, "grid: 1 data x 1 pipeline x 8 tensor over 8 ranks, 4 per node; "
                                        "tensor groups span nodes") == 0, "describe: %s", line);
    grid_free(&g);
    dist_finalize(world);
    return ok ? CHECK_PASS : CHECK_FAIL;
}

int main(void) {
    check_begin("parallel: the rank grid (no ranks)");
    check_run(NULL, "every layout of 1, 2, 4, 8, 16 ranks: 35", check_layouts_counted, 10);
    check_run(NULL, "coordinates: tensor fastest, data slowest, round trips; tp 1 is lesson 07's", check_coordinates, 10);
    check_run(NULL, "groups of every axis: members in coordinate order, numbered once", check_groups, 10);
    check_run(NULL, "neighbours 1 and 2 steps along every axis, -1 past the ends", check_neighbours, 10);
    check_run(NULL, "groups inside nodes of 1, 2, 3, 4, 8, 16 ranks", check_node_locality, 10);
    check_run(NULL, "shapes accepted exactly when they fit; a 0 takes what remains", check_shapes_accepted, 10);
    check_run(NULL, "shapes refused with the sizes and what divides", check_refusal_messages, 10);
    check_run(NULL, "grid_init: a shape for more ranks than the job has: exit 1", check_init_refuses, 10);
    check_run(NULL, "grid_init on one rank: three communicators of one rank; describe", check_init_single, 10);
    return check_end();
}
