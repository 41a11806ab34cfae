// Adam as Keras implements it: the bias correction is folded into the learning rate and epsilon
// is added to sqrt(v) uncorrected ("epsilon hat" in the paper), so results match Keras runs.
#include "model/adam.h"

#include <cmath>
#include <unordered_map>

#include "io/error.h"

namespace ds::model {

Adam::Adam(std::vector<Param> params, Backend& backend, double beta1, double beta2, double eps)
    : params_(std::move(params)), be_(backend), b1_(beta1), b2_(beta2), eps_(eps) {
  // A tensor listed twice (tied parameters) would be updated twice a step, and on a GPU, where
  // adam_update_many runs every span in one launch, by two blocks at once: refused here.
  std::unordered_map<const float*, const std::string*> seen;
  for (const Param& p : params_) {
    const auto [at, fresh] = seen.emplace(p.value->data(), &p.name);
    if (!fresh)
      throw Error("Adam: parameters " + *at->second + " and " + p.name +
                  " are the same tensor (tied parameters are not supported: each would be updated twice a step)");
  }
  for (const Param& p : params_) {
    m_.emplace_back(be_, p.value->shape());  // zero-filled
    v_.emplace_back(be_, p.value->shape());
  }
}

void Adam::step(double lr) {
  t_ += 1;
  // In double: b2^t is 1 - 1e-3 t for small t, which float would round badly.
  const double t = double(t_);
  const double lr_t = lr * std::sqrt(1.0 - std::pow(b2_, t)) / (1.0 - std::pow(b1_, t));
  // Every parameter in one call: one launch on a GPU (Backend::adam_update_many).
  spans_.clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    if (p.grad->shape() != p.value->shape() || m_[i].shape() != p.value->shape())
      throw Error("Adam: parameter " + p.name + " changed shape");
    spans_.push_back({p.value->data(), p.grad->data(), m_[i].data(), v_[i].data(), p.value->size()});
  }
  be_.adam_update_many(spans_, float(lr_t), float(b1_), float(b2_), float(eps_));
}

}  // namespace ds::model
