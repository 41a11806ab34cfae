#include "predict/member_check.h"

#include <cmath>

namespace ds {

void MemberCheck::add(const BernoulliGammaParams& b, const std::vector<float>& draws, const std::vector<uint8_t>& mask,
                      size_t first) {
  const size_t n = b.p.size(), np = b.npoints;
  for (size_t i = 0; i < n; ++i) {
    if (!mask[i % np] || !std::isfinite(b.p[i])) continue;
    // One draw: wet with probability p, then Gamma(shape a, scale s) + shift. Its mean
    // p (a s + shift) and variance p (a s^2 + (a s + shift)^2) - mean^2, each member alike.
    const double p = b.p[i], a = b.alpha[i], s = b.beta[i];
    const double wet_mean = a * s + shift_, mean = p * wet_mean;
    const double variance = p * (a * s * s + wet_mean * wet_mean) - mean * mean;
    values_ += members_;
    expected_sum_ += members_ * mean;
    variance_sum_ += members_ * variance;
    wet_draws_ += members_ * p;
    for (int m = 0; m < members_; ++m) {
      const float v = draws[size_t(m) * n + i];
      draw_sum_ += v;
      if (v > largest_.value) largest_ = {v, m, first + i / np, i % np, p, a, s};
    }
  }
}

double MemberCheck::mean_sigmas() const {
  if (!checkable() || !(variance_sum_ > 0)) return 0;
  return (draw_sum_ - expected_sum_) / std::sqrt(variance_sum_);
}

}  // namespace ds
