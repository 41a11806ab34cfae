// The EWEMBI-like precipitation: a Bernoulli-Gamma process driven by a wetness index that is a
// known function of the predictors at the same point. The relationship is what a downscaling
// CNN has to learn; the noise keeps it from being trivially exact.
//
//   w0 = (0.8 q850 + 0.5 q700 - 0.7 z500 + 0.5 v850) / 1.32 + 0.25 S + O(lon, lat)
//   w  = w0 + N(0, 0.3^2)
//   wet with p = sigmoid(a + b w); amount ~ Gamma(shape k, scale exp(c + d w)) mm/day
//
// Tuned so that, for the default region, about a third of land days have >= 1 mm, wet days
// average ~8 mm, and the oracle E[pr | w0] has an MSE skill of ~0.3 over the per-cell
// climatology: enough for a CNN to beat climatology, far from a deterministic mapping.
//
// q, z, v are the standardized anomalies of hus, z and va (moist air, troughs and southerly
// inflow bring rain), S the seasonal cycle, and O a static orographic term with detail at
// 200-450 km, below what the 2-degree grid resolves, so the 0.5-degree field has its own
// structure (the CNN learns it as a per-location bias).
#pragma once
#include <cstdint>
#include <random>

#include "synth/large_scale.h"

namespace ds::synth {

struct PrecipModel {
  double noise_sd = 0.3;
  double occurrence_a = -0.6, occurrence_b = 2.2;  // p = sigmoid(a + b w)
  double shape = 0.95;                              // Gamma shape
  double scale_c = 0.95, scale_d = 0.85;            // Gamma scale = exp(c + d w) mm/day
  double drizzle_probability = 0.2;                 // on a dry day, a trace below 0.99 mm
};
const PrecipModel& precip_model();

// The static orographic/location term O(lon, lat).
double orographic_term(double lon, double lat);

// The noise-free wetness index w0 at a point (orography = orographic_term at that point).
double wetness_signal(const LargeScaleDay& day, const PointBasis& b, double orography);

double wet_probability(double w);
double wet_scale_mm(double w);
// The oracle: expected precipitation (mm/day) given the noise-free w0 (p * shape * scale).
double expected_precip_mm(double w0);

// Draws daily precipitation from its own random stream (separate from the weather's, so the
// weather can be regenerated without it).
class PrecipSampler {
 public:
  explicit PrecipSampler(uint64_t seed);
  double draw_mm(double w0);

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
};

}  // namespace ds::synth
