#include "synth/precipitation.h"

#include <cmath>

namespace ds::synth {

namespace {
constexpr double kPi = 3.14159265358979323846;
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
}  // namespace

const PrecipModel& precip_model() {
  static const PrecipModel m;
  return m;
}

double orographic_term(double lon, double lat) {
  // A few fixed oblique ridges with wavelengths 200-450 km (std ~0.35). Fixed in absolute
  // coordinates, like real orography, so every region and seed shares it.
  const double x = x_km(lon), y = y_km(lat);
  return 0.30 * std::sin(2 * kPi * x / 450 + 0.8) * std::cos(2 * kPi * y / 380 - 0.3) +
         0.22 * std::sin(2 * kPi * (0.6 * x + 0.8 * y) / 260 + 1.9) +
         0.18 * std::cos(2 * kPi * (0.9 * x - 0.44 * y) / 210 + 0.4);
}

double wetness_signal(const LargeScaleDay& day, const PointBasis& b, double orography) {
  const int l850 = level_index(850), l700 = level_index(700), l500 = level_index(500);
  const double dynamic = 0.8 * day.anomaly(Var::hus, l850, b) + 0.5 * day.anomaly(Var::hus, l700, b) -
                         0.7 * day.anomaly(Var::z, l500, b) + 0.5 * day.anomaly(Var::va, l850, b);
  // 1.32: the standard deviation of `dynamic` (measured), so its part of w0 has unit variance.
  return dynamic / 1.32 + 0.25 * day.season() + orography;
}

double wet_probability(double w) {
  const auto& m = precip_model();
  return sigmoid(m.occurrence_a + m.occurrence_b * w);
}

double wet_scale_mm(double w) {
  const auto& m = precip_model();
  return std::exp(m.scale_c + m.scale_d * w);
}

double expected_precip_mm(double w0) { return wet_probability(w0) * precip_model().shape * wet_scale_mm(w0); }

PrecipSampler::PrecipSampler(uint64_t seed) : rng_(seed ^ 0x9E3779B97F4A7C15ULL) {}

double PrecipSampler::draw_mm(double w0) {
  const auto& m = precip_model();
  // The noise on w plays the part of everything the large-scale predictors cannot know
  // (convection, local dynamics): it lowers the attainable skill below 1.
  const double w = w0 + m.noise_sd * normal_(rng_);
  const double u_wet = uniform_(rng_);
  const double u_drizzle = uniform_(rng_);
  if (u_wet < wet_probability(w)) {
    std::gamma_distribution<double> gamma(m.shape, wet_scale_mm(w));
    return gamma(rng_);
  }
  // Dry by the model, but gauges report traces: 0.02-0.95 mm, below the 0.99 mm wet threshold.
  if (u_drizzle < m.drizzle_probability) return 0.02 + 0.93 * uniform_(rng_);
  return 0.0;
}

}  // namespace ds::synth
