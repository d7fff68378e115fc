#include "rl/raster.h"

#include <math.h>
#include <string.h>

#include "core/check.h"

enum { MAX_CROSSINGS = 64 }; /* edges a scan line can cross: polygons here have <= 16 */

Image image_create(int width, int height) {
    CHECK(width > 0 && height > 0 && width <= 16384 && height <= 16384,
          "image_create: size %d x %d is not in 1..16384", width, height);
    Image img = {width, height, xcalloc((size_t)width * (size_t)height * 3, 1)};
    return img;
}

void image_free(Image *img) {
    xfree(img->pixels);
    img->pixels = NULL;
    img->width = img->height = 0;
}

void image_fill(Image *img, Rgb color) {
    size_t n = (size_t)img->width * (size_t)img->height;
    uint8_t *p = img->pixels;
    for (size_t i = 0; i < n; i++, p += 3) {
        p[0] = color.r;
        p[1] = color.g;
        p[2] = color.b;
    }
}

Rgb image_pixel(const Image *img, int x, int y) {
    CHECK(x >= 0 && x < img->width && y >= 0 && y < img->height,
          "image_pixel: (%d, %d) is outside the %d x %d image", x, y, img->width, img->height);
    const uint8_t *p = img->pixels + ((size_t)y * (size_t)img->width + (size_t)x) * 3;
    Rgb c = {p[0], p[1], p[2]};
    return c;
}

/* Pixels x0..x1-1 of row y, clipped. */
static void fill_span(Image *img, int y, int x0, int x1, Rgb color) {
    if (y < 0 || y >= img->height) return;
    if (x0 < 0) x0 = 0;
    if (x1 > img->width) x1 = img->width;
    if (x0 >= x1) return;
    uint8_t *p = img->pixels + ((size_t)y * (size_t)img->width + (size_t)x0) * 3;
    for (int x = x0; x < x1; x++, p += 3) {
        p[0] = color.r;
        p[1] = color.g;
        p[2] = color.b;
    }
}

/* The first pixel centre at or right of x: pixel i covers centres with x_left <= i < x_right. */
static int first_centre(double x) {
    double c = ceil(x);
    if (c < -1.0) return -1;
    if (c > 32767.0) return 32767;
    return (int)c;
}

void draw_polygon(Image *img, const float *xy, int n, Rgb color) {
    CHECK(n >= 3 && n <= MAX_CROSSINGS, "draw_polygon: %d corners (3..%d)", n, MAX_CROSSINGS);
    double ymin = xy[1], ymax = xy[1];
    for (int k = 1; k < n; k++) {
        ymin = fmin(ymin, xy[2 * k + 1]);
        ymax = fmax(ymax, xy[2 * k + 1]);
    }
    if (!(ymin == ymin) || !(ymax == ymax)) return; /* NaN corners: nothing to draw */
    int row0 = first_centre(ymin), row1 = first_centre(ymax);
    if (row0 < 0) row0 = 0;
    if (row1 > img->height) row1 = img->height;
    double cross[MAX_CROSSINGS];
    for (int y = row0; y < row1; y++) {
        int m = 0;
        for (int k = 0; k < n; k++) {
            double xa = xy[2 * k], ya = xy[2 * k + 1];
            double xb = xy[2 * ((k + 1) % n)], yb = xy[2 * ((k + 1) % n) + 1];
            /* half-open in y, so a corner on the scan line counts once */
            if ((ya <= y && y < yb) || (yb <= y && y < ya))
                cross[m++] = xa + (y - ya) * (xb - xa) / (yb - ya);
        }
        for (int i = 1; i < m; i++) { /* insertion sort: a handful of crossings */
            double v = cross[i];
            int j = i - 1;
            for (; j >= 0 && cross[j] > v; j--) cross[j + 1] = cross[j];
            cross[j + 1] = v;
        }
        for (int i = 0; i + 1 < m; i += 2)
            fill_span(img, y, first_centre(cross[i]), first_centre(cross[i + 1]), color);
    }
}

void draw_line(Image *img, float x0, float y0, float x1, float y1, float width, Rgb color) {
    double dx = (double)x1 - x0, dy = (double)y1 - y0, len = sqrt(dx * dx + dy * dy);
    double h = 0.5 * width;
    double ux = 1.0, uy = 0.0; /* along the segment; a point becomes a square */
    if (len > 0) {
        ux = dx / len;
        uy = dy / len;
    }
    /* the rectangle around the segment, extended by h at both ends */
    double ax = x0 - ux * h, ay = y0 - uy * h, bx = x1 + ux * h, by = y1 + uy * h;
    double nx = -uy * h, ny = ux * h;
    float quad[8] = {(float)(ax + nx), (float)(ay + ny), (float)(bx + nx), (float)(by + ny),
                     (float)(bx - nx), (float)(by - ny), (float)(ax - nx), (float)(ay - ny)};
    draw_polygon(img, quad, 4, color);
}

void draw_polygon_outline(Image *img, const float *xy, int n, float width, Rgb color) {
    for (int k = 0; k < n; k++) {
        int k1 = (k + 1) % n;
        draw_line(img, xy[2 * k], xy[2 * k + 1], xy[2 * k1], xy[2 * k1 + 1], width, color);
    }
}

void draw_circle(Image *img, float cx, float cy, float radius, Rgb color) {
    if (!(radius >= 0)) return;
    int y0 = first_centre((double)cy - radius), y1 = (int)floor((double)cy + radius) + 1;
    if (y0 < 0) y0 = 0;
    if (y1 > img->height) y1 = img->height;
    double r2 = (double)radius * radius;
    for (int y = y0; y < y1; y++) {
        double dy = y - (double)cy, half = r2 - dy * dy;
        if (half < 0) continue;
        half = sqrt(half);
        /* centres with |x - cx| <= half: both ends in */
        fill_span(img, y, first_centre(cx - half), (int)floor(cx + half) + 1, color);
    }
}
