/* Included first by the environment files: no fused multiply-add in them.
 *
 * The build passes -ffp-contract=fast (a*b+c as one FMA, faster for the layers), but an
 * environment must do Gymnasium's arithmetic step for step: Python rounds every product
 * before the sum, so a fused one would change the last bits and, over a few hundred
 * steps of a chaotic system (Acrobot), the trajectory. */
#ifndef RL_EXACT_FP_H
#define RL_EXACT_FP_H

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#endif
