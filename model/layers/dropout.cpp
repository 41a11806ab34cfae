#include "model/layers/dropout.h"

#include "io/error.h"
#include "model/counter_rng.h"

namespace ds::model {

namespace {
// FNV-1a: a fixed hash of the layer name (std::hash differs between standard libraries).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}
}  // namespace

Dropout::Dropout(std::string name, Backend& be, float rate)
    : Layer(std::move(name)), rate_(rate), name_hash_(fnv1a(this->name())), mask_(be, Shape{0, 0, 0, 0}) {
  if (!(rate >= 0.0f && rate < 1.0f)) throw Error("layer " + this->name() + ": dropout rate must be in [0, 1)");
}

Shape Dropout::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  return in[0];
}

void Dropout::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  if (!mode_.training) {
    be.copy(out.data(), in[0]->data(), out.size());
    return;
  }
  mask_.reshape(in[0]->shape());
  be.dropout_forward(out.size(), rate_, splitmix64(mode_.seed) ^ name_hash_, in[0]->data(), out.data(),
                     mask_.data());
}

void Dropout::backward(Backend& be, const std::vector<const Tensor*>& /*in*/, const Tensor& /*out*/,
                       const Tensor& dout, const std::vector<Tensor*>& din) {
  if (!din[0]) return;
  if (mode_.training)
    be.multiply(dout.size(), dout.data(), mask_.data(), din[0]->data());
  else
    be.copy(din[0]->data(), dout.data(), dout.size());
}

}  // namespace ds::model
