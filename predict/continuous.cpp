#include "predict/continuous.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ds {

ContinuousPrediction continuous_prediction(const std::vector<float>& raw, size_t channels, size_t np,
                                           const std::vector<uint8_t>& mask) {
  if (channels != 1 && channels != 2) throw std::invalid_argument("continuous_prediction: 1 or 2 channels");
  const size_t nt = np ? raw.size() / (channels * np) : 0;
  ContinuousPrediction r;
  r.mean.assign(nt * np, NAN);
  if (channels == 2) r.sd.assign(nt * np, NAN);
  for (size_t t = 0; t < nt; ++t)
    for (size_t k = 0; k < np; ++k) {
      if (!mask[k]) continue;
      r.mean[t * np + k] = raw[(t * channels) * np + k];
      if (channels == 2) r.sd[t * np + k] = static_cast<float>(std::exp(0.5 * double(raw[(t * channels + 1) * np + k])));
    }
  return r;
}

double departure_in_sd(double predicted_mean, double observed_mean, double observed_sd) {
  const double off = std::abs(predicted_mean - observed_mean);
  if (observed_sd > 0) return off / observed_sd;
  return off == 0 ? 0.0 : off > 0 ? INFINITY : NAN;
}

}  // namespace ds
