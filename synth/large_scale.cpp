#include "synth/large_scale.h"

#include <algorithm>
#include <cmath>

namespace ds::synth {

namespace {

constexpr double kPi = 3.14159265358979323846;

// How a latent field mixes the wave pairs: weights (sum of squares 1, so unit variance) and a
// phase shift per pair. Sharing weights with different phases is what correlates the variables.
struct Mixing {
  std::array<double, kPairs> weight, phase;
};

// Geopotential: the reference pattern.
const Mixing kZ{{0.55, 0.50, 0.40, 0.30, 0.45}, {0, 0, 0, 0, 0}};
// Temperature: the same waves slightly shifted (warm air ahead of the ridge): corr(Z, T) ~ 0.9.
const Mixing kT{{0.50, 0.45, 0.45, 0.35, 0.45}, {-0.30, -0.40, -0.20, -0.50, -0.10}};
// Moisture: further shifted towards the southerly flow ahead of troughs: corr(T, Q) ~ 0.8.
const Mixing kQ{{0.40, 0.55, 0.45, 0.45, 0.35}, {-0.90, -1.10, -0.70, -1.20, -0.50}};

// Phase tilt with height (radians, per level 1000..500): troughs lean westward with height, so
// the levels are coherent but not identical.
constexpr std::array<double, kLevels> kTiltZ{0.50, 0.30, 0.15, 0.0};
constexpr std::array<double, kLevels> kTiltT{0.30, 0.20, 0.10, 0.0};
constexpr std::array<double, kLevels> kTiltQ{0.20, 0.10, 0.0, -0.10};

// Climatology of one variable at one level: value = centre + half * (season * S + lat * L +
// anom * soft_clip(anomaly) / 2.5), with S, L in [-1, 1]; the coefficients sum to < 1, so the
// value never leaves centre +- half (the ranges a reader can rely on). hus works in log space.
struct LevelClimate {
  double centre, half, season, lat, anom;
};

// Sum of the three weights must stay <= 0.97 for the range guarantee.
constexpr std::array<LevelClimate, kLevels> kClimZ{{
    {750, 700, -0.10, -0.10, 0.75},      // 1000 hPa: mostly synoptic; summer heat lows
    {14750, 700, 0.25, -0.25, 0.45},     // 850
    {30000, 950, 0.30, -0.30, 0.35},     // 700
    {56500, 1450, 0.30, -0.30, 0.35},    // 500: higher in summer and to the south
}};
constexpr std::array<LevelClimate, kLevels> kClimT{{
    {285.0, 14.5, 0.45, -0.25, 0.27},
    {277.5, 12.0, 0.45, -0.25, 0.27},
    {267.5, 12.0, 0.45, -0.25, 0.27},
    {252.5, 12.0, 0.45, -0.25, 0.27},
}};
// Specific humidity, log space: centre = geometric mean of the level's range, half = log ratio.
const std::array<LevelClimate, kLevels> kClimQ{{
    {std::sqrt(0.005 * 0.015), std::log(0.015 / std::sqrt(0.005 * 0.015)), 0.35, -0.20, 0.42},
    {std::sqrt(0.003 * 0.010), std::log(0.010 / std::sqrt(0.003 * 0.010)), 0.35, -0.20, 0.42},
    {std::sqrt(0.001 * 0.006), std::log(0.006 / std::sqrt(0.001 * 0.006)), 0.35, -0.20, 0.42},
    {std::sqrt(0.0002 * 0.002), std::log(0.002 / std::sqrt(0.0002 * 0.002)), 0.35, -0.20, 0.42},
}};
// Westerlies growing with height, strongest in winter.
constexpr std::array<LevelClimate, kLevels> kClimU{{
    {2.0, 6.0, -0.20, 0.10, 0.65},
    {5.0, 7.0, -0.20, 0.10, 0.65},
    {10.0, 7.0, -0.20, 0.10, 0.65},
    {17.5, 7.3, -0.20, 0.10, 0.65},
}};
constexpr std::array<LevelClimate, kLevels> kClimV{{
    {0.0, 9.5, 0.0, 0.0, 0.95},
    {0.0, 9.5, 0.0, 0.0, 0.95},
    {0.0, 9.5, 0.0, 0.0, 0.95},
    {0.0, 9.5, 0.0, 0.0, 0.95},
}};

const LevelClimate& climate(Var v, int level) {
  switch (v) {
    case Var::z: return kClimZ[level];
    case Var::hus: return kClimQ[level];
    case Var::ta: return kClimT[level];
    case Var::ua: return kClimU[level];
    case Var::va: return kClimV[level];
  }
  return kClimV[level];
}

// Latitude term in [-1, 1] around 37N; clamped so a region outside the tuned mid-latitudes keeps
// the edge climate instead of leaving the physical ranges.
double lat_term(double lat) { return std::clamp((lat - 37.0) / 11.0, -1.0, 1.0); }

// Coefficients of w_p Re(A_p e^{-i(theta_p + tilt)} e^{ik.r}) for one day.
DayField latent(const PairArray& a, const Mixing& m, double tilt) {
  DayField f;
  for (int p = 0; p < kPairs; ++p) f.coef[p] = m.weight[p] * a[p] * std::polar(1.0, -(m.phase[p] + tilt));
  return f;
}

// Geostrophic wind anomalies of a geopotential field: u = -dZ/dy, v = dZ/dx, each scaled to unit
// variance (d/dx of e^{ik.r} is i kx e^{ik.r}).
DayField derivative(const DayField& z, const Mixing& m, bool along_x, double sign) {
  double norm2 = 0;
  for (int p = 0; p < kPairs; ++p) {
    const double k = along_x ? wave_pairs()[p].kx : wave_pairs()[p].ky;
    norm2 += m.weight[p] * m.weight[p] * k * k;
  }
  const double scale = sign / std::sqrt(norm2);
  DayField f;
  for (int p = 0; p < kPairs; ++p) {
    const double k = along_x ? wave_pairs()[p].kx : wave_pairs()[p].ky;
    f.coef[p] = z.coef[p] * Complex(0, k * scale);
  }
  return f;
}

}  // namespace

int level_index(int hpa) {
  for (int i = 0; i < kLevels; ++i)
    if (kLevelsHpa[i] == hpa) return i;
  return -1;
}

const VarInfo& var_info(Var v) {
  static const std::array<VarInfo, kVars> info{{
      {"z", "geopotential", "Geopotential", "m2 s-2"},
      {"hus", "specific_humidity", "Specific humidity", "kg kg-1"},
      {"ta", "air_temperature", "Air temperature", "K"},
      {"ua", "eastward_wind", "Eastward wind", "m s-1"},
      {"va", "northward_wind", "Northward wind", "m s-1"},
  }};
  return info[static_cast<int>(v)];
}

double seasonal_cycle(const Date& d) {
  const int64_t doy = days_from_civil(d) - days_from_civil(Date{d.year, 1, 1});
  const double f = (doy + 0.5) / days_in_year(d.year);
  return std::cos(2 * kPi * (f - 0.56));  // peak ~ day 205 (late July), as surface temperature
}

double soft_clip(double x) { return 2.5 * std::tanh(x / 2.5); }

LargeScaleDay::LargeScaleDay(const PairArray& a, const Date& date) : season_(seasonal_cycle(date)) {
  for (int l = 0; l < kLevels; ++l) {
    const DayField z = latent(a, kZ, kTiltZ[l]);
    fields_[static_cast<int>(Var::z)][l] = z;
    fields_[static_cast<int>(Var::ta)][l] = latent(a, kT, kTiltT[l]);
    fields_[static_cast<int>(Var::hus)][l] = latent(a, kQ, kTiltQ[l]);
    fields_[static_cast<int>(Var::ua)][l] = derivative(z, kZ, false, -1.0);
    fields_[static_cast<int>(Var::va)][l] = derivative(z, kZ, true, +1.0);
  }
}

double LargeScaleDay::anomaly(Var v, int level, const PointBasis& b) const {
  return soft_clip(fields_[static_cast<int>(v)][level].at(b));
}

double LargeScaleDay::value(Var v, int level, const PointBasis& b) const {
  const LevelClimate& c = climate(v, level);
  const double shape = c.season * season_ + c.lat * lat_term(b.lat) + c.anom * anomaly(v, level, b) / 2.5;
  if (v == Var::hus) return c.centre * std::exp(c.half * shape);
  return c.centre + c.half * shape;
}

}  // namespace ds::synth
