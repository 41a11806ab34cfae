// Adam (Kingma & Ba) with Keras' defaults (beta1 0.9, beta2 0.999, epsilon 1e-7), over the
// parameters of a Net. Moments live on the backend beside the weights.
#pragma once
#include <vector>

#include "model/net.h"

namespace ds::model {

class Adam {
 public:
  Adam(std::vector<Param> params, Backend& backend, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-7);
  // One update with learning rate lr from the gradients currently in the params.
  void step(double lr);
  int64_t steps() const { return t_; }
  // First and second moments by parameter, same order and names as the params (for checkpoints).
  std::vector<Tensor>& m() { return m_; }
  std::vector<Tensor>& v() { return v_; }
  void set_steps(int64_t t) { t_ = t; }

 private:
  std::vector<Param> params_;
  Backend& be_;
  double b1_, b2_, eps_;
  int64_t t_ = 0;
  std::vector<Tensor> m_, v_;
};

}  // namespace ds::model
