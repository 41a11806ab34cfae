#include "model/layers/relu.h"

namespace ds::model {

Shape ReLU::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  return in[0];
}

void ReLU::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  common_block(*in[0], out);
  be.relu_forward(out.size(), in[0]->data(), out.data());
}

void ReLU::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/, const Tensor& dout,
                    const std::vector<Tensor*>& din) {
  // The gradient is dy where x > 0 and 0 elsewhere (at x == 0 too, as TensorFlow does).
  if (din[0]) be.relu_backward(dout.size(), in[0]->data(), dout.data(), din[0]->data());
}

}  // namespace ds::model
