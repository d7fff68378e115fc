/* lib/parallel/grid with several ranks: started by tests/dist/run.sh as
 *   mpirun -n 1|2|4|8|16 build/tests/dist/test_grid
 * For every layout dp x pp x tp of the job's ranks, grid_init splits the world and real
 * collectives on each axis's communicator check it against the pure functions (which
 * tests/unit/test_parallel_grid.c checks against the layout's definition): an
 * all-gather of the world ranks over each axis gives the group's members in coordinate
 * order; a sum over the tensor axis, then the pipeline, then data parallel gives each
 * step's partial sums and in the end the sum over the world; the pipeline neighbours
 * answer on the world and on the pipeline's communicator. Rank 0 prints one line per
 * layout and "N passed, M failed". */
#include <stdio.h>
#include <string.h>

#include "dist/dist.h"
#include "dist/rank_checks.h"
#include "parallel/grid.h"

static GridShape g_shape; /* the layout of the check that runs */

/* What each rank adds: different for every rank, exact in float for 16 ranks. */
static float value_of(int rank) { return (float)(rank * rank + 1); }

/* This rank's group of axis a: its members, from the pure functions. */
static int members_of(GridAxis a, int rank, int *members) {
    grid_group_members(g_shape, a, grid_group_of(g_shape, a, rank), members);
    return grid_axis_size(g_shape, a);
}

static bool check_members(const Grid *g, GridAxis a, Dist *comm) {
    int want[64];
    const int n = members_of(a, g->world->rank, want);
    const int got = comm->world_size; /* gathered as it is, to show a wrong group too */
    Tensor mine = tensor_zeros(1, 1), all = tensor_zeros(1, got);
    mine.data[0] = (float)g->world->rank;
    dist_all_gather(comm, &all, &mine);
    bool ok = got == n && comm->rank == g->coord[a];
    for (int k = 0; k < n && ok; k++) ok = all.data[k] == (float)want[k];
    if (!ok) {
        fprintf(stderr, "rank %d: the %s group (rank %d of %d there, coordinate %d) is", g->world->rank,
                grid_axis_name(a), comm->rank, got, g->coord[a]);
        for (int k = 0; k < got; k++) fprintf(stderr, " %g", (double)all.data[k]);
        fprintf(stderr, "; want");
        for (int k = 0; k < n; k++) fprintf(stderr, " %d", want[k]);
        fprintf(stderr, "\n");
    }
    tensor_free(&mine), tensor_free(&all);
    return ok;
}

/* The sum over the tensor axis, then the pipeline, then data: after each step every
 * rank holds the sum over the ranks that share its remaining coordinates. */
static bool check_nested_sums(const Grid *g) {
    const int rank = g->world->rank, W = g->world->world_size;
    Tensor t = tensor_zeros(1, 1), whole = tensor_zeros(1, 1);
    t.data[0] = whole.data[0] = value_of(rank);
    dist_all_reduce(g->world, &whole, DIST_SUM);
    Dist *steps[GRID_AXES] = {g->tensor, g->pipe, g->data};
    const GridAxis axes[GRID_AXES] = {GRID_TENSOR, GRID_PIPE, GRID_DATA};
    bool ok = true;
    for (int k = 0; k < GRID_AXES; k++) {
        dist_all_reduce(steps[k], &t, DIST_SUM);
        double want = 0; /* the ranks that agree with this one on the axes not summed yet */
        int mine[GRID_AXES], other[GRID_AXES];
        grid_coords(g->shape, rank, mine);
        for (int q = 0; q < W; q++) {
            grid_coords(g->shape, q, other);
            bool same = true;
            for (int j = k + 1; j < GRID_AXES; j++) same = same && other[axes[j]] == mine[axes[j]];
            if (same) want += value_of(q);
        }
        if (t.data[0] != (float)want) {
            fprintf(stderr, "rank %d: after the sum over %s: %g, want %g\n", rank, grid_axis_name(axes[k]),
                    (double)t.data[0], want);
            ok = false;
        }
    }
    if (t.data[0] != whole.data[0]) {
        fprintf(stderr, "rank %d: the three sums give %g, the world's %g\n", rank, (double)t.data[0],
                (double)whole.data[0]);
        ok = false;
    }
    tensor_free(&t), tensor_free(&whole);
    return ok;
}

/* Each stage sends its world rank to the next and receives the previous one's, once on
 * the world (prev_stage, next_stage) and once on the pipeline (coordinates +-1). */
static bool check_neighbours(const Grid *g) {
    const int rank = g->world->rank, p = g->coord[GRID_PIPE], P = g->shape.pp;
    bool ok = g->prev_stage == grid_neighbour(g->shape, GRID_PIPE, rank, -1) &&
              g->next_stage == grid_neighbour(g->shape, GRID_PIPE, rank, +1) &&
              (g->prev_stage == -1) == (p == 0) && (g->next_stage == -1) == (p == P - 1);
    Tensor out = tensor_zeros(1, 1), in = tensor_zeros(1, 1);
    out.data[0] = (float)rank;
    for (int on_pipe = 0; on_pipe < 2; on_pipe++) {
        Dist *d = on_pipe ? g->pipe : g->world;
        const int to = on_pipe ? (p + 1 < P ? p + 1 : -1) : g->next_stage;
        const int from = on_pipe ? p - 1 : g->prev_stage;
        in.data[0] = -1;
        dist_sendrecv(d, to >= 0 ? &out : NULL, to, from >= 0 ? &in : NULL, from);
        if (in.data[0] != (float)g->prev_stage) {
            fprintf(stderr, "rank %d, stage %d of %d: heard %g from the stage before on the %s, want %d\n",
                    rank, p, P, (double)in.data[0], on_pipe ? "pipeline" : "world", g->prev_stage);
            ok = false;
        }
    }
    tensor_free(&out), tensor_free(&in);
    return ok;
}

static bool check_layout(Dist *world) {
    Grid g;
    grid_init(&g, world, g_shape);
    bool ok = true;
    Dist *comm[GRID_AXES] = {g.data, g.pipe, g.tensor};
    for (int a = 0; a < GRID_AXES; a++) {
        ok = check_members(&g, (GridAxis)a, comm[a]) && ok;
        ok = g.inside_node[a] && ok; /* one host: every group on one node */
    }
    ok = check_nested_sums(&g) && ok;
    ok = check_neighbours(&g) && ok;
    char line[200], want[200];
    grid_describe(&g, line, sizeof line);
    snprintf(want, sizeof want, "grid: %d data x %d pipeline x %d tensor over %d rank%s, %d per node; "
             "tensor groups inside nodes", g_shape.dp, g_shape.pp, g_shape.tp, world->world_size,
             world->world_size == 1 ? "" : "s", world->local_size);
    if (strcmp(line, want) != 0) {
        fprintf(stderr, "rank %d: '%s', want '%s'\n", world->rank, line, want);
        ok = false;
    }
    grid_free(&g);
    return ok;
}

int main(int argc, char **argv) {
    (void)argc, (void)argv;
    g_dist = dist_init(&(DistOptions){.backend = "mpi", .timeout_s = 60});
    const int W = g_dist->world_size;
    for (int dp = 1; dp <= W; dp++)
        for (int pp = 1; pp <= W; pp++)
            for (int tp = 1; tp <= W; tp++) {
                if (dp * pp * tp != W) continue;
                g_shape = (GridShape){dp, pp, tp};
                char name[160];
                snprintf(name, sizeof name, "grid %d x %d x %d: members of every group (all-gather), "
                         "tensor-pipeline-data sums, stage neighbours", dp, pp, tp);
                run(name, check_layout);
            }
    const int status = rank_checks_end();
    dist_finalize(g_dist);
    return status;
}
