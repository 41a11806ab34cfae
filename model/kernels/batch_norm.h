// Bodies of the batch-norm kernels (NCHW, statistics per channel over N*H*W = m elements). The
// per-channel sums are block reductions on the GPU (model/cuda/cuda_ops.cu): what is shared here
// is each element's term; the elementwise apply and data gradient are whole bodies. The GPU uses
// 1/sqrtf (not rsqrtf) so both sides evaluate the same expression. See elementwise.h.
#pragma once
#include <cmath>
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// Offset of element j (of the channel's m) of channel ch.
DS_HOST_DEVICE inline int64_t bn_channel_offset(int64_t j, int64_t hw, int c, int ch) {
  return ((j / hw) * c + ch) * hw + j % hw;
}

// Element j's terms of dgamma (dy * xhat) and dbeta (dy).
DS_HOST_DEVICE inline void bn_param_grad_terms(int64_t j, int64_t hw, int c, int ch, const float* x, const float* dy,
                                               float mean, double inv_std, double& dgamma_term, double& dbeta_term) {
  const int64_t o = bn_channel_offset(j, hw, c, ch);
  dbeta_term = dy[o];
  dgamma_term = dy[o] * (x[o] - mean) * inv_std;
}

// y = gamma (x - mean) / sqrt(var + eps) + beta.
DS_HOST_DEVICE inline void bn_apply_at(int64_t i, int c, int64_t hw, const float* x, const float* gamma,
                                       const float* beta, const float* mean, const float* var, float eps, float* y) {
  const int ch = int(i / hw % c);
  y[i] = gamma[ch] * (x[i] - mean[ch]) * (1.0f / sqrtf(var[ch] + eps)) + beta[ch];
}

// dx = gamma inv_std / m (m dy - dbeta - xhat dgamma).
DS_HOST_DEVICE inline void bn_data_grad_at(int64_t i, int c, int64_t hw, int64_t m, const float* x, const float* dy,
                                           const float* gamma, const float* mean, const float* var, float eps,
                                           const float* dgamma, const float* dbeta, float* dx) {
  const int ch = int(i / hw % c);
  const float inv_std = 1.0f / sqrtf(var[ch] + eps);
  const float xhat = (x[i] - mean[ch]) * inv_std;
  dx[i] = gamma[ch] * inv_std / float(m) * (float(m) * dy[i] - dbeta[ch] - xhat * dgamma[ch]);
}

}  // namespace ds::model::kernels
