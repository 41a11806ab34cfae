// Per-point bodies of the masked loss sums (Bernoulli-Gamma, MSE, Gaussian): point i of the N*H*W
// targets returns its loss (0 when invalid: mask 0 or NaN target) and writes its gradients when
// d_out is set. On the GPU each thread sums its points' returns and the block reduces them
// (model/cuda/cuda_kernels.cu, cuda_ops.cu); the CPU tests sum the same returns in order.
#pragma once
#include <cstdint>

#include "model/bernoulli_gamma_point.h"
#include "model/gaussian_point.h"
#include "model/host_device.h"
#include "model/loss_point_valid.h"

namespace ds::model::kernels {

// out (N, 3, H, W): p, log alpha, log beta.
DS_HOST_DEVICE inline double bernoulli_gamma_at(int64_t i, int64_t hw, const float* out, const float* y,
                                                const float* mask, float* d_out) {
  const int64_t s = i / hw, k = i % hw;
  const int64_t o = s * 3 * hw + k;
  // Invalid points are skipped, not multiplied by 0: NaN * 0 = NaN. As the CPU loop.
  if (!loss_point_valid(mask[k], y[i])) {
    if (d_out) d_out[o] = d_out[o + hw] = d_out[o + 2 * hw] = 0.0f;
    return 0.0;
  }
  const BernoulliGammaPoint r = bernoulli_gamma_point(out[o], out[o + hw], out[o + 2 * hw], y[i]);
  if (d_out) {
    d_out[o] = float(r.d_p);
    d_out[o + hw] = float(r.d_log_alpha);
    d_out[o + 2 * hw] = float(r.d_log_beta);
  }
  return r.loss;
}

enum MaskedLossKind { kSquaredError = 0, kGaussian = 1 };

// out (N, c, H, W): c = 1 for the squared error (value), 2 for the Gaussian (mean, log variance).
DS_HOST_DEVICE inline double masked_loss_at(int kind, int64_t i, int64_t hw, int c, const float* out, const float* y,
                                            const float* mask, float* d_out) {
  const int64_t s = i / hw, k = i % hw;
  const int64_t o = s * c * hw + k;
  if (!loss_point_valid(mask[k], y[i])) {
    if (d_out)
      for (int ch = 0; ch < c; ++ch) d_out[o + ch * hw] = 0.0f;
    return 0.0;
  }
  if (kind == kSquaredError) {
    const SquaredErrorPoint r = squared_error_point(out[o], y[i]);
    if (d_out) d_out[o] = float(r.d_value);
    return r.loss;
  }
  const GaussianPoint r = gaussian_point(out[o], out[o + hw], y[i]);
  if (d_out) {
    d_out[o] = float(r.d_mean);
    d_out[o + hw] = float(r.d_log_var);
  }
  return r.loss;
}

}  // namespace ds::model::kernels
