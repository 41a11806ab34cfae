#include "model/layers/flatten.h"

namespace ds::model {

Shape Flatten::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  return Shape{in[0].n, in[0].c * in[0].h * in[0].w, 1, 1};
}

void Flatten::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  be.copy(out.data(), in[0]->data(), out.size());
}

void Flatten::backward(Backend& be, const std::vector<const Tensor*>& /*in*/, const Tensor& /*out*/,
                       const Tensor& dout, const std::vector<Tensor*>& din) {
  if (din[0]) be.copy(din[0]->data(), dout.data(), dout.size());
}

}  // namespace ds::model
