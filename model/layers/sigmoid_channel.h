// Sigmoid on one channel, identity on the others: the Bernoulli-Gamma head, where channel 0 is
// the rain probability p and channels 1-2 (log alpha, log beta) stay linear.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class SigmoidChannel : public Layer {
 public:
  SigmoidChannel(std::string name, int channel);
  std::string type() const override { return "SigmoidChannel"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;

 private:
  int channel_;
};

}  // namespace ds::model
