// Keras GlobalAveragePooling2D: (N, C, H, W) -> (N, C, 1, 1), each channel's mean over its plane
// (the classification nets' head before the Dense). Computed as a matrix product of the (N*C,
// H*W) input with a constant 1/(H*W) column (Backend::dense_*: oneDNN/cuBLAS), so it needs no
// op of its own on either backend.
#pragma once
#include "model/layers/layer.h"

namespace ds::model {

class GlobalAveragePool : public Layer {
 public:
  explicit GlobalAveragePool(std::string name) : Layer(std::move(name)) {}
  std::string type() const override { return "GlobalAveragePooling2D"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  // A blocked input through Backend::blocked_global_average_pool_*; the (N, C, 1, 1) output is
  // plain (for C a multiple of the block, both orders are the same).
  bool reads_blocked() const override { return true; }
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;

 private:
  void prepare(Backend& be, int hw);  // weights_ = 1/hw (hw floats), zero_ = 0 (one float)
  int hw_ = 0;
  Tensor weights_, zero_;
};

}  // namespace ds::model
