// Special functions the loss gradient needs. Header-only and DS_HOST_DEVICE so the CUDA kernel
// uses the same code as the CPU; special_functions.cpp holds the host entry points.
#pragma once
#include <cmath>

#include "model/host_device.h"

namespace ds::model {

// digamma(x) = d/dx lgamma(x), the derivative of the Gamma log-likelihood w.r.t. alpha.
// Neither the C++ standard library nor CUDA's math library provide it.
// Method: the recurrence psi(x) = psi(x+1) - 1/x lifts x to >= 6, where the asymptotic series
//   psi(x) ~ ln x - 1/(2x) - sum_k B_2k / (2k x^2k)
// truncated after x^-14 is accurate to ~1e-13 (the next term is 3617/8160 x^-16 <= 2e-13).
// Negative non-integers use the reflection psi(1-x) - psi(x) = pi cot(pi x); poles give NaN.
DS_HOST_DEVICE inline double digamma_inline(double x) {
  const double kPi = 3.14159265358979323846;
  if (!(x == x)) return x;  // NaN in, NaN out
  double result = 0.0;
  if (x <= 0.0) {
    if (floor(x) == x) return NAN;  // pole at 0, -1, -2, ...
    result -= kPi / tan(kPi * x);
    x = 1.0 - x;
  }
  while (x < 6.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  const double f = 1.0 / (x * x);
  // Bernoulli numbers B2..B14 divided by 2k: 1/12, -1/120, 1/252, -1/240, 1/132, -691/32760, 1/12.
  const double series =
      f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132 - f * (691.0 / 32760 - f * (1.0 / 12)))))));
  return result + log(x) - 0.5 / x - series;
}

// Host entry point (tests, tools).
double digamma(double x);

}  // namespace ds::model
