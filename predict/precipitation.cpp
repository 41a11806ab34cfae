#include "predict/precipitation.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace ds {

BernoulliGammaParams bernoulli_gamma_params(const std::vector<float>& raw, size_t hw) {
  const size_t n = raw.size() / (3 * hw);
  BernoulliGammaParams b;
  b.npoints = hw;
  b.p.resize(n * hw);
  b.alpha.resize(n * hw);
  b.beta.resize(n * hw);
  for (size_t t = 0; t < n; ++t)
    for (size_t k = 0; k < hw; ++k) {
      const size_t o = t * hw + k;
      b.p[o] = raw[(t * 3 + 0) * hw + k];
      b.alpha[o] = std::exp(raw[(t * 3 + 1) * hw + k]);
      b.beta[o] = std::exp(raw[(t * 3 + 2) * hw + k]);
    }
  return b;
}

std::vector<float> frequency_adapted_thresholds(const BernoulliGammaParams& train, const std::vector<uint8_t>& observed) {
  const size_t np = train.npoints, nt = train.ntime();
  std::vector<float> thr(np, 0.5f), column;
  for (size_t k = 0; k < np; ++k) {
    column.clear();
    size_t wet = 0, valid = 0;
    for (size_t t = 0; t < nt; ++t) {
      const float p = train.p[t * np + k];
      const uint8_t y = observed[t * np + k];
      if (!std::isfinite(p) || y == kObservedMissing) continue;
      column.push_back(p);
      ++valid;
      wet += y == 1;
    }
    if (valid == 0) continue;
    if (wet == 0) { thr[k] = 2.0f; continue; }
    if (wet == valid) { thr[k] = 0.0f; continue; }
    // The wet-th largest p: exactly `wet` training days reach it (ties aside).
    std::sort(column.begin(), column.end());
    thr[k] = column[valid - wet];
  }
  return thr;
}

std::vector<float> deterministic_precipitation(const BernoulliGammaParams& b, const std::vector<float>& thr, double shift) {
  const size_t np = b.npoints;
  std::vector<float> pr(b.p.size());
  for (size_t i = 0; i < pr.size(); ++i) {
    const float p = b.p[i];
    if (!std::isfinite(p)) { pr[i] = NAN; continue; }
    pr[i] = p >= thr[i % np] ? static_cast<float>(double(b.alpha[i]) * b.beta[i] + shift) : 0.0f;
  }
  return pr;
}

std::vector<float> expected_precipitation(const BernoulliGammaParams& b, double shift) {
  std::vector<float> pr(b.p.size());
  for (size_t i = 0; i < pr.size(); ++i)
    pr[i] = std::isfinite(b.p[i]) ? static_cast<float>(b.p[i] * (double(b.alpha[i]) * b.beta[i] + shift)) : NAN;
  return pr;
}

StochasticPrecipitation::StochasticPrecipitation(int members, uint64_t seed, double shift) : shift_(shift) {
  for (int m = 0; m < members; ++m) {
    // seed_seq keeps 32 bits of each value: a seed past them goes in as two words, so that 1 and
    // 2^32 + 1 draw other members; one that fits keeps the two-value sequence of earlier versions,
    // so a recorded members_seed draws the members it drew.
    const auto lo = static_cast<uint32_t>(seed), hi = static_cast<uint32_t>(seed >> 32);
    if (hi == 0) {
      std::seed_seq seq{lo, static_cast<uint32_t>(m)};
      rngs_.emplace_back(seq);
    } else {
      std::seed_seq seq{lo, hi, static_cast<uint32_t>(m)};
      rngs_.emplace_back(seq);
    }
  }
}

std::vector<float> StochasticPrecipitation::next(const BernoulliGammaParams& b) {
  const size_t n = b.p.size();
  std::vector<float> out(rngs_.size() * n);
  for (size_t m = 0; m < rngs_.size(); ++m) {
    std::mt19937_64& rng = rngs_[m];
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (size_t i = 0; i < n; ++i) {
      float& o = out[m * n + i];
      if (!std::isfinite(b.p[i])) { o = NAN; continue; }
      // Both numbers are drawn for every point, dry or wet, in a fixed order: the same seed
      // gives the same member on every run. The distributions are made here, per point: only
      // the generator carries over from one block to the next.
      const double draw = u(rng);
      std::gamma_distribution<double> g(b.alpha[i], b.beta[i]);
      const double amount = g(rng);
      o = draw < b.p[i] ? static_cast<float>(amount + shift_) : 0.0f;
    }
  }
  return out;
}

bool plausible_precipitation_level(double predicted_mean, double observed_mean, double limit) {
  if (limit == 0) return true;
  if (!(observed_mean > 0)) return false;
  const double ratio = predicted_mean / observed_mean;
  return ratio <= limit && ratio >= 1.0 / limit;  // false for NaN
}

void PrecipitationLevel::add_observed(const float* obs, size_t ndays, const int* months, const std::vector<uint8_t>& mask,
                                      double wet_threshold) {
  const size_t np = mask.size();
  for (size_t d = 0; d < ndays; ++d) {
    Sums& s = observed_[months[d]];
    for (size_t k = 0; k < np; ++k) {
      const float v = obs[d * np + k];
      if (!mask[k] || !std::isfinite(v)) continue;
      s.sum += v >= wet_threshold ? v : 0.0;
      ++s.values;
    }
  }
}

void PrecipitationLevel::add_predicted(const float* expected, size_t ndays, const int* months,
                                       const std::vector<uint8_t>& mask) {
  const size_t np = mask.size();
  for (size_t d = 0; d < ndays; ++d) {
    Sums& s = predicted_[months[d]];
    ++s.days;
    for (size_t k = 0; k < np; ++k)
      if (mask[k] && std::isfinite(expected[d * np + k])) s.sum += expected[d * np + k], ++s.values;
  }
}

bool PrecipitationLevel::shares_months() const {
  for (int m = 1; m <= 12; ++m)
    if (observed_[m].values > 0 && predicted_[m].values > 0) return true;
  return false;
}

double PrecipitationLevel::predicted_mean() const {
  const bool shared = shares_months();
  double sum = 0, values = 0;
  for (int m = 1; m <= 12; ++m)
    if (compared(m, shared)) sum += predicted_[m].sum, values += predicted_[m].values;
  return values > 0 ? sum / values : NAN;
}

double PrecipitationLevel::reference_mean() const {
  const bool shared = shares_months();
  double sum = 0, weight = 0;
  for (int m = 1; m <= 12; ++m) {
    if (observed_[m].values == 0) continue;
    if (shared && predicted_[m].values > 0)
      sum += double(predicted_[m].days) * observed_[m].sum / observed_[m].values, weight += double(predicted_[m].days);
    else if (!shared)
      sum += observed_[m].sum, weight += observed_[m].values;
  }
  return weight > 0 ? sum / weight : NAN;
}

size_t PrecipitationLevel::predicted_days() const {
  const bool shared = shares_months();
  size_t days = 0;
  for (int m = 1; m <= 12; ++m)
    if (compared(m, shared)) days += predicted_[m].days;
  return days;
}

std::vector<float> stochastic_precipitation(const BernoulliGammaParams& b, int members, uint64_t seed, double shift) {
  return StochasticPrecipitation(members, seed, shift).next(b);
}

}  // namespace ds
