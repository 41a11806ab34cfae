// max(x, 0), elementwise. A separate layer (not fused into the conv) so each op is testable alone.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class ReLU : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "ReLU"; }
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
