// Keras MaxPooling2D / AveragePooling2D: a k x k window every `stride` pixels, padding 'valid'
// (default), 'same' (TensorFlow's rule, as Conv2D) or explicit (PyTorch's padding=p). Padded
// cells never win a max and are not counted in an average (Keras/TF semantics; PyTorch's
// count_include_pad=False). Backward routes each output's gradient to its window's maximum (max)
// or spreads it evenly over the window's real cells (average).
#pragma once
#include "model/layers/layer.h"
#include "model/layers/padding.h"

namespace ds::model {

class Pool2D : public Layer {
 public:
  Pool2D(std::string name, PoolKind kind, int k, int stride, Padding padding = Padding::kValid, int pad = 0);
  std::string type() const override { return kind_ == PoolKind::kMax ? "MaxPooling2D" : "AveragePooling2D"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  // Through PoolDesc::block.
  bool reads_blocked() const override { return true; }
  bool writes_blocked() const override { return true; }
  bool same_block() const override { return true; }
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;

 private:
  PoolDesc desc(const Shape& in) const;
  PoolKind kind_;
  int k_, stride_;
  Padding padding_;
  int pad_;
};

}  // namespace ds::model
