// DeepESD's last step: its dense heads predict only the land points of the predictand grid, in
// row-major order of the mask. This non-trainable layer places them on the (N, K, H, W) grid
// every loss and `predict` expect, with `fill` at ocean points (which the masked losses skip).
// Backward gathers the land points' gradients back.
#pragma once
#include <cstdint>
#include <vector>

#include "model/layers/layer.h"

namespace ds::model {

class ScatterToGrid : public Layer {
 public:
  // land: the mask, h*w entries, non-zero on land; k: channels (one block of points each).
  ScatterToGrid(std::string name, Backend& be, int k, int h, int w, const std::vector<uint8_t>& land,
                float fill = 0.0f);
  std::string type() const override { return "ScatterToGrid"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
  int points() const { return points_; }

 private:
  int k_, h_, w_, points_ = 0;
  float fill_;
  Tensor index_;  // grid offsets of the land points, as floats (exact: h*w < 2^24 is checked)
};

}  // namespace ds::model
