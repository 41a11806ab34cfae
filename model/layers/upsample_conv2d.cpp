#include "model/layers/upsample_conv2d.h"

#include "io/error.h"

namespace ds::model {

UpsampleConv2D::UpsampleConv2D(std::string name, Backend& be, int factor, int in_c, int out_c, int k)
    : Conv2D(std::move(name), be, in_c, out_c, k, k, Padding::kSame),
      factor_(factor),
      scratch_(be, Shape{0, 0, 0, 0}) {
  if (factor < 1) throw Error("layer " + this->name() + ": upsampling factor must be >= 1");
}

Shape UpsampleConv2D::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  return Conv2D::output_shape({upsampled(in[0])});
}

float* UpsampleConv2D::scratch(Backend& be, const ConvDesc& d) {
  const int64_t n = be.upsample_conv2d_scratch(d, factor_);
  if (n > scratch_.size()) scratch_.reshape(Shape{1, 1, 1, int(n)});
  return scratch_.data();
}

void UpsampleConv2D::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  const ConvDesc d = desc(upsampled(in[0]->shape()));
  be.upsample_conv2d_forward(d, factor_, in[0]->data(), weights().data(), bias().data(), out.data(), scratch(be, d));
}

void UpsampleConv2D::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/,
                              const Tensor& dout, const std::vector<Tensor*>& din) {
  const ConvDesc d = desc(upsampled(in[0]->shape()));
  float* s = scratch(be, d);
  be.upsample_conv2d_backward_weights(d, factor_, in[0]->data(), dout.data(), weights_grad().data(),
                                      bias_grad().data(), s);
  if (din[0]) be.upsample_conv2d_backward_data(d, factor_, dout.data(), weights().data(), din[0]->data(), s);
}

}  // namespace ds::model
