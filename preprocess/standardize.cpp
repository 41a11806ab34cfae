#include "preprocess/standardize.h"

#include <algorithm>
#include <cmath>

#include "io/error.h"

namespace ds {

Standardization fit_standardization(const std::vector<float>& fields, size_t field_size, const std::vector<bool>& use) {
  const size_t ntime = use.size();
  if (fields.size() != ntime * field_size) throw Error("fit_standardization: size mismatch");
  std::vector<double> sum(field_size, 0), sum2(field_size, 0);
  size_t n = 0;
  // Two passes (mean, then squared deviations) avoid the cancellation of sum-of-squares.
  for (size_t t = 0; t < ntime; ++t) {
    if (!use[t]) continue;
    ++n;
    const float* f = &fields[t * field_size];
    for (size_t k = 0; k < field_size; ++k) sum[k] += f[k];
  }
  if (n < 2) throw InputError("standardization needs at least 2 training days, got " + std::to_string(n));
  for (auto& s : sum) s /= static_cast<double>(n);
  for (size_t t = 0; t < ntime; ++t) {
    if (!use[t]) continue;
    const float* f = &fields[t * field_size];
    for (size_t k = 0; k < field_size; ++k) sum2[k] += (f[k] - sum[k]) * (f[k] - sum[k]);
  }
  Standardization s;
  s.mean.resize(field_size);
  s.sd.resize(field_size);
  for (size_t k = 0; k < field_size; ++k) {
    const double sd = std::sqrt(sum2[k] / static_cast<double>(n - 1));
    s.mean[k] = static_cast<float>(sum[k]);
    s.sd[k] = sd > 0 ? static_cast<float>(sd) : 1.0f;
  }
  return s;
}

void apply_standardization(const Standardization& s, std::vector<float>& fields) {
  const size_t fs = s.mean.size();
  for (size_t base = 0; base < fields.size(); base += fs)
    for (size_t k = 0; k < fs; ++k) fields[base + k] = (fields[base + k] - s.mean[k]) / s.sd[k];
}

RunningStats::RunningStats(size_t field_size) : n_(field_size, 0), mean_(field_size, 0), m2_(field_size, 0) {}

void RunningStats::add(const float* f, size_t ntime) {
  const size_t fs = n_.size();
  while (ntime > 0) {
    if (pending_.empty() && ntime >= kMergeDays) {  // a whole group in the call: merged in place
      merge(f, kMergeDays);
      f += kMergeDays * fs, ntime -= kMergeDays;
      continue;
    }
    const size_t take = std::min(kMergeDays - pending_.size() / fs, ntime);
    pending_.insert(pending_.end(), f, f + take * fs);
    f += take * fs, ntime -= take;
    if (pending_.size() == kMergeDays * fs) {
      merge(pending_.data(), kMergeDays);
      pending_.clear();
    }
  }
}

void RunningStats::merge(const float* f, size_t ntime) {
  const size_t fs = n_.size();
  std::vector<double> nb(fs, 0), mb(fs, 0), m2b(fs, 0);
  for (size_t t = 0; t < ntime; ++t)
    for (size_t k = 0; k < fs; ++k)
      if (std::isfinite(f[t * fs + k])) nb[k] += 1, mb[k] += f[t * fs + k];
  for (size_t k = 0; k < fs; ++k) mb[k] = nb[k] > 0 ? mb[k] / nb[k] : 0;
  for (size_t t = 0; t < ntime; ++t)
    for (size_t k = 0; k < fs; ++k) {
      const double v = f[t * fs + k];
      if (std::isfinite(v)) m2b[k] += (v - mb[k]) * (v - mb[k]);
    }
  for (size_t k = 0; k < fs; ++k) {
    if (nb[k] == 0) continue;
    const double n = n_[k] + nb[k], d = mb[k] - mean_[k];
    mean_[k] += d * nb[k] / n;
    m2_[k] += m2b[k] + d * d * n_[k] * nb[k] / n;
    n_[k] = n;
  }
}

Standardization RunningStats::finish(bool per_field, const std::string& where) {
  const size_t fs = n_.size();
  if (!pending_.empty()) {
    merge(pending_.data(), pending_.size() / fs);
    pending_.clear();
  }
  Standardization s;
  s.mean.resize(fs);
  s.sd.resize(fs);
  // A statistic that is not finite in float (an overflowing sum, a value the range check let
  // through) would standardize every day of the box to NaN or 0: refuse it, naming the box.
  auto finite = [&](double mean, double m2, size_t k) {
    if (!std::isfinite(static_cast<float>(mean)) || !std::isfinite(m2) || !std::isfinite(static_cast<float>(std::sqrt(m2))))
      throw InputError(where + ": the standardization statistics are not finite at grid box " + std::to_string(k) +
                       " (mean " + std::to_string(mean) + ", sum of squared deviations " + std::to_string(m2) +
                       "): values out of any plausible range in the training days");
  };
  auto sd_of = [](double m2, double n) {
    const double sd = std::sqrt(m2 / (n - 1));
    return sd > 0 ? static_cast<float>(sd) : 1.0f;
  };
  for (size_t k = 0; k < fs; ++k)
    if (n_[k] < 2)
      throw InputError(where + ": standardization needs at least 2 days, got " + std::to_string(size_t(n_[k])) +
                       " at grid box " + std::to_string(k));
  // A field that does not change from day to day at any box (a constant written in its place, a
  // fill value taken for data) carries no weather: its sd was taken as 1 and the channel became a
  // fixed pattern, 0 everywhere under its own climatology, exit 0.
  if (std::all_of(m2_.begin(), m2_.end(), [](double m2) { return m2 == 0; }))
    throw InputError(where + ": the field does not change from day to day at any grid box: it carries no weather to "
                     "standardize (a constant or a fill value written in its place?)");
  if (per_field) {
    double n = 0, mean = 0, m2 = 0;  // the same pairwise merge, over boxes
    for (size_t k = 0; k < fs; ++k) {
      const double nn = n + n_[k], d = mean_[k] - mean;
      mean += d * n_[k] / nn;
      m2 += m2_[k] + d * d * n * n_[k] / nn;
      n = nn;
    }
    finite(mean, m2, 0);
    for (size_t k = 0; k < fs; ++k) s.mean[k] = static_cast<float>(mean), s.sd[k] = sd_of(m2, n);
    return s;
  }
  for (size_t k = 0; k < fs; ++k) {
    finite(mean_[k], m2_[k], k);
    s.mean[k] = static_cast<float>(mean_[k]), s.sd[k] = sd_of(m2_[k], n_[k]);
  }
  return s;
}

}  // namespace ds
