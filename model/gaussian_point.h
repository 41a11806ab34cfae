// The per-point squared error and Gaussian negative log-likelihood and their gradients (loss.h has
// the formulas), shared by the CPU and CUDA backends like bernoulli_gamma_point.h. In double for
// the same reason: the sums run over ~10^6 points.
#pragma once
#include <cmath>

#include "model/host_device.h"

namespace ds::model {

struct SquaredErrorPoint {
  double loss, d_value;
};

DS_HOST_DEVICE inline SquaredErrorPoint squared_error_point(double value, double y) {
  const double e = value - y;
  return {e * e, 2.0 * e};
}

struct GaussianPoint {
  double loss;          // -log N(y; mean, exp(log_var))
  double d_mean;        // d loss / d mean
  double d_log_var;     // d loss / d log variance
};

// The variance is predicted in log space so it stays positive without a constraint; exp(-s)
// multiplies instead of dividing so a large s cannot divide by an underflowed zero.
DS_HOST_DEVICE inline GaussianPoint gaussian_point(double mean, double log_var, double y) {
  const double kLog2Pi = 1.8378770664093454836;
  const double e = y - mean, inv_var = exp(-log_var);
  GaussianPoint r;
  r.loss = 0.5 * (kLog2Pi + log_var + e * e * inv_var);
  r.d_mean = -e * inv_var;
  r.d_log_var = 0.5 * (1.0 - e * e * inv_var);
  return r;
}

}  // namespace ds::model
