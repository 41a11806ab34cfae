// Floating-point work of a network, counted from its architecture (the same layer graph Net runs),
// so the benchmark's GFLOP/s follow the model rather than a number typed in by hand.
#pragma once
#include <cstdint>

#include "model/net.h"

namespace ds::bench {

struct FlopCount {
  int64_t forward = 0;          // one sample's forward pass
  int64_t backward_data = 0;    // one sample's input gradients (not for convs reading the network input)
  int64_t backward_weights = 0; // one sample's weight and bias gradients
  int64_t train() const { return forward + backward_data + backward_weights; }
};

// The architecture's convolutions, 2 FLOP per multiply-add, every kernel tap counted (padding
// included, as frameworks count): forward 2*K_h*K_w*C_in*C_out*H_out*W_out per conv,
// backward-data and backward-weights the same again each. A conv after an upsampling counts on the
// upsampled input even where a backend computes it with fewer operations (UpsampleConv2D), so
// GFLOP/s compare implementations of the same model. The elementwise layers (ReLU, upsampling,
// sigmoid, loss, Adam) add < 0.1% and are left out.
FlopCount count_flops(const model::ModelSpec& spec);

}  // namespace ds::bench
