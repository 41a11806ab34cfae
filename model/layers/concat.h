// Concatenation along channels (Keras Concatenate(axis=-1) in NHWC is channels in NCHW). Backward
// hands each input its slice of the gradient.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class Concat : public Layer {
 public:
  using Layer::Layer;
  std::string type() const override { return "Concatenate"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  // 16-bit inputs give a 16-bit output, values moved as they are (Backend::copy_channels16).
  bool reads_16bit(const Backend&) const override { return true; }
  bool writes_16bit(const Backend&) const override { return true; }
  bool same_16bit() const override { return true; }
  // Blocked too: a blocked tensor's channels are multiples of the block, so each input's channel
  // range in the output is one run per sample in either layout (Backend::copy_channels).
  bool reads_blocked() const override { return true; }
  bool writes_blocked() const override { return true; }
  bool same_block() const override { return true; }
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
};

}  // namespace ds::model
