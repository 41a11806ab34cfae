// Inverted dropout (Keras Dropout): in training each element is zeroed with probability `rate`
// and the survivors scaled by 1/(1-rate); inference is the identity. The mask is a function of
// (the step's seed, this layer's name, the element) — model/counter_rng.h — so a resumed run
// draws the same masks and backward reuses the forward's mask.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class Dropout : public Layer {
 public:
  Dropout(std::string name, Backend& be, float rate);
  std::string type() const override { return "Dropout"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
  void set_mode(const ForwardMode& mode) override { mode_ = mode; }
  const Tensor& mask() const { return mask_; }

 private:
  float rate_;
  uint64_t name_hash_;
  ForwardMode mode_;
  Tensor mask_;
};

}  // namespace ds::model
