#include "preprocess/standardize.h"

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

}  // namespace ds
