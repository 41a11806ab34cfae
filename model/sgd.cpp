#include "model/sgd.h"

#include "io/error.h"

namespace ds::model {

Sgd::Sgd(std::vector<Param> params, Backend& backend, double momentum)
    : params_(std::move(params)), be_(backend), momentum_(momentum) {
  if (!(momentum >= 0.0 && momentum < 1.0))
    throw UsageError("SGD momentum must be in [0, 1), got " + std::to_string(momentum));
  for (const Param& p : params_) velocity_.emplace_back(be_, p.value->shape());  // zero-filled
}

void Sgd::step(double lr) {
  t_ += 1;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    if (p.grad->shape() != p.value->shape() || velocity_[i].shape() != p.value->shape())
      throw Error("SGD: parameter " + p.name + " changed shape");
    be_.sgd_momentum_update(p.value->size(), p.value->data(), p.grad->data(), velocity_[i].data(), float(lr),
                            float(momentum_));
  }
}

}  // namespace ds::model
