// Stochastic gradient descent with momentum, as Keras' SGD (nesterov off):
//   v = momentum v - lr g;  w = w + v.
// (PyTorch folds lr in after the velocity, v = mu v + g; w -= lr v, which differs once lr
// changes between steps; Keras' form is kept for comparability with the reference runs.)
// momentum 0 is plain SGD.
#pragma once
#include <vector>

#include "model/optimizer.h"

namespace ds::model {

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<Param> params, Backend& backend, double momentum = 0.9);
  std::string name() const override { return "sgd"; }
  void step(double lr) override;
  std::vector<Slot> slots() override { return {{"sgd/velocity", &velocity_}}; }
  std::vector<Tensor>& velocity() { return velocity_; }

 private:
  std::vector<Param> params_;
  Backend& be_;
  double momentum_;
  std::vector<Tensor> velocity_;
};

}  // namespace ds::model
