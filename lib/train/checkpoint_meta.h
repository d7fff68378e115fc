/* A checkpoint's metadata: scalars that say where it was written, not what training
 * needs to go on. Today one: "image.digest" (uint64, the first 16 hex digits of the
 * container image's digest, core/image_info.h), written only inside an image. A
 * reader whose manifest lacks a metadata name skips it (any program loads the
 * checkpoint, inside an image or not); a manifest that names it reads it
 * (ckpt_add_u64(&c, CKPT_META_IMAGE, &digest)). checkpoint.c calls these. */
#ifndef TRAIN_CHECKPOINT_META_H
#define TRAIN_CHECKPOINT_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CKPT_META_IMAGE "image.digest"

/* How many metadata scalars this process writes, and their bytes in the file. */
uint32_t ckpt_meta_count(void);
size_t ckpt_meta_size(void);
/* Writes them at p (ckpt_meta_size bytes, the scalars' layout); returns the end. */
uint8_t *ckpt_meta_write(uint8_t *p);
/* Whether a scalar of this name and type in a file is metadata. */
bool ckpt_meta_name(const char *name, int type);

#endif
