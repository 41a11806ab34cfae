// The masked mean losses: shapes checked and the mean taken here; the per-point math is in
// bernoulli_gamma_point.h / gaussian_point.h and the sums run on the backend.
#include "model/loss.h"

#include <vector>

#include "io/error.h"
#include "model/loss_point_valid.h"

namespace ds::model {

LossKind parse_loss(const std::string& name, const std::string& where) {
  if (name == "bernoulli_gamma") return LossKind::kBernoulliGamma;
  if (name == "gaussian") return LossKind::kGaussian;
  if (name == "mse") return LossKind::kMse;
  throw UsageError(where + ": unknown loss '" + name + "' (expected bernoulli_gamma, gaussian or mse)");
}

std::string loss_name(LossKind kind) {
  switch (kind) {
    case LossKind::kBernoulliGamma: return "bernoulli_gamma";
    case LossKind::kGaussian: return "gaussian";
    case LossKind::kMse: return "mse";
  }
  return "?";
}

int loss_channels(LossKind kind) {
  switch (kind) {
    case LossKind::kBernoulliGamma: return 3;
    case LossKind::kGaussian: return 2;
    case LossKind::kMse: return 1;
  }
  return 0;
}

namespace {
void check_shapes(LossKind kind, const Tensor& out, const Tensor& y, const Tensor& mask) {
  const Shape& s = out.shape();
  const std::string what = loss_name(kind) + " loss";
  if (s.c != loss_channels(kind))
    throw Error(what + ": output must have " + std::to_string(loss_channels(kind)) + " channels, got " + s.str());
  if (y.shape() != Shape{s.n, 1, s.h, s.w})
    throw Error(what + ": target " + y.shape().str() + " does not match output " + s.str());
  if (mask.shape() != Shape{1, 1, s.h, s.w})
    throw Error(what + ": mask " + mask.shape().str() + " must be (1, 1, " + std::to_string(s.h) + ", " +
                std::to_string(s.w) + ")");
}
}  // namespace

double masked_loss(Backend& be, LossKind kind, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out) {
  check_shapes(kind, out, y, mask);
  const Shape& s = out.shape();
  const std::string what = loss_name(kind) + " loss";

  // The mean is over valid points: modelled boxes (mask > 0.5) whose target is a number, the
  // backends' rule (loss_point_valid.h). Mask and targets are small next to the activations, so
  // counting on the host costs little next to a forward pass.
  const std::vector<float> m = mask.to_host(), t = y.to_host();
  int64_t land = 0;
  const int64_t hw = int64_t(s.h) * s.w;
  for (int64_t k = 0; k < hw; ++k) land += m[size_t(k)] > 0.5f;
  if (land == 0) throw InputError(what + ": the mask has no valid (land) points");
  const int64_t valid = count_valid_points(m.data(), t.data(), int64_t(t.size()) / hw, hw);

  if (d_out) d_out->reshape(s);
  float* d = d_out ? d_out->data() : nullptr;
  double sum = 0;
  switch (kind) {
    case LossKind::kBernoulliGamma: sum = be.bernoulli_gamma_sum(s, out.data(), y.data(), mask.data(), d); break;
    case LossKind::kGaussian: sum = be.gaussian_nll_sum(s, out.data(), y.data(), mask.data(), d); break;
    case LossKind::kMse: sum = be.mse_sum(s, out.data(), y.data(), mask.data(), d); break;
  }
  // A batch with no observed target (every modelled box missing that day) has nothing to learn
  // from: loss 0 and zero gradients (the backend zeroed them), not 0/0.
  if (valid == 0) return 0.0;
  const double count = double(valid);
  if (d_out) be.scale(d_out->size(), float(1.0 / count), d_out->data());
  return sum / count;
}

void masked_loss_accumulate(Backend& be, LossKind kind, const Tensor& out, const Tensor& y, const Tensor& mask,
                            int64_t valid, double weight, int64_t step, double* acc, Tensor* d_out) {
  check_shapes(kind, out, y, mask);
  const Shape& s = out.shape();
  if (d_out) d_out->reshape(s);
  be.loss_sum_accumulate(int(kind), s, out.data(), y.data(), mask.data(), d_out ? d_out->data() : nullptr, valid,
                         weight, step, acc);
  if (d_out && valid > 0) be.scale(d_out->size(), float(1.0 / double(valid)), d_out->data());
}

double bernoulli_gamma_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out) {
  return masked_loss(be, LossKind::kBernoulliGamma, out, y, mask, d_out);
}

double gaussian_nll_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out) {
  return masked_loss(be, LossKind::kGaussian, out, y, mask, d_out);
}

double mse_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out) {
  return masked_loss(be, LossKind::kMse, out, y, mask, d_out);
}

}  // namespace ds::model

namespace ds::model {

namespace {

void check_softmax_shapes(const Shape& s, const Tensor& labels, const Tensor* dlogits) {
  if (s.h != 1 || s.w != 1 || s.c < 1)
    throw Error("softmax cross-entropy: logits must be (N, K, 1, 1), got " + s.str());
  if (labels.shape() != Shape{s.n, 1, 1, 1})
    throw Error("softmax cross-entropy: labels must be (" + std::to_string(s.n) + ", 1, 1, 1), got " +
                labels.shape().str());
  if (dlogits && dlogits->shape() != s)
    throw Error("softmax cross-entropy: gradient " + dlogits->shape().str() + " does not match logits " + s.str());
}

}  // namespace

double softmax_cross_entropy(Backend& be, const Tensor& logits, const Tensor& labels, Tensor* dlogits) {
  const Shape& s = logits.shape();
  check_softmax_shapes(s, labels, dlogits);
  return be.softmax_cross_entropy(s.n, s.c, logits.data(), labels.data(), dlogits ? dlogits->data() : nullptr);
}

void softmax_cross_entropy_accumulate(Backend& be, const Tensor& logits, const Tensor& labels, Tensor* dlogits,
                                      int64_t step, double* acc) {
  const Shape& s = logits.shape();
  check_softmax_shapes(s, labels, dlogits);
  be.softmax_cross_entropy_accumulate(s.n, s.c, logits.data(), labels.data(), dlogits ? dlogits->data() : nullptr,
                                      step, acc);
}

}  // namespace ds::model
