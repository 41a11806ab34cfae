// Keras' UpSampling2D(factor, 'nearest') followed by Conv2D(padding='same'), as one layer, so the
// backend can run the pair as a single convolution on the small input (Backend::
// upsample_conv2d_forward: the CPU backend does, with 2.5x fewer FLOPs for MNN's x2 then 8x8).
// Weights, parameter names and initialisation are the Conv2D's: checkpoints are unchanged.
// relu: the ReLU after the conv in this layer too (upsample_conv2d_relu_forward; backward masks
// dout with the output inside upsample_conv2d_backward), as Conv2D's relu: one pass over the
// biggest activations of MNN less each way, and no separate ReLU output to keep.
#pragma once
#include "model/kernels/polyphase_nhwc.h"
#include "model/layers/conv2d.h"

namespace ds::model {

class UpsampleConv2D : public Conv2D {
 public:
  UpsampleConv2D(std::string name, Backend& be, int factor, int in_c, int out_c, int k, bool relu = false);
  std::string type() const override { return relu() ? "UpSampling2D+Conv2D+ReLU" : "UpSampling2D+Conv2D"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
  // The input shape after upsampling, which the convolution sees.
  Shape upsampled(const Shape& in) const { return Shape{in.n, in.c, in.h * factor_, in.w * factor_}; }
  int factor() const { return factor_; }
  // Only as one convolution on the small input (factor > 1): the plain composition upsamples
  // and masks in FP32 (upsample_conv_default.cpp).
  // The small convolution has out_c * factor^2 output channels (what the backend's kernels see);
  // the backend's checks also see the upsampled one's out_c, so both must take them.
  // NHWC 16-bit activations go through the fused polyphase interleave only, whose tile holds up
  // to kMaxPhaseF phases a side (model/kernels/polyphase_nhwc.h): a larger factor reads and
  // writes FP32 there (the CUDA backend would otherwise refuse the 16-bit operand at its forward).
  bool reads_16bit(const Backend& be) const override {
    return factor_ > 1 && (!be.activations16_nhwc() || factor_ <= kernels::kMaxPhaseF) &&
           be.conv_activations16(out_channels() * factor_ * factor_, 1) && be.conv_activations16(out_channels(), 1);
  }
  bool writes_16bit(const Backend& be) const override { return reads_16bit(be); }
  // The polyphase kernels (de)interleave NCHW planes: plain tensors only.
  bool reads_blocked() const override { return false; }
  bool writes_blocked() const override { return false; }

 private:
  // The backend's scratch for the op (upsample_conv2d_scratch forward,
  // upsample_conv2d_backward_scratch backward): the upsampled input where the backend composes
  // upsample and conv, the masked gradient where it masks separately (the CPU with relu), nothing
  // on the GPU. Grown to the larger of the two when needed, kept across calls.
  float* scratch(int64_t floats);
  int factor_;
  Tensor scratch_;
};

}  // namespace ds::model
