// Keras' UpSampling2D(factor, 'nearest') followed by Conv2D(padding='same'), as one layer, so the
// backend can run the pair as a single convolution on the small input (Backend::
// upsample_conv2d_forward: the CPU backend does, with 2.5x fewer FLOPs for MNN's x2 then 8x8).
// Weights, parameter names and initialisation are the Conv2D's: checkpoints are unchanged.
#pragma once
#include "model/layers/conv2d.h"

namespace ds::model {

class UpsampleConv2D : public Conv2D {
 public:
  UpsampleConv2D(std::string name, Backend& be, int factor, int in_c, int out_c, int k);
  std::string type() const override { return "UpSampling2D+Conv2D"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
  // The input shape after upsampling, which the convolution sees.
  Shape upsampled(const Shape& in) const { return Shape{in.n, in.c, in.h * factor_, in.w * factor_}; }
  int factor() const { return factor_; }

 private:
  // The backend's scratch for the op (upsample_conv2d_scratch): the upsampled input where the
  // backend composes upsample and conv, nothing on the CPU. Grown when needed, kept across calls.
  float* scratch(Backend& be, const ConvDesc& d);
  int factor_;
  Tensor scratch_;
};

}  // namespace ds::model
