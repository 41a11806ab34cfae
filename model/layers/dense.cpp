#include "model/layers/dense.h"

#include <cmath>

#include "io/error.h"
#include "model/layers/glorot.h"

namespace ds::model {

Dense::Dense(std::string name, Backend& be, int in, int out, int glorot_fan_out)
    : Layer(std::move(name)),
      in_(in),
      out_(out),
      fan_out_(glorot_fan_out > 0 ? glorot_fan_out : out),
      w_(be, Shape{out, in, 1, 1}),
      b_(be, Shape{1, out, 1, 1}),
      dw_(be, Shape{out, in, 1, 1}),
      db_(be, Shape{1, out, 1, 1}) {
  if (in < 1 || out < 1) throw Error("layer " + this->name() + ": dense sizes must be positive");
}

Shape Dense::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  if (in[0].c != in_ || in[0].h != 1 || in[0].w != 1)
    throw Error("layer " + name() + " (Dense) expects (N, " + std::to_string(in_) + ", 1, 1) (flatten first), got " +
                in[0].str());
  return Shape{in[0].n, out_, 1, 1};
}

void Dense::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  be.dense_forward(in[0]->shape().n, in_, out_, in[0]->data(), w_.data(), b_.data(), out.data());
}

void Dense::backward(Backend& be, const std::vector<const Tensor*>& in, const Tensor& /*out*/, const Tensor& dout,
                     const std::vector<Tensor*>& din) {
  const int n = in[0]->shape().n;
  be.dense_backward_weights(n, in_, out_, in[0]->data(), dout.data(), dw_.data(), db_.data());
  if (din[0]) be.dense_backward_data(n, in_, out_, dout.data(), w_.data(), din[0]->data());
}

std::vector<Param> Dense::params() { return {{name() + "/W", &w_, &dw_}, {name() + "/b", &b_, &db_}}; }

int64_t Dense::parameter_count() const { return w_.size() + b_.size(); }

void Dense::init(std::mt19937_64& rng) {
  glorot_uniform(rng, double(in_), double(fan_out_), w_);
  std::vector<float> zeros(size_t(b_.size()), 0.0f);
  b_.upload(zeros.data());
}

}  // namespace ds::model
