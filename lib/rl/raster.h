/* A small rasteriser: filled polygons, lines and circles into an RGB image, enough to
 * draw Gymnasium's environment pictures (flat colours, no anti-aliasing).
 *
 * Coordinates are pixels as pygame uses them: x to the right, y down, and pixel (i, j)
 * has its centre at (i, j). A shape covers the pixels whose centres lie inside it
 * (left and top edges in, right and bottom edges out), so two shapes that share an
 * edge never both paint a pixel of it. Everything outside the image is clipped. */
#ifndef RL_RASTER_H
#define RL_RASTER_H

#include <stdint.h>

typedef struct {
    uint8_t r, g, b;
} Rgb;

typedef struct {
    int width, height;
    uint8_t *pixels; /* [height, width, 3]: RGB, row after row from the top */
} Image;

Image image_create(int width, int height); /* filled with black */
void image_free(Image *img);
void image_fill(Image *img, Rgb color);
Rgb image_pixel(const Image *img, int x, int y); /* (x, y) must lie inside */

/* xy: [n, 2], the corners in order (either direction); even-odd rule. */
void draw_polygon(Image *img, const float *xy, int n, Rgb color);
/* The closed outline of a polygon, lines of the given width. */
void draw_polygon_outline(Image *img, const float *xy, int n, float width, Rgb color);
/* A segment of the given width (1: one pixel), square ends at the end points. */
void draw_line(Image *img, float x0, float y0, float x1, float y1, float width, Rgb color);
void draw_circle(Image *img, float cx, float cy, float radius, Rgb color);

#endif
