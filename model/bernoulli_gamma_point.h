// The Bernoulli-Gamma negative log-likelihood of one grid point and its gradient (loss.h has the
// formula). Shared by the CPU and CUDA backends (DS_HOST_DEVICE) so both compute the same thing.
// Evaluated in double: the loss sums ~10^6 terms and lgamma/digamma lose digits in float.
#pragma once
#include <cmath>

#include "model/host_device.h"
#include "model/special_functions.h"

namespace ds::model {

// The eps of the reference implementation, inside every log, lgamma and the y/b term.
constexpr double kBernoulliGammaEpsD = 1e-6;

struct BernoulliGammaPoint {
  double loss;          // -log-likelihood of the point
  double d_p;           // d loss / d p            (p after the sigmoid)
  double d_log_alpha;   // d loss / d log(alpha)
  double d_log_beta;    // d loss / d log(beta)
};

// Only call for valid (land) points: y must be a number >= 0 there.
DS_HOST_DEVICE inline BernoulliGammaPoint bernoulli_gamma_point(double p, double log_alpha, double log_beta,
                                                               double y) {
  const double eps = kBernoulliGammaEpsD;
  BernoulliGammaPoint r;
  if (y > 0.0) {
    // Wet: log p + log Gamma(y; alpha, scale beta). alpha and beta are predicted in log space so
    // they stay positive; the chain rule through exp gives the factors a and b below.
    const double a = exp(log_alpha), b = exp(log_beta);
    const double log_y = log(y + eps), log_b = log(b + eps);
    r.loss = -(log(p + eps) + (a - 1.0) * log_y - a * log_b - lgamma(a + eps) - y / (b + eps));
    r.d_p = -1.0 / (p + eps);
    r.d_log_alpha = -a * (log_y - log_b - digamma_inline(a + eps));
    r.d_log_beta = a * b / (b + eps) - y * b / ((b + eps) * (b + eps));
  } else {
    // Dry: only the Bernoulli part; alpha and beta get no gradient.
    r.loss = -log(1.0 - p + eps);
    r.d_p = 1.0 / (1.0 - p + eps);
    r.d_log_alpha = 0.0;
    r.d_log_beta = 0.0;
  }
  return r;
}

}  // namespace ds::model
