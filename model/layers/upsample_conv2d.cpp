#include "model/layers/upsample_conv2d.h"

#include "io/error.h"

namespace ds::model {

UpsampleConv2D::UpsampleConv2D(std::string name, Backend& be, int factor, int in_c, int out_c, int k, bool relu)
    : Conv2D(std::move(name), be, in_c, out_c, k, k, Padding::kSame, 0, relu),
      factor_(factor),
      scratch_(be, Shape{0, 0, 0, 0}) {
  if (factor < 1) throw Error("layer " + this->name() + ": upsampling factor must be >= 1");
}

Shape UpsampleConv2D::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  return Conv2D::output_shape({upsampled(in[0])});
}

float* UpsampleConv2D::scratch(int64_t n) {
  if (n > scratch_.size()) scratch_.reshape(Shape{1, 1, 1, int(n)});
  return scratch_.data();
}

void UpsampleConv2D::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  const ConvDesc d = desc(upsampled(in[0]->shape()), *in[0], out);
  float* s = scratch(be.upsample_conv2d_scratch(d, factor_));
  if (relu())
    be.upsample_conv2d_relu_forward(d, factor_, in[0]->storage(), weights().data(), bias().data(), out.storage(), s);
  else
    be.upsample_conv2d_forward(d, factor_, in[0]->storage(), weights().data(), bias().data(), out.storage(), s);
}

void UpsampleConv2D::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out,
                              const Tensor& dout, const std::vector<Tensor*>& din) {
  const ConvDesc d = desc(upsampled(in[0]->shape()), *in[0], out);
  float* s = scratch(be.upsample_conv2d_backward_scratch(d, factor_, relu()));
  be.upsample_conv2d_backward(d, factor_, in[0]->storage(), relu() ? out.storage() : nullptr, dout.data(),
                              weights().data(), din[0] ? din[0]->data() : nullptr, weights_grad().data(),
                              bias_grad().data(), s);
}

}  // namespace ds::model
