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

// How far the prediction's mean over its modelled boxes and days (`predicted_mean`) lies from the training
// observations' (`observed_mean`, with `observed_sd` their standard deviation over boxes and days),
// in those standard deviations. A model that never learned the predictand's level (tas in K from a
// network started at 0: 25 K against 281 K, 80 sd) is far outside anything a climate change
// signal does: a GCM's end-of-century warming is a few K, against a spread of days and boxes of
// several K. predict refuses a prediction more than predict.plausible_sd (5) away. A constant
// training predictand (sd 0) gives 0 for a prediction at its value, infinity otherwise.
// `predicted_mean` NaN (no modelled value) gives NaN.
double departure_in_sd(double predicted_mean, double observed_mean, double observed_sd);

}  // namespace ds
