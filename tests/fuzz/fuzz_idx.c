/* libFuzzer target: one IDX file, plain or gzip-compressed, through dataset_parse_idx
 * (lib/data/idx.c) as an image file and as a label file. Seeds: the IDX files the unit
 * tests write (tests/unit/test_data.c). */
#include "fuzz/idx_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_idx_file(data, size);
    return 0;
}
