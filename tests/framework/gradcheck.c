#include "gradcheck.h"

#include <math.h>
#include <stdio.h>

double weighted_sum(const Tensor *out, const Tensor *R) {
    double s = 0;
    for (int64_t i = 0; i < out->size; i++) s += (double)out->data[i] * R->data[i];
    return s;
}

bool fd_check(const char *what, float *x, const float *analytic, int64_t n, Objective f,
              void *ctx, float eps, double atol, double rtol) {
    return fd_check_sampled(what, x, analytic, n, 1, f, ctx, eps, atol, rtol);
}

bool fd_check_sampled(const char *what, float *x, const float *analytic, int64_t n, int64_t step,
                      Objective f, void *ctx, float eps, double atol, double rtol) {
    int bad = 0;
    int64_t tried = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; i += step > 0 ? step : 1) {
        tried++;
        const float x0 = x[i];
        const float xp = x0 + eps, xm = x0 - eps;
        x[i] = xp;
        double lp = f(ctx);
        x[i] = xm;
        double lm = f(ctx);
        x[i] = x0;
        double num = (lp - lm) / ((double)xp - (double)xm);
        double diff = fabs(num - analytic[i]);
        double tol = atol + rtol * fabs(num);
        if (diff / tol > worst) worst = diff / tol;
        if (!(diff <= tol)) {
            if (bad < 5)
                printf("%s[%lld]: backward %.7g, finite difference %.7g (difference %.3g, "
                       "tolerance %.3g)\n",
                       what, (long long)i, (double)analytic[i], num, diff, tol);
            bad++;
        }
    }
    if (bad) printf("%s: %d of %lld entries wrong\n", what, bad, (long long)tried);
    printf("%s: worst difference %.3f of the tolerance\n", what, worst); /* shown on failure */
    return bad == 0;
}
