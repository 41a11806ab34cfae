// Body of softmax cross-entropy for one row of k logits (Backend::softmax_cross_entropy): the CPU
// runs it per row in a loop, the GPU one thread per row (cuda_kernels.cu), then both sum the rows'
// losses in row order on the host, so they agree to rounding of exp/log.
#pragma once
#include <cmath>

#include "model/host_device.h"

namespace ds::model::kernels {

// Returns -log softmax(z)[label], or -1 (a loss is never negative) when label is not an integer
// in [0, k), in which case dz, if set, is zeroed. With dz, writes (softmax(z) - onehot) * grad_scale
// (grad_scale = 1/n for the mean over a batch). Stable: the row maximum is subtracted before exp,
// and the sum is in double, so 1000 classes with logits of any size neither overflow nor lose
// the small probabilities.
DS_HOST_DEVICE inline double softmax_cross_entropy_row(int k, const float* z, float label, float grad_scale,
                                                       float* dz) {
  const int c = int(label);
  if (!(label >= 0.0f) || float(c) != label || c >= k) {
    if (dz)
      for (int j = 0; j < k; ++j) dz[j] = 0.0f;
    return -1.0;
  }
  float m = z[0];
  for (int j = 1; j < k; ++j) m = z[j] > m ? z[j] : m;
  double s = 0;
  for (int j = 0; j < k; ++j) s += exp(double(z[j]) - m);
  const double log_s = log(s);
  if (dz)
    for (int j = 0; j < k; ++j) dz[j] = float((exp(double(z[j]) - m - log_s) - (j == c ? 1.0 : 0.0)) * grad_scale);
  return log_s - (double(z[c]) - m);
}

}  // namespace ds::model::kernels
