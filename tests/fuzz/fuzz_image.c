/* libFuzzer target: one image file of an image-folder data set through the checks in
 * front of stb_image and stb_image itself (lib/data/image_decode.h): its shape, then
 * decoded into floats of that shape. A smaller pixel limit than the default keeps each
 * run fast (the same code; only the number differs). A header that the checks read
 * differently from stb_image is reported as a finding (abort): the length checks rest on
 * reading it the same way. Seeds: the images the unit tests write
 * (tests/unit/test_image_folder.c). Built only with stb_image. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "data/image_decode.h"

#define FUZZ_MAX_PIXELS ((int64_t)1 << 16) /* 256 x 256 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char msg[FS_MSG_MAX] = "";
    ImageShape shape;
    if (image_read_shape(data, size, "fuzz-image", FUZZ_MAX_PIXELS, &shape, msg, sizeof msg) != 0) {
        if (!msg[0] || strstr(msg, " here but ")) abort();
        return 0;
    }
    size_t n = (size_t)shape.channels * (size_t)shape.height * (size_t)shape.width;
    float *dst = malloc(n * sizeof(float));
    if (!dst) abort();
    if (image_decode(data, size, "fuzz-image", FUZZ_MAX_PIXELS, &shape, "fuzz-image", dst, msg,
                     sizeof msg) == 0) {
        for (size_t i = 0; i < n; i++)
            if (!(dst[i] >= 0.0f && dst[i] <= 1.0f)) abort(); /* pixels are bytes / 255 */
    } else if (!msg[0] || strstr(msg, " here but ")) {
        abort();
    }
    free(dst);
    return 0;
}
