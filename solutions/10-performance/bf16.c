/* TODO 10.7: float32 <-> bfloat16, by hand.
 *
 * bfloat16 is float32's top half: the same sign and 8 exponent bits, 7 of the 23
 * mantissa bits. Going down, the low 16 bits are dropped, and the kept part is rounded
 * to nearest: up when the dropped part is above half (0x8000), down below it, and at
 * exactly half to the even pattern (the kept part's lowest bit 0), as IEEE 754 and every
 * GPU do. Cutting the bits off (truncation) rounds every value towards zero: on average
 * each weight loses half a step, always the same way, and a sum drifts.
 *
 * Work on the integer bits: uint32_t u; memcpy(&u, &x, sizeof u) (and memcpy back for the
 * other way); a pointer cast would break C's aliasing rules. A carry out of the mantissa
 * steps the exponent, and the largest finite value's carry gives the infinity pattern
 * 0x7f80, as it should. A NaN (exponent all ones, mantissa not 0) must stay a NaN, though
 * its mantissa bits may all sit in the low half: test it first. (lib/core/dtype.h holds
 * the library's conversion: that is this TODO's answer, so read it after your check
 * passes; a bf16.c that calls it is refused.) */
#include <string.h>

#include "lesson.h"

uint16_t lesson_bf16_from_f32(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN, quiet */
    const uint32_t lsb = (u >> 16) & 1u; /* at exactly half: up only when the kept part is odd */
    return (uint16_t)((u + 0x7fffu + lsb) >> 16);
}

float lesson_f32_from_bf16(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}
