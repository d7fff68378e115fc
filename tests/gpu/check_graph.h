/* make check-gpu's CUDA graph part (check_graph.c): steps replayed from graphs against
 * the same steps launched kernel by kernel. */
#ifndef TESTS_GPU_CHECK_GRAPH_H
#define TESTS_GPU_CHECK_GRAPH_H

void check_graph(void);

#endif
