// From the network's output to a continuous predictand (temperature and the like), in the
// observations' units (the training target is the observed value itself, so no back-transform):
//   gaussian  out channels [mean, s = log variance]: the mean, and sd = exp(s / 2)
//   mse       out channel [value]: the value; no spread
// All arrays are (time, point); NaN where the mask is 0.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds {

struct ContinuousPrediction {
  std::vector<float> mean, sd;  // sd empty for mse
};

// raw: (time, channels, point) network output with `channels` 2 (gaussian) or 1 (mse).
ContinuousPrediction continuous_prediction(const std::vector<float>& raw, size_t channels, size_t npoints,
                                           const std::vector<uint8_t>& mask);

}  // namespace ds
