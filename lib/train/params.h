/* A model's parameters and their gradients as one named list (a "state dict").
 * The optimiser, the gradient all-reduce and the checkpoint each walk this one
 * list, so none of them needs to know the model. Names follow PyTorch's
 * state_dict ("conv1.weight", "fc2.bias"). */
#ifndef TRAIN_PARAMS_H
#define TRAIN_PARAMS_H

#include <stdint.h>

#include "core/tensor.h"

enum { PARAMS_MAX = 64, PARAM_NAME_MAX = 48 };

typedef struct {
    char name[PARAM_NAME_MAX];
    Tensor value;
    Tensor grad; /* same shape; backward passes add into it */
} Param;

typedef struct {
    Param items[PARAMS_MAX];
    int count;
} ParamList;

/* Adds a zero-filled parameter of the given shape; returns it (stable address). */
Param *params_add(ParamList *list, const char *name, int ndim, const int *shape);
Param *params_find(ParamList *list, const char *name);
void params_zero_grad(ParamList *list);
int64_t params_count(const ParamList *list); /* number of scalars */
void params_free(ParamList *list);

#endif
