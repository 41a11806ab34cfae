// Bernoulli-Gamma negative log-likelihood (Cannon 2008; Baño-Medina et al. 2020), exactly as the
// reference Keras implementation computes it, averaged over valid (land) points only:
//   L = -mean_{valid} [ (1-r) log(1-p+eps) + r ( log(p+eps) + (a-1) log(y+eps)
//                       - a log(b+eps) - lgamma(a+eps) - y/(b+eps) ) ],   r = [y > 0]
// with a = exp(log_alpha), b = exp(log_beta), eps = 1e-6.
#pragma once
#include "model/backend.h"
#include "model/tensor.h"

namespace ds::model {

constexpr float kBernoulliGammaEps = 1e-6f;

// out: (N,3,H,W) network output [p, log_alpha, log_beta]; y: (N,1,H,W) target (>= 0);
// mask: (1,1,H,W) with 1 on land, 0 elsewhere (shared by every sample).
// Returns the mean loss. If d_out is non-null, writes dL/d(out) into it (same shape as out).
double bernoulli_gamma_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out);

}  // namespace ds::model
