// 2-D convolution: Keras Conv2D (padding 'same' or 'valid', any stride, bias optional) or
// PyTorch's Conv2d (explicit padding). Weights OIHW (out, in, kh, kw), kernels may be non-square
// (Inception's 1x7 / 7x1); bias (out) when there is one.
#pragma once
#include "model/layers/layer.h"
#include "model/layers/padding.h"

namespace ds::model {

struct Conv2DOptions {
  int stride = 1;
  Padding padding = Padding::kSame;  // kSame: TensorFlow's rule for any stride (total
                                     // max((ceil(in/s)-1)*s + k - in, 0), smaller half top/left)
  int pad = 0;                       // kExplicit: this many rows/cols on every side
  bool bias = true;                  // false: no bias tensor (a batch norm follows), no db
  bool relu = false;                 // fused ReLU, as below
  int glorot_fan_out_channels = 0;   // as below
};

class Conv2D : public Layer {
 public:
  // glorot_fan_out_channels: the output channels Glorot's fan_out counts; 0 means out_c. The
  // MNN head is three 1-channel Keras convs fused into one 3-channel conv, and each of those was
  // initialised with fan_out = 1*kh*kw, so the fused one passes 1 to initialise identically.
  // relu: the ReLU after the conv in this layer (Backend::conv2d_relu_forward; backward masks
  // dout with the output, relu'(x) = [y > 0]): one pass and one activation tensor less.
  Conv2D(std::string name, Backend& be, int in_c, int out_c, int kh, int kw, Padding padding,
         int glorot_fan_out_channels = 0, bool relu = false);
  Conv2D(std::string name, Backend& be, int in_c, int out_c, int kh, int kw, const Conv2DOptions& opt);
  std::string type() const override { return relu_ ? "Conv2D+ReLU" : "Conv2D"; }
  Shape output_shape(const std::vector<Shape>& in) const override;
  void forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) override;
  void backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                const std::vector<Tensor*>& din) override;
  // Through ConvDesc::x16/y16: the backend's convolution reads and writes them directly.
  // (Not a convolution the backend's kernels cannot take them for: Backend::conv_activations16.)
  bool reads_16bit(const Backend& be) const override { return be.conv_activations16(out_c_, opt_.stride); }
  bool writes_16bit(const Backend& be) const override { return be.conv_activations16(out_c_, opt_.stride); }
  // Through ConvDesc::x_block/y_block, each side on its own (the first conv reads the plain
  // image and writes blocked).
  bool reads_blocked() const override { return true; }
  bool writes_blocked() const override { return true; }
  std::vector<Param> params() override;
  int64_t parameter_count() const override;
  void init(std::mt19937_64& rng) override;

  Tensor& weights() { return w_; }
  Tensor& bias() { return b_; }  // empty (size 0) without a bias
  bool relu() const { return relu_; }
  Tensor& weights_grad() { return dw_; }
  Tensor& bias_grad() { return db_; }
  ConvDesc desc(const Shape& in) const;
  // desc(in's shape, upsampled as the subclass says) with x16/y16 and the blocks from the tensors.
  ConvDesc desc(const Shape& conv_in, const Tensor& x, const Tensor& y) const;
  int out_channels() const { return out_c_; }

 private:
  int in_c_, out_c_, kh_, kw_;
  Conv2DOptions opt_;
  int fan_out_c_;
  bool relu_;
  Tensor w_, b_, dw_, db_;
  Tensor d_pre_;  // with relu: the gradient before the ReLU
};

}  // namespace ds::model
