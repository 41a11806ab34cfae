// From the network's Bernoulli-Gamma parameters to precipitation, as climate4R's
// downscaleR.keras does it (computeRainfall and binaryGrid):
//   occurrence  p >= 0.5, or p >= a per-grid-box threshold chosen so that the training period's
//               predicted wet-day frequency equals the observed one ("frequency-adapted")
//   amount      deterministic: the gamma mean alpha * beta; stochastic: a gamma draw
//   precipitation = occurrence * (amount + wet-day threshold), the 0.99 mm shift added back
// All arrays are (time, point) with `npoints` points per day; NaN marks points without data.
#pragma once
#include <cstddef>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ds {

struct BernoulliGammaParams {
  size_t npoints = 0;
  std::vector<float> p, alpha, beta;  // (time, point)
  size_t ntime() const { return npoints ? p.size() / npoints : 0; }
};

// The network's raw Bernoulli-Gamma output (n, 3, npoints: p, log alpha, log beta, as the
// model's heads give them) as parameters: alpha and beta exponentiated, NaN kept (the ocean).
BernoulliGammaParams bernoulli_gamma_params(const std::vector<float>& raw, size_t npoints);

// The observed training target as a byte a (time, point): 1 wet (target > 0), 0 dry,
// kObservedMissing (a quarter of the target's memory: predict holds the whole training split).
constexpr uint8_t kObservedMissing = 255;
inline uint8_t observed_wet(float target) { return !std::isfinite(target) ? kObservedMissing : target > 0 ? 1 : 0; }
// Per-point p thresholds: the (1 - f) quantile of p over the training days, where f is the
// observed wet-day frequency (share of training days observed wet) at that point. Points with
// no wet day get a threshold above 1 (never wet); points that are always wet get 0.
std::vector<float> frequency_adapted_thresholds(const BernoulliGammaParams& train, const std::vector<uint8_t>& observed_wet);

// Deterministic precipitation in mm/day: (p >= threshold[point]) * (alpha * beta + shift).
std::vector<float> deterministic_precipitation(const BernoulliGammaParams& b, const std::vector<float>& threshold, double shift);

// Expected precipitation p * (alpha * beta + shift): the mean of the predicted distribution.
std::vector<float> expected_precipitation(const BernoulliGammaParams& b, double shift);

// `members` stochastic realizations (member, time, point): wet with probability p, then a draw
// from Gamma(shape alpha, scale beta) plus shift. Reproducible: member m uses a generator
// seeded from (seed, m), so adding members leaves the earlier ones unchanged.
std::vector<float> stochastic_precipitation(const BernoulliGammaParams& b, int members, uint64_t seed, double shift);

// Whether a prediction's mean precipitation over its modelled boxes and days (`predicted_mean`)
// is a plausible level against the training observations' (`observed_mean`, both mm/day): within
// a factor `limit` either way. A model whose output biases are off predicts thousands of mm/day,
// or none at all (p near 0 everywhere); a GCM scenario changes a domain's mean by tens of per cent.
// predict refuses a prediction outside predict.plausible_ratio (5); limit 0: always plausible.
// A NaN mean (no modelled value) is not plausible; neither is any prediction against an observed
// mean of 0 (preprocess refuses a store without a wet day).
bool plausible_precipitation_level(double predicted_mean, double observed_mean, double limit);

// The two means plausible_precipitation_level compares, month by month: a model trained on the
// whole year and given a dry season's days (a Sahel DJF run) predicts a fraction of the annual
// mean, rightly. Sums over the modelled boxes (mask) of days in calendar month 1..12.
class PrecipitationLevel {
 public:
  // Observed training values (ndays x npoints, mm/day), NaN where not observed; amounts below
  // `wet_threshold` count as 0, as the expected precipitation p (alpha beta + threshold) counts them.
  void add_observed(const float* obs, size_t ndays, const int* months, const std::vector<uint8_t>& mask,
                    double wet_threshold);
  // Predicted expected precipitation (ndays x npoints, mm/day).
  void add_predicted(const float* expected, size_t ndays, const int* months, const std::vector<uint8_t>& mask);
  // Over the months both hold: the predicted mean, and the observed reference with each month's
  // mean weighted by its predicted days. When they share no month (a DJF model given a summer
  // run: its output is no less absurd for lying in months it never saw, 25,000 mm/day in a user
  // test), over every month of each: the prediction against the training's whole mean.
  bool shares_months() const;
  double predicted_mean() const;
  double reference_mean() const;
  size_t predicted_days() const;  // in the months compared

 private:
  bool compared(int month, bool shared) const { return !shared || observed_[month].values > 0; }
  struct Sums {
    double sum = 0, values = 0;
    size_t days = 0;  // counted for the predicted days only: the reference weights by them
  };
  Sums observed_[13], predicted_[13];  // by calendar month, [0] unused
};

// The same realizations a block of days at a time (predict writes decades that way): each
// member's generator goes on from where the previous block left it, so consecutive blocks give
// exactly what one call over all their days gives.
class StochasticPrecipitation {
 public:
  StochasticPrecipitation(int members, uint64_t seed, double shift);
  // The next days' realizations (member, time, point) of the days in `b`.
  std::vector<float> next(const BernoulliGammaParams& b);

 private:
  std::vector<std::mt19937_64> rngs_;  // one per member
  double shift_;
};

}  // namespace ds
