#include "params.h"

#include <stdio.h>
#include <string.h>

#include "core/check.h"

Param *params_add(ParamList *list, const char *name, int ndim, const int *shape) {
    CHECK(list->values.data == NULL, "parameter '%s' added after params_allocate: add every "
          "parameter first", name);
    CHECK(strlen(name) < PARAM_NAME_MAX, "parameter name '%s' too long", name);
    CHECK(!params_find(list, name), "parameter '%s' added twice", name);
    CHECK(ndim >= 1 && ndim <= TENSOR_MAX_DIMS, "parameter '%s' with %d dimensions", name, ndim);
    if (list->count == list->capacity) {
        int cap = list->capacity ? 2 * list->capacity : 16;
        Param **items = xcalloc((size_t)cap, sizeof *items);
        if (list->count) memcpy(items, list->items, (size_t)list->count * sizeof *items);
        xfree(list->items);
        list->items = items;
        list->capacity = cap;
    }
    Param *p = xcalloc(1, sizeof *p); /* its own allocation: the address never changes */
    snprintf(p->name, sizeof p->name, "%s", name);
    p->value.ndim = p->grad.ndim = ndim;
    int64_t size = 1;
    for (int i = 0; i < ndim; i++) {
        CHECK(shape[i] > 0, "parameter '%s': dimension %d is %d", name, i, shape[i]);
        p->value.shape[i] = p->grad.shape[i] = shape[i];
        size *= shape[i];
    }
    p->value.size = p->grad.size = size;
    p->offset = list->total;
    list->total += size;
    list->items[list->count++] = p;
    return p;
}

/* Points every parameter's value, grad and work at its place in the buffers. */
static void point_views(ParamList *list) {
    for (int i = 0; i < list->count; i++) {
        Param *p = list->items[i];
        p->value.data = list->values.data + p->offset;
        p->grad.data = list->grads.data + p->offset;
        p->value.device = p->grad.device = list->values.device;
        p->work = (Tensor){0};
        if (list->working.raw) { /* the value's shape, the working copy's dtype and data */
            p->work = p->value;
            p->work.dtype = list->working.dtype;
            p->work.bits16 = list->working.bits16 + p->offset;
        }
    }
}

void params_allocate(ParamList *list) {
    CHECK(list->count > 0, "params_allocate of an empty list");
    CHECK(list->values.data == NULL, "params_allocate called twice");
    CHECK(list->total <= INT32_MAX, "%lld parameters do not fit one tensor dimension",
          (long long)list->total);
    list->values = tensor_zeros(1, (int)list->total);
    list->grads = tensor_zeros(1, (int)list->total);
    point_views(list);
}

Param *params_find(ParamList *list, const char *name) {
    for (int i = 0; i < list->count; i++)
        if (strcmp(list->items[i]->name, name) == 0) return list->items[i];
    return NULL;
}

void params_listen(ParamList *list, GradReadyFn fn, void *ctx) {
    CHECK(list->listener_count < PARAM_LISTENERS_MAX, "more than %d listeners to one parameter list",
          PARAM_LISTENERS_MAX);
    list->listeners[list->listener_count].fn = fn;
    list->listeners[list->listener_count++].ctx = ctx;
}

void params_unlisten(ParamList *list, GradReadyFn fn, void *ctx) {
    int k = 0;
    while (k < list->listener_count && (list->listeners[k].fn != fn || list->listeners[k].ctx != ctx)) k++;
    CHECK(k < list->listener_count, "params_unlisten of a listener that never listened");
    for (; k + 1 < list->listener_count; k++) list->listeners[k] = list->listeners[k + 1];
    list->listener_count--;
}

void params_zero_grad(ParamList *list) { tensor_fill(&list->grads, 0.0f); }

int64_t params_count(const ParamList *list) { return list->total; }

void param_uniform(Param *p, float bound, Rng *rng) {
    for (int64_t i = 0; i < p->value.size; i++) p->value.data[i] = rng_uniform_range(rng, -bound, bound);
}

void params_set_layout(ParamList *list, const int64_t *offset, int64_t size) {
    CHECK(list->values.data != NULL, "params_set_layout before params_allocate");
    CHECK(size >= list->total && size <= INT32_MAX, "a layout of %lld scalars for %lld parameters",
          (long long)size, (long long)list->total);
    int64_t end = 0;
    for (int i = 0; i < list->count; i++) {
        const Param *p = list->items[i];
        CHECK(offset[i] >= end && offset[i] + p->value.size <= size, "params_set_layout: '%s' "
              "at %lld overlaps the parameter before it or ends past %lld", p->name,
              (long long)offset[i], (long long)size);
        end = offset[i] + p->value.size;
    }
    const Device device = list->values.device;
    Tensor values = tensor_zeros(1, (int)size);
    Tensor host = device == DEVICE_CPU ? list->values : tensor_to(&list->values, DEVICE_CPU);
    for (int i = 0; i < list->count; i++) {
        const Param *p = list->items[i];
        memcpy(values.data + offset[i], host.data + p->offset, (size_t)p->value.size * sizeof(float));
    }
    if (device != DEVICE_CPU) {
        tensor_free(&host);
        Tensor moved = tensor_to(&values, device);
        tensor_free(&values);
        values = moved;
    }
    tensor_free(&list->values);
    tensor_free(&list->grads);
    list->values = values;
    list->grads = tensor_zeros_like(&values);
    for (int i = 0; i < list->count; i++) list->items[i]->offset = offset[i];
    if (list->working.raw) { /* the new layout's size, made anew from the values */
        const DType dtype = list->working.dtype;
        tensor_free(&list->working);
        list->working = tensor_zeros_typed(device, dtype, 1, (int)size);
        params_refresh_working(list);
    }
    point_views(list);
}

void params_to_device(ParamList *list, Device device) {
    CHECK(list->values.data != NULL, "params_to_device before params_allocate");
    if (list->values.device == device) return;
    Tensor values = tensor_to(&list->values, device);
    Tensor grads = tensor_zeros_like(&values);
    tensor_free(&list->values);
    tensor_free(&list->grads);
    list->values = values;
    list->grads = grads;
    if (list->working.raw) {
        Tensor working = tensor_to(&list->working, device);
        tensor_free(&list->working);
        list->working = working;
    }
    point_views(list);
}

void params_set_working(ParamList *list, DType dtype) {
    CHECK(list->values.data != NULL, "params_set_working before params_allocate");
    CHECK(dtype == DTYPE_BF16 || dtype == DTYPE_F16, "params_set_working(%s): the working copy "
          "is bfloat16 or float16 (float32 training reads the values themselves)",
          dtype_name(dtype));
    tensor_free(&list->working);
    list->working = tensor_zeros_typed(list->values.device, dtype, 1, (int)list->values.size);
    params_refresh_working(list);
    point_views(list);
}

void params_refresh_working(ParamList *list) {
    CHECK(list->working.raw != NULL, "params_refresh_working without a working copy: call "
          "params_set_working first");
    tensor_convert(&list->working, &list->values);
}

void params_free(ParamList *list) {
    tensor_free(&list->values);
    tensor_free(&list->grads);
    tensor_free(&list->working);
    for (int i = 0; i < list->count; i++) xfree(list->items[i]);
    xfree(list->items);
    memset(list, 0, sizeof *list);
}
