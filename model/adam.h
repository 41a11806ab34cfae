// Adam (Kingma & Ba) with Keras' defaults (beta1 0.9, beta2 0.999, epsilon 1e-7), over the
// parameters of a Net. Moments live on the backend beside the weights.
#pragma once
#include <vector>

#include "model/optimizer.h"

namespace ds::model {

class Adam : public Optimizer {
 public:
  Adam(std::vector<Param> params, Backend& backend, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-7);
  std::string name() const override { return "adam"; }
  // One update with learning rate lr from the gradients currently in the params.
  void step(double lr) override;
  std::vector<Slot> slots() override { return {{"adam/m", &m_}, {"adam/v", &v_}}; }
  // First and second moments by parameter, same order and names as the params (for checkpoints).
  std::vector<Tensor>& m() { return m_; }
  std::vector<Tensor>& v() { return v_; }

 private:
  std::vector<Param> params_;
  Backend& be_;
  double b1_, b2_, eps_;
  std::vector<Tensor> m_, v_;
  std::vector<Backend::AdamSpan> spans_;  // step's list, kept to reuse its storage
};

}  // namespace ds::model
