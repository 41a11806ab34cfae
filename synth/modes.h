// The synthetic atmosphere's weather: a handful of large travelling waves whose complex daily
// amplitudes follow a damped, rotating AR(1) process. Every predictor is a fixed linear mix of
// these waves, so the fields are smooth, persistent from day to day, mutually correlated, and
// can be evaluated analytically at any (lon, lat) — the 2-degree predictors and the 0.5-degree
// precipitation see exactly the same state.
#pragma once
#include <array>
#include <complex>
#include <cstdint>
#include <random>

namespace ds::synth {

// Five wave pairs (a cos and a sin pattern each) = ten spatial modes.
constexpr int kPairs = 5;
using Complex = std::complex<double>;
using PairArray = std::array<Complex, kPairs>;

struct WavePair {
  double kx, ky;  // wave vector, radians per km (east, north)
  double lag1;    // lag-1 autocorrelation of the field at a fixed point
  double omega;   // phase drift per day (radians): the waves travel along k
};
const std::array<WavePair, kPairs>& wave_pairs();

// Local plane coordinates in km. A fixed scale (not the region's) keeps the world the same
// whatever region is written, so a sub-region of a larger synthetic file matches a smaller one.
double x_km(double lon);
double y_km(double lat);

// The phase factors exp(i k.r) of every wave at one point: computed once per grid point, so a
// day's field costs kPairs complex multiplies per point.
struct PointBasis {
  PairArray phase;
  double lon = 0, lat = 0;
};
PointBasis basis_at(double lon, double lat);

// A linear field for one day: value(r) = sum_p Re(coef_p * exp(i k_p.r)).
struct DayField {
  PairArray coef{};
  double at(const PointBasis& b) const {
    double s = 0;
    for (int p = 0; p < kPairs; ++p) s += coef[p].real() * b.phase[p].real() - coef[p].imag() * b.phase[p].imag();
    return s;
  }
};

// The wave amplitudes A_p(t). Each has unit-variance real and imaginary parts, so a field
// sum_p w_p Re(A_p e^{-i theta_p} e^{i k.r}) with sum w_p^2 = 1 has unit variance everywhere.
// A_t = rho e^{-i omega} A_{t-1} + sqrt(1 - rho^2) (n1 + i n2): rho cos(omega) = lag1.
class ModeProcess {
 public:
  // The state on day `first_day` (days since 1970). The process always starts at 1979-01-01
  // (or first_day if earlier) and runs forward, so a given seed gives the same weather on a
  // given date whichever years are written.
  ModeProcess(uint64_t seed, int64_t first_day);
  const PairArray& amplitudes() const { return a_; }
  void step();  // to the next day

 private:
  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_{0.0, 1.0};
  PairArray a_{};
};

}  // namespace ds::synth
