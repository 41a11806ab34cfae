// The masked mean losses: shapes checked and the mean taken here; the per-point math is in
// bernoulli_gamma_point.h / gaussian_point.h and the sums run on the backend.
#include "model/loss.h"

#include <vector>

#include "io/error.h"

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

double masked_loss(Backend& be, LossKind kind, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out) {
  const Shape& s = out.shape();
  const std::string what = loss_name(kind) + " loss";
  if (s.c != loss_channels(kind))
    throw Error(what + ": output must have " + std::to_string(loss_channels(kind)) + " channels, got " + s.str());
  if (y.shape() != Shape{s.n, 1, s.h, s.w})
    throw Error(what + ": target " + y.shape().str() + " does not match output " + s.str());
  if (mask.shape() != Shape{1, 1, s.h, s.w})
    throw Error(what + ": mask " + mask.shape().str() + " must be (1, 1, " + std::to_string(s.h) + ", " +
                std::to_string(s.w) + ")");

  // The mean is over valid points: mask points (> 0.5, the backend's rule) times the batch. The
  // mask is one small grid, so counting it on the host costs nothing next to a forward pass.
  int64_t land = 0;
  for (float m : mask.to_host()) land += m > 0.5f;
  if (land == 0) throw InputError(what + ": the mask has no valid (land) points");
  const double count = double(land) * s.n;

  if (d_out) d_out->reshape(s);
  float* d = d_out ? d_out->data() : nullptr;
  double sum = 0;
  switch (kind) {
    case LossKind::kBernoulliGamma: sum = be.bernoulli_gamma_sum(s, out.data(), y.data(), mask.data(), d); break;
    case LossKind::kGaussian: sum = be.gaussian_nll_sum(s, out.data(), y.data(), mask.data(), d); break;
    case LossKind::kMse: sum = be.mse_sum(s, out.data(), y.data(), mask.data(), d); break;
  }
  if (d_out) be.scale(d_out->size(), float(1.0 / count), d_out->data());
  return sum / count;
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
