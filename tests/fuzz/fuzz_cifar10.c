/* libFuzzer target: one CIFAR-10 batch file through dataset_parse_cifar10
 * (lib/data/cifar10.c). Seeds: the batches the unit tests write (tests/unit/test_data.c). */
#include <stdint.h>
#include <stdlib.h>

#include "core/fs.h"
#include "data/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char msg[FS_MSG_MAX];
    Dataset d;
    if (dataset_parse_cifar10(data, size, "fuzz.bin", &d, msg, sizeof msg) == 0) dataset_free(&d);
    else if (!msg[0]) abort(); /* an error must say what */
    return 0;
}
