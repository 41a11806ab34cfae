#include "model/layers/conv2d.h"

#include <cmath>

#include "io/error.h"

namespace ds::model {

namespace {
Conv2DOptions legacy_options(Padding padding, int glorot_fan_out_channels, bool relu) {
  Conv2DOptions o;
  o.padding = padding;
  o.glorot_fan_out_channels = glorot_fan_out_channels;
  o.relu = relu;
  return o;
}
}  // namespace

Conv2D::Conv2D(std::string name, Backend& be, int in_c, int out_c, int kh, int kw, Padding padding,
               int glorot_fan_out_channels, bool relu)
    : Conv2D(std::move(name), be, in_c, out_c, kh, kw, legacy_options(padding, glorot_fan_out_channels, relu)) {}

Conv2D::Conv2D(std::string name, Backend& be, int in_c, int out_c, int kh, int kw, const Conv2DOptions& opt)
    : Layer(std::move(name)),
      in_c_(in_c),
      out_c_(out_c),
      kh_(kh),
      kw_(kw),
      opt_(opt),
      fan_out_c_(opt.glorot_fan_out_channels > 0 ? opt.glorot_fan_out_channels : out_c),
      relu_(opt.relu),
      w_(be, Shape{out_c, in_c, kh, kw}),
      dw_(be, Shape{out_c, in_c, kh, kw}),
      d_pre_(be, Shape{1, 1, 1, 1}) {
  if (in_c < 1 || out_c < 1 || kh < 1 || kw < 1) throw Error("layer " + this->name() + ": bad conv geometry");
  if (opt.stride < 1) throw Error("layer " + this->name() + ": conv stride must be >= 1");
  if (opt.padding == Padding::kExplicit && opt.pad < 0)
    throw Error("layer " + this->name() + ": negative explicit padding");
  if (opt.bias) {
    b_ = Tensor(be, Shape{1, out_c, 1, 1});
    db_ = Tensor(be, Shape{1, out_c, 1, 1});
  }
}

ConvDesc Conv2D::desc(const Shape& in) const {
  ConvDesc d;
  d.in = in;
  d.out_c = out_c_;
  d.kh = kh_;
  d.kw = kw_;
  d.stride = opt_.stride;
  resolve_padding(opt_.padding, opt_.pad, in.h, kh_, opt_.stride, d.pad_top, d.pad_bottom);
  resolve_padding(opt_.padding, opt_.pad, in.w, kw_, opt_.stride, d.pad_left, d.pad_right);
  return d;
}

ConvDesc Conv2D::desc(const Shape& conv_in, const Tensor& x, const Tensor& y) const {
  ConvDesc d = desc(conv_in);
  d.x16 = x.is_16bit();
  d.y16 = y.is_16bit();
  d.x_block = x.block();
  d.y_block = y.block();
  return d;
}

Shape Conv2D::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  if (in[0].c != in_c_)
    throw Error("layer " + name() + " expects " + std::to_string(in_c_) + " channels, got " + in[0].str());
  return desc(in[0]).out();
}

void Conv2D::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  const ConvDesc d = desc(in[0]->shape(), *in[0], out);
  if (relu_)
    be.conv2d_relu_forward(d, in[0]->storage(), w_.data(), b_.data(), out.storage());
  else
    be.conv2d_forward(d, in[0]->storage(), w_.data(), b_.data(), out.storage());
}

void Conv2D::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& out, const Tensor& dout,
                      const std::vector<Tensor*>& din) {
  // With the ReLU, y > 0 exactly where the pre-activation is: its gradient masks dout (into
  // d_pre_) from the output, inside the backend's one backward op.
  if (relu_) d_pre_.reshape(dout.shape());
  be.conv2d_backward(desc(in[0]->shape(), *in[0], out), in[0]->storage(), relu_ ? out.storage() : nullptr,
                     dout.data(), w_.data(), din[0] ? din[0]->data() : nullptr, dw_.data(), db_.data(),
                     relu_ ? d_pre_.data() : nullptr);
}

std::vector<Param> Conv2D::params() {
  if (!opt_.bias) return {{name() + "/W", &w_, &dw_}};
  return {{name() + "/W", &w_, &dw_}, {name() + "/b", &b_, &db_}};
}

int64_t Conv2D::parameter_count() const { return w_.size() + b_.size(); }  // b_ is empty without a bias

void Conv2D::init(std::mt19937_64& rng) {
  // Keras' glorot_uniform: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)), with the
  // receptive field counted in both fans. Uniform doubles are made from the top 53 bits by hand
  // because std::uniform_real_distribution differs between standard libraries, and a seed should
  // give the same network everywhere.
  const double fan_in = double(in_c_) * kh_ * kw_, fan_out = double(fan_out_c_) * kh_ * kw_;
  const double limit = std::sqrt(6.0 / (fan_in + fan_out));
  std::vector<float> host(size_t(w_.size()));
  for (float& v : host) {
    const double u = double(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    v = float((2.0 * u - 1.0) * limit);
  }
  w_.upload(host.data());
  if (opt_.bias) {
    std::vector<float> zeros(size_t(b_.size()), 0.0f);
    b_.upload(zeros.data());
  }
}

}  // namespace ds::model
