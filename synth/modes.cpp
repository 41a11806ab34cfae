#include "synth/modes.h"

#include <cmath>

#include "io/calendar.h"

namespace ds::synth {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kKmPerDegLat = 111.2;
// cos(40N): the middle of the latitudes this synthetic climate is tuned for.
constexpr double kKmPerDegLon = 111.2 * 0.766;

WavePair wave(double wavelength_km, double direction_deg, double lag1, double omega) {
  const double k = 2 * kPi / wavelength_km, d = direction_deg * kPi / 180;
  return {k * std::cos(d), k * std::sin(d), lag1, omega};
}

}  // namespace

const std::array<WavePair, kPairs>& wave_pairs() {
  // Wavelengths 1700-5000 km: synoptic to planetary scale, at least ~8 points of the 2-degree
  // grid per wavelength so ERA-like predictors resolve them. Mostly eastward travel (positive kx,
  // omega > 0) as mid-latitude weather does; lag-1 correlations 0.72-0.85 as for daily z500.
  static const std::array<WavePair, kPairs> pairs{{
      wave(4200, 10, 0.82, 0.20),
      wave(3000, -35, 0.78, 0.30),
      wave(2300, 60, 0.75, 0.25),
      wave(1700, 20, 0.72, 0.40),
      wave(5000, 95, 0.85, 0.10),
  }};
  return pairs;
}

double x_km(double lon) { return lon * kKmPerDegLon; }
double y_km(double lat) { return lat * kKmPerDegLat; }

PointBasis basis_at(double lon, double lat) {
  PointBasis b;
  b.lon = lon;
  b.lat = lat;
  const double x = x_km(lon), y = y_km(lat);
  for (int p = 0; p < kPairs; ++p) {
    const auto& w = wave_pairs()[p];
    b.phase[p] = std::polar(1.0, w.kx * x + w.ky * y);
  }
  return b;
}

ModeProcess::ModeProcess(uint64_t seed, int64_t first_day) : rng_(seed) {
  // Draw the start from the stationary distribution so there is no spin-up transient.
  for (auto& a : a_) {
    const double re = normal_(rng_);
    const double im = normal_(rng_);
    a = Complex(re, im);
  }
  const int64_t origin = days_from_civil(Date{1979, 1, 1});
  for (int64_t d = std::min(origin, first_day); d < first_day; ++d) step();
}

void ModeProcess::step() {
  const auto& pairs = wave_pairs();
  for (int p = 0; p < kPairs; ++p) {
    const double rho = pairs[p].lag1 / std::cos(pairs[p].omega);
    const double innov = std::sqrt(1 - rho * rho);
    // Two separate statements: the order of the draws must not depend on the compiler.
    const double re = normal_(rng_);
    const double im = normal_(rng_);
    a_[p] = std::polar(rho, -pairs[p].omega) * a_[p] + innov * Complex(re, im);
  }
}

}  // namespace ds::synth
