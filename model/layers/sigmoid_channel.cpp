#include "model/layers/sigmoid_channel.h"

#include "io/error.h"

namespace ds::model {

SigmoidChannel::SigmoidChannel(std::string name, int channel) : Layer(std::move(name)), channel_(channel) {}

Shape SigmoidChannel::output_shape(const std::vector<Shape>& in) const {
  expect_inputs(*this, in.size(), 1);
  if (channel_ < 0 || channel_ >= in[0].c)
    throw Error("layer " + name() + ": channel " + std::to_string(channel_) + " out of range for " + in[0].str());
  return in[0];
}

void SigmoidChannel::forward(Backend& be, const std::vector<const Tensor*>& in, Tensor& out) {
  be.copy(out.data(), in[0]->data(), out.size());
  be.sigmoid_channel_forward(out.shape(), channel_, out.data());
}

void SigmoidChannel::backward(Backend& be, const std::vector<const Tensor*>& /*in*/, const Tensor& out,
                              const Tensor& dout, const std::vector<Tensor*>& din) {
  if (!din[0]) return;
  // The backend op works in place on the gradient (y' = y(1-y) needs only the output).
  be.copy(din[0]->data(), dout.data(), dout.size());
  be.sigmoid_channel_backward(out.shape(), channel_, out.data(), din[0]->data());
}

}  // namespace ds::model
