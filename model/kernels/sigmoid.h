// Bodies of the sigmoid-on-one-channel kernels (the p head of Bernoulli-Gamma): element i of the
// N*H*W elements of channel `channel` in an NCHW tensor of c channels. See elementwise.h.
#pragma once
#include <cmath>
#include <cstdint>

#include "model/host_device.h"

namespace ds::model::kernels {

// Offset of element i (sample i / hw, pixel i % hw) of channel `channel`.
DS_HOST_DEVICE inline int64_t channel_element(int64_t i, int64_t hw, int c, int channel) {
  return ((i / hw) * c + channel) * hw + i % hw;
}

// 1/(1+exp(-x)) saturates cleanly in float: exp overflows to inf -> 0, underflows to 0 -> 1.
DS_HOST_DEVICE inline void sigmoid_channel_forward_at(int64_t i, int64_t hw, int c, int channel, float* y) {
  float* p = y + channel_element(i, hw, c, channel);
  *p = 1.0f / (1.0f + expf(-*p));
}

DS_HOST_DEVICE inline void sigmoid_channel_backward_at(int64_t i, int64_t hw, int c, int channel, const float* y,
                                                       float* dy) {
  const int64_t o = channel_element(i, hw, c, channel);
  dy[o] *= y[o] * (1.0f - y[o]);
}

}  // namespace ds::model::kernels
