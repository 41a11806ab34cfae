#include "model/layers/global_average_pool.h"

#include <vector>

#include "io/error.h"

namespace ds::model {

Shape GlobalAveragePool::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  if (in[0].size() < 1) throw Error("layer " + name() + " (GlobalAveragePooling2D): empty input " + in[0].str());
  return Shape{in[0].n, in[0].c, 1, 1};
}

void GlobalAveragePool::prepare(Backend& be, int hw) {
  if (hw == hw_) return;
  weights_ = Tensor(be, Shape{1, 1, 1, hw});
  be.fill(weights_.data(), hw, 1.0f / float(hw));
  if (zero_.size() == 0) zero_ = Tensor(be, Shape{1, 1, 1, 1});  // zero-filled: the product's bias
  hw_ = hw;
}

void GlobalAveragePool::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  const Shape& s = in[0]->shape();
  if (in[0]->block() > 0) {
    be.blocked_global_average_pool_forward(s, in[0]->block(), in[0]->data(), out.data());
    return;
  }
  const int hw = s.h * s.w;
  prepare(be, hw);
  // y (N*C, 1) = x (N*C, hw) w^T, w = (1/hw, ..., 1/hw): every plane's mean.
  be.dense_forward(s.n * s.c, hw, 1, in[0]->data(), weights_.data(), zero_.data(), out.data());
}

void GlobalAveragePool::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/,
                                 const Tensor& dout, const std::vector<Tensor*>& din) {
  if (!din[0]) return;
  const Shape& s = in[0]->shape();
  if (in[0]->block() > 0) {
    be.blocked_global_average_pool_backward(s, common_block(*in[0], *din[0]), dout.data(), din[0]->data());
    return;
  }
  const int hw = s.h * s.w;
  prepare(be, hw);
  // dx (N*C, hw) = dy (N*C, 1) w: each plane gets its output's gradient / hw everywhere.
  be.dense_backward_data(s.n * s.c, hw, 1, dout.data(), weights_.data(), din[0]->data());
}

}  // namespace ds::model
