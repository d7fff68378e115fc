#include "params.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"

Param *params_add(ParamList *list, const char *name, int ndim, const int *shape) {
    CHECK(list->count < PARAMS_MAX, "more than %d parameter tensors", PARAMS_MAX);
    CHECK(strlen(name) < PARAM_NAME_MAX, "parameter name '%s' too long", name);
    CHECK(!params_find(list, name), "parameter '%s' added twice", name);
    CHECK(ndim >= 1 && ndim <= TENSOR_MAX_DIMS, "parameter '%s' with %d dimensions", name, ndim);
    Param *p = &list->items[list->count++];
    snprintf(p->name, sizeof p->name, "%s", name);
    int s[TENSOR_MAX_DIMS] = {1, 1, 1, 1};
    for (int i = 0; i < ndim; i++) s[i] = shape[i];
    p->value = tensor_zeros(ndim, s[0], s[1], s[2], s[3]);
    p->grad = tensor_zeros_like(&p->value);
    return p;
}

Param *params_find(ParamList *list, const char *name) {
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->items[i].name, name) == 0) return &list->items[i];
    return NULL;
}

void params_zero_grad(ParamList *list) {
    for (int i = 0; i < list->count; i++) tensor_fill(&list->items[i].grad, 0.0f);
}

int64_t params_count(const ParamList *list) {
    int64_t n = 0;
    for (int i = 0; i < list->count; i++) n += list->items[i].value.size;
    return n;
}

void params_free(ParamList *list) {
    for (int i = 0; i < list->count; i++) {
        tensor_free(&list->items[i].value);
        tensor_free(&list->items[i].grad);
    }
    list->count = 0;
}
