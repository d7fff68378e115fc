#include "image_info.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

static bool parse(const char *text, ImageInfo *im) {
    memset(im, 0, sizeof *im);
    for (const char *line = text; *line;) {
        const size_t n = strcspn(line, "\n");
        if (n > 7 && strncmp(line, "digest ", 7) == 0 && n - 7 == 71 && strncmp(line + 7, "sha256:", 7) == 0) {
            memcpy(im->digest, line + 7, 71);
            if (strspn(im->digest + 7, "0123456789abcdef") != 64) return false;
        } else if (n > 7 && strncmp(line, "commit ", 7) == 0 && n - 7 < sizeof im->commit) {
            memcpy(im->commit, line + 7, n - 7);
        }
        line += n + (line[n] == '\n');
    }
    if (!im->digest[0]) return false;
    char hex[17];
    memcpy(hex, im->digest + 7, 16);
    hex[16] = '\0';
    im->digest64 = strtoull(hex, NULL, 16);
    return true;
}

const ImageInfo *image_info(void) {
    static ImageInfo info;
    static int state; /* 0: not read yet, 1: in an image, 2: not */
    if (state == 0) {
        const char *path = getenv("COURSE_IMAGE_INFO");
        if (!path) path = IMAGE_INFO_PATH;
        uint8_t *bytes = NULL;
        size_t len;
        char msg[FS_MSG_MAX];
        state = 2;
        if (*path && fs_is_regular_file(path) &&
            fs_read_file(path, 1 << 16, &bytes, &len, msg, sizeof msg) == 0) {
            if (parse((const char *)bytes, &info)) state = 1;
            free(bytes);
        }
    }
    return state == 1 ? &info : NULL;
}
