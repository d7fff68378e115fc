#include "rl/picture.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/check.h"
#include "core/fs.h"

#ifdef HAVE_GIF
#include <gif_lib.h>
#endif
#ifdef HAVE_STB
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#endif

bool picture_have_gif(void) {
#ifdef HAVE_GIF
    return true;
#else
    return false;
#endif
}

bool picture_have_png(void) {
#ifdef HAVE_STB
    return true;
#else
    return false;
#endif
}

Image image_downscale(const Image *img, int factor) {
    CHECK(factor >= 1 && factor <= img->width && factor <= img->height,
          "image_downscale: factor %d for a %d x %d image", factor, img->width, img->height);
    Image out = image_create(img->width / factor, img->height / factor);
    for (int y = 0; y < out.height; y++)
        for (int x = 0; x < out.width; x++)
            for (int c = 0; c < 3; c++) {
                int sum = 0;
                for (int dy = 0; dy < factor; dy++)
                    for (int dx = 0; dx < factor; dx++)
                        sum += img->pixels[(((size_t)y * factor + dy) * img->width + (size_t)x * factor + dx) * 3 + c];
                out.pixels[((size_t)y * out.width + x) * 3 + c] = (uint8_t)((sum + factor * factor / 2) / (factor * factor));
            }
    return out;
}

#ifdef HAVE_GIF

enum { TABLE = 1024 }; /* open addressing for up to 256 colours */

typedef struct {
    uint32_t keys[TABLE];  /* 0xRRGGBB */
    uint16_t slots[TABLE]; /* 0: empty, else the colour's index + 1 */
} ColourTable;

struct GifWriter {
    GifFileType *file;
    char *path;
    int width, height, delay_cs;
    uint8_t *indices;   /* [width]: one row of colour indices */
    ColourTable table; /* the colours of the frame being written */
};

static __attribute__((noreturn)) void gif_fail(const char *path, const char *what, int code) {
    fatal("cannot write the GIF %s (%s: %s): is its directory there, writable and not full?", path, what,
          GifErrorString(code));
}

GifWriter *gif_open(const char *path, int width, int height, int delay_cs) {
    CHECK(width > 0 && height > 0 && width <= 65535 && height <= 65535, "gif_open: size %d x %d", width, height);
    CHECK(delay_cs >= 0 && delay_cs <= 65535, "gif_open: delay %d", delay_cs);
    /* our own open, not EGifOpenFileName: that one makes the file 0600 (a GIF to share
     * must be readable: 0666 less the umask, as a PNG's) and follows a planted link */
    char msg[FS_MSG_MAX];
    int fd = fs_create(path, 0, 0666, msg, sizeof msg);
    if (fd < 0) fatal("cannot write the GIF: %s", msg);
    int err = 0;
    GifFileType *file = EGifOpenFileHandle(fd, &err);
    if (!file) gif_fail(path, "open", err);
    EGifSetGifVersion(file, true); /* GIF89a: delays and looping */
    if (EGifPutScreenDesc(file, width, height, 8, 0, NULL) == GIF_ERROR) gif_fail(path, "header", file->Error);
    /* Netscape's extension: loop for ever */
    static const GifByteType netscape[11] = {'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0'};
    static const GifByteType loop[3] = {1, 0, 0};
    if (EGifPutExtensionLeader(file, APPLICATION_EXT_FUNC_CODE) == GIF_ERROR ||
        EGifPutExtensionBlock(file, sizeof netscape, netscape) == GIF_ERROR ||
        EGifPutExtensionBlock(file, sizeof loop, loop) == GIF_ERROR || EGifPutExtensionTrailer(file) == GIF_ERROR)
        gif_fail(path, "loop extension", file->Error);
    GifWriter *g = xcalloc(1, sizeof *g);
    g->file = file;
    g->path = xstrdup(path);
    g->width = width;
    g->height = height;
    g->delay_cs = delay_cs;
    g->indices = xcalloc((size_t)width, 1);
    return g;
}

static int colour_slot(const ColourTable *t, uint32_t key) {
    uint32_t h = (key * 2654435761u) >> 22;
    while (t->slots[h] && t->keys[h] != key) h = (h + 1) & (TABLE - 1);
    return (int)h;
}

static uint32_t colour_key(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }

/* The frame's colours into map (returns how many), or -1 when there are more than 256. */
static int collect_colours(const Image *img, ColourTable *t, GifColorType *map) {
    memset(t->slots, 0, sizeof t->slots);
    int n = 0;
    size_t count = (size_t)img->width * img->height;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = img->pixels + 3 * i;
        uint32_t key = colour_key(p);
        int h = colour_slot(t, key);
        if (t->slots[h]) continue;
        if (n == 256) return -1;
        t->keys[h] = key;
        t->slots[h] = (uint16_t)(n + 1);
        map[n].Red = p[0];
        map[n].Green = p[1];
        map[n].Blue = p[2];
        n++;
    }
    return n;
}

void gif_add_frame(GifWriter *g, const Image *frame) {
    CHECK(frame->width == g->width && frame->height == g->height,
          "gif_add_frame: a %d x %d frame for a %d x %d GIF", frame->width, frame->height, g->width, g->height);
    GraphicsControlBlock gcb = {.DisposalMode = DISPOSE_DO_NOT, .UserInputFlag = false,
                                .DelayTime = g->delay_cs, .TransparentColor = NO_TRANSPARENT_COLOR};
    GifByteType ext[4];
    size_t len = EGifGCBToExtension(&gcb, ext);
    if (EGifPutExtension(g->file, GRAPHICS_EXT_FUNC_CODE, (int)len, ext) == GIF_ERROR)
        gif_fail(g->path, "frame delay", g->file->Error);

    ColourTable *table = &g->table;
    GifColorType colours[256];
    int n = collect_colours(frame, table, colours);
    bool exact = n >= 0;
    if (!exact) { /* 3-3-2 bits: every colour has its place */
        n = 256;
        for (int i = 0; i < 256; i++) {
            colours[i].Red = (GifByteType)((i >> 5) * 255 / 7);
            colours[i].Green = (GifByteType)(((i >> 2) & 7) * 255 / 7);
            colours[i].Blue = (GifByteType)((i & 3) * 255 / 3);
        }
    }
    int size = 2; /* a colour map's size is a power of two */
    while (size < n) size *= 2;
    ColorMapObject *map = GifMakeMapObject(size, NULL);
    CHECK(map != NULL, "gif_add_frame: out of memory");
    memcpy(map->Colors, colours, (size_t)n * sizeof colours[0]);
    if (EGifPutImageDesc(g->file, 0, 0, g->width, g->height, false, map) == GIF_ERROR)
        gif_fail(g->path, "frame header", g->file->Error);
    for (int y = 0; y < g->height; y++) {
        const uint8_t *row = frame->pixels + (size_t)y * g->width * 3;
        for (int x = 0; x < g->width; x++) {
            const uint8_t *p = row + 3 * x;
            if (exact) {
                g->indices[x] = (uint8_t)(table->slots[colour_slot(table, colour_key(p))] - 1);
            } else {
                g->indices[x] = (uint8_t)((p[0] >> 5) << 5 | (p[1] >> 5) << 2 | (p[2] >> 6));
            }
        }
        if (EGifPutLine(g->file, g->indices, g->width) == GIF_ERROR) gif_fail(g->path, "pixels", g->file->Error);
    }
    GifFreeMapObject(map);
}

void gif_close(GifWriter *g) {
    int err = 0;
    if (EGifCloseFile(g->file, &err) == GIF_ERROR) gif_fail(g->path, "close", err);
    xfree(g->path);
    xfree(g->indices);
    xfree(g);
}

#else /* no giflib */

static __attribute__((noreturn)) void no_gif(const char *path) {
    fatal("cannot write the GIF %s: this build has no giflib: sudo apt-get install libgif-dev (or sudo make "
          "deps), then make",
          path);
}
GifWriter *gif_open(const char *path, int width, int height, int delay_cs) {
    (void)width, (void)height, (void)delay_cs;
    no_gif(path);
}
void gif_add_frame(GifWriter *gif, const Image *frame) {
    (void)gif, (void)frame;
    no_gif("(none)");
}
void gif_close(GifWriter *gif) {
    (void)gif;
    no_gif("(none)");
}

#endif

#ifdef HAVE_STB
static void png_chunk(void *context, void *data, int size) { fwrite(data, 1, (size_t)size, context); }
#endif

void png_write(const char *path, const Image *img) {
#ifdef HAVE_STB
    char msg[FS_MSG_MAX];
    FILE *f = fs_fopen_write(path, 0, msg, sizeof msg); /* never through a link */
    if (!f) fatal("cannot write the PNG: %s", msg);
    errno = 0;
    int ok = stbi_write_png_to_func(png_chunk, f, img->width, img->height, 3, img->pixels, img->width * 3);
    ok = !ferror(f) && ok;
    if (fclose(f) != 0) ok = 0;
    if (!ok)
        fatal("cannot write the PNG %s (%s): is its directory there, writable and not full?", path,
              errno ? strerror(errno) : "stb_image_write failed");
#else
    (void)img;
    fatal("cannot write the PNG %s: this build has no stb_image_write: sudo apt-get install libstb-dev (or "
          "sudo make deps), then make",
          path);
#endif
}
