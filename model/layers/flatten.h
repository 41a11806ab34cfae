// Keras Flatten: (N, C, H, W) -> (N, C*H*W, 1, 1), in NCHW order (channel-major). Keras flattens
// NHWC, so a Dense after it sees the same features in another order; weights are not exchanged
// with Keras, so only the set matters. A copy, not a view: the Net owns every activation.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class Flatten : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "Flatten"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
};

}  // namespace ds::model
