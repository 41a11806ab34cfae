// The mean Bernoulli-Gamma NLL over valid points; the per-point math is in
// bernoulli_gamma_point.h and the sum runs on the backend.
#include "model/loss.h"

#include <vector>

#include "io/error.h"

namespace ds::model {

double bernoulli_gamma_loss(Backend& be, const Tensor& out, const Tensor& y, const Tensor& mask, Tensor* d_out) {
  const Shape& s = out.shape();
  if (s.c != 3) throw Error("Bernoulli-Gamma loss: output must have 3 channels, got " + s.str());
  if (y.shape() != Shape{s.n, 1, s.h, s.w})
    throw Error("Bernoulli-Gamma loss: target " + y.shape().str() + " does not match output " + s.str());
  if (mask.shape() != Shape{1, 1, s.h, s.w})
    throw Error("Bernoulli-Gamma loss: mask " + mask.shape().str() + " must be (1, 1, " + std::to_string(s.h) +
                ", " + std::to_string(s.w) + ")");

  // The mean is over valid points: mask points (> 0.5, the backend's rule) times the batch. The
  // mask is one small grid, so counting it on the host costs nothing next to a forward pass.
  int64_t land = 0;
  for (float m : mask.to_host()) land += m > 0.5f;
  if (land == 0) throw InputError("Bernoulli-Gamma loss: the mask has no valid (land) points");
  const double count = double(land) * s.n;

  if (d_out) d_out->reshape(s);
  const double sum = be.bernoulli_gamma_sum(s, out.data(), y.data(), mask.data(), d_out ? d_out->data() : nullptr);
  if (d_out) be.scale(d_out->size(), float(1.0 / count), d_out->data());
  return sum / count;
}

}  // namespace ds::model
