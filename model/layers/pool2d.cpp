#include "model/layers/pool2d.h"

#include "io/error.h"

namespace ds::model {

Pool2D::Pool2D(std::string name, PoolKind kind, int k, int stride, Padding padding, int pad)
    : Layer(std::move(name)), kind_(kind), k_(k), stride_(stride), padding_(padding), pad_(pad) {
  if (k < 1 || stride < 1) throw Error("layer " + this->name() + ": pool size and stride must be >= 1");
  // A window made only of padding would have no real cell to take a max or a mean of.
  if (padding == Padding::kExplicit && (pad < 0 || pad >= k))
    throw Error("layer " + this->name() + ": explicit pool padding must be in [0, k)");
}

PoolDesc Pool2D::desc(const Shape& in) const {
  PoolDesc d;
  d.in = in;
  d.k = k_;
  d.stride = stride_;
  d.kind = kind_;
  resolve_padding(padding_, pad_, in.h, k_, stride_, d.pad_top, d.pad_bottom);
  resolve_padding(padding_, pad_, in.w, k_, stride_, d.pad_left, d.pad_right);
  return d;
}

Shape Pool2D::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  const PoolDesc d = desc(in[0]);
  if (in[0].h + d.pad_top + d.pad_bottom < k_ || in[0].w + d.pad_left + d.pad_right < k_)
    throw Error("layer " + name() + ": pool window " + std::to_string(k_) + " is larger than its input " +
                in[0].str());
  return d.out();
}

void Pool2D::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  PoolDesc d = desc(in[0]->shape());
  d.block = common_block(*in[0], out);
  be.pool2d_forward(d, in[0]->data(), out.data());
}

void Pool2D::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/, const Tensor& dout,
                      const std::vector<Tensor*>& din) {
  if (!din[0]) return;
  PoolDesc d = desc(in[0]->shape());
  d.block = common_block(*in[0], *din[0]);
  be.pool2d_backward(d, in[0]->data(), dout.data(), din[0]->data());
}

}  // namespace ds::model
