// Fully connected layer (Keras Dense without activation): y = x W^T + b over a flattened input
// (N, in, 1, 1) -> (N, out, 1, 1). Weights (out, in) as PyTorch/oneDNN; bias (out).
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class Dense : public Layer {
 public:
  // glorot_fan_out: the fan_out Glorot counts; 0 means out. DeepESD's three heads are fused into
  // one Dense of 3L outputs and pass L, so each third is initialised as its own Keras layer.
  Dense(std::string name, Backend& be, int in, int out, int glorot_fan_out = 0);
  std::string type() const override { return "Dense"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
  std::vector<Param> params() override;
  int64_t parameter_count() const override;
  void init(std::mt19937_64& rng) override;

  Tensor& weights() { return w_; }
  Tensor& bias() { return b_; }

 private:
  int in_, out_, fan_out_;
  Tensor w_, b_, dw_, db_;
};

}  // namespace ds::model
