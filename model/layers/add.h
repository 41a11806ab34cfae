// Keras Add: the element-wise sum of two or more inputs of one shape (ResNet's residual join).
// Backward hands every input the output's gradient unchanged.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class Add : public Layer {
 public:
  explicit Add(std::string name) : Layer(std::move(name)) {}
  std::string type() const override { return "Add"; }
  // Elementwise: any channel block, one for input and output (Layer::same_block).
  bool reads_blocked() const override { return true; }
  bool writes_blocked() const override { return true; }
  bool same_block() const override { return true; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
};

}  // namespace ds::model
