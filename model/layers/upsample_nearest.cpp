#include "model/layers/upsample_nearest.h"

#include "io/error.h"

namespace ds::model {

UpsampleNearest::UpsampleNearest(std::string name, int factor) : Layer(std::move(name)), factor_(factor) {
  if (factor < 1) throw Error("layer " + this->name() + ": upsampling factor must be >= 1");
}

Shape UpsampleNearest::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  return Shape{in[0].n, in[0].c, in[0].h * factor_, in[0].w * factor_};
}

void UpsampleNearest::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  be.upsample_nearest_forward(in[0]->shape(), factor_, in[0]->data(), out.data());
}

void UpsampleNearest::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/,
                               const Tensor& dout, const std::vector<Tensor*>& din) {
  if (din[0]) be.upsample_nearest_backward(in[0]->shape(), factor_, dout.data(), din[0]->data());
}

}  // namespace ds::model
