#include "checkpoint_meta.h"

#include <string.h>

#include "core/image_info.h"
#include "train/checkpoint.h"

uint32_t ckpt_meta_count(void) { return image_info() ? 1 : 0; }

size_t ckpt_meta_size(void) { return image_info() ? 2 + strlen(CKPT_META_IMAGE) + 1 + 8 : 0; }

uint8_t *ckpt_meta_write(uint8_t *p) {
    const ImageInfo *im = image_info();
    if (!im) return p;
    const size_t n = strlen(CKPT_META_IMAGE);
    p[0] = (uint8_t)n, p[1] = 0; /* u16 name length, little-endian */
    memcpy(p + 2, CKPT_META_IMAGE, n);
    p += 2 + n;
    *p++ = CKPT_U64;
    for (int i = 0; i < 8; i++) *p++ = (uint8_t)(im->digest64 >> (8 * i));
    return p;
}

bool ckpt_meta_name(const char *name, int type) {
    return type == CKPT_U64 && strcmp(name, CKPT_META_IMAGE) == 0;
}
