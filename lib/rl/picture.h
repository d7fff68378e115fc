/* Pictures out of frames: an animated GIF (Debian's giflib, libgif-dev: HAVE_GIF) and a
 * PNG (stb_image_write from libstb-dev: HAVE_STB). A build without the library stops at
 * the first such call with a message that says what to install (exit status 1).
 *
 *   GifWriter *gif = gif_open("episode.gif", 600, 400, 2);    // 2/100 s per frame
 *   for (...) { env_render(&env, &frame); gif_add_frame(gif, &frame); }
 *   gif_close(gif);
 *
 * Frames are stored losslessly when they have at most 256 colours (the environments'
 * pictures have a handful); others are reduced to 3-3-2 bits of red, green and blue. */
#ifndef RL_PICTURE_H
#define RL_PICTURE_H

#include <stdbool.h>

#include "rl/raster.h"

typedef struct GifWriter GifWriter;

/* delay_cs: hundredths of a second per frame (browsers show less than 2 as 10). The
 * animation loops. A file that cannot be created stops with the reason (exit status 1). */
GifWriter *gif_open(const char *path, int width, int height, int delay_cs);
void gif_add_frame(GifWriter *gif, const Image *frame); /* the size given to gif_open */
void gif_close(GifWriter *gif);                         /* finishes the file */

void png_write(const char *path, const Image *img);

/* Whether this build can write them (make config: giflib, stb_image). */
bool picture_have_gif(void);
bool picture_have_png(void);

/* img shrunk by a whole factor, each pixel the mean of a factor x factor block (the edge
 * that does not fill a block is dropped). */
Image image_downscale(const Image *img, int factor);

#endif
