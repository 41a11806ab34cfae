// The masked losses the trainer can use, each averaged over valid (land) points only, with the
// network's output channels it expects (the model's head is built to match: models.cpp).
//
// Bernoulli-Gamma negative log-likelihood (Cannon 2008; Baño-Medina et al. 2020), exactly as the
// reference Keras implementation computes it; out channels [p, log alpha, log beta]:
//   L = -mean_{valid} [ (1-r) log(1-p+eps) + r ( log(p+eps) + (a-1) log(y+eps)
//                       - a log(b+eps) - lgamma(a+eps) - y/(b+eps) ) ],   r = [y > 0]
// with a = exp(log_alpha), b = exp(log_beta), eps = 1e-6.
//
// Gaussian negative log-likelihood (temperature-like targets); out channels [mean, s = log var]:
//   L = mean_{valid} 0.5 ( log(2 pi) + s + (y - mean)^2 exp(-s) )
// (the full NLL, constant included, so its values compare with other likelihoods).
//
// Mean squared error; out channel [value]:  L = mean_{valid} (value - y)^2   (Keras' 'mse').
#pragma once
#include <cstdint>
#include <string>

#include "model/backend.h"
#include "model/loss_point_valid.h"
#include "model/tensor.h"

namespace ds::model {

constexpr float kBernoulliGammaEps = 1e-6f;

enum class LossKind { kBernoulliGamma, kGaussian, kMse };

// "bernoulli_gamma", "gaussian", "mse" (the config's train.loss and ModelSpec::loss); throws
// UsageError naming `where` for anything else.
LossKind parse_loss(const std::string& name, const std::string& where = "loss");
std::string loss_name(LossKind kind);
int loss_channels(LossKind kind);  // 3, 2, 1

// out: (N,C,H,W) network output with C = loss_channels; y: (N,1,H,W) target; mask: (1,1,H,W)
// with 1 on land, 0 elsewhere (shared by every sample). Valid points are those with mask 1 and a
// finite target (a NaN target is a day the box was not observed, and masked points may hold NaN
// too): the others add nothing and get zero gradient. Returns the mean over valid points (0
// when there is none). If d_out is non-null, writes dL/d(out) into it.
double masked_loss(Backend& be, LossKind kind, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out);

// The training step's form, without the host waiting: `valid` is the batch's count of valid
// points, counted on the host when the batch was read (count_valid_points), so neither mask nor
// targets are downloaded, and the mean loss times `weight` is added into acc (2 doubles in
// backend memory: acc[0] the sum, acc[1] the first step whose loss was not finite, < 0 none;
// Backend::loss_sum_accumulate). d_out as masked_loss.
void masked_loss_accumulate(Backend& be, LossKind kind, const Tensor& out, const Tensor& y, const Tensor& mask,
                            int64_t valid, double weight, int64_t step, double* acc, Tensor* d_out);

// Valid points (loss_point_valid) of `rows` targets of hw points each, under the (hw) land mask:
// the store's (uint8_t) or a mask tensor's values on the host (float).
template <class Mask>
int64_t count_valid_points(const Mask* mask, const float* y, int64_t rows, int64_t hw) {
  // Row by row, not i % hw per point: the 64-bit division per point made it ~4x slower (1.6
  // against 0.43 ms for MNN's batch of 32 x 117 x 209 on a 2-vCPU EPYC), on the host, per batch.
  int64_t valid = 0;
  for (int64_t r = 0; r < rows; ++r, y += hw)
    for (int64_t k = 0; k < hw; ++k) valid += loss_point_valid(float(mask[k]), y[k]);
  return valid;
}

// Softmax cross-entropy for classification (the benchmark nets): logits (N, K, 1, 1), labels
// (N, 1, 1, 1) holding class indices as floats. Returns the MEAN loss over the batch (one sync);
// if dlogits is not null it gets d(mean)/d(logits) = (softmax - onehot) / N. Numerically stable
// (each row's maximum is subtracted before exp). Throws ds::Error on mismatched shapes or a label
// outside [0, K).
double softmax_cross_entropy(Backend& be, const Tensor& logits, const Tensor& labels, Tensor* dlogits);
// The same without the host waiting: the mean loss is added into the loss record `acc` (two
// doubles in backend memory, model/loss_accumulator.h) for step `step`, read when needed
// (Backend::softmax_cross_entropy_accumulate). The shapes are checked as above.
void softmax_cross_entropy_accumulate(Backend& be, const Tensor& logits, const Tensor& labels, Tensor* dlogits,
                                      int64_t step, double* acc);

double bernoulli_gamma_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out);
double gaussian_nll_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out);
double mse_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out);

}  // namespace ds::model
