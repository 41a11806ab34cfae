// predict.members' realizations checked against the distribution they are drawn from, before the
// file is renamed into place:
//  - their mean over the modelled boxes against the expected precipitation's, in standard errors
//    of the draws (the Bernoulli-Gamma variance, closed form): a sampler that draws another
//    distribution (the scale taken for a rate, the shift left out) is refused, exit 1;
//  - their largest value against the largest training observation: a model whose gamma tails are
//    heavy (a shape far below 1 with a large scale, as after one demo epoch: 2435 mm/day in the
//    members, 355 observed in the training years, while the expected precipitation and its level
//    check were plausible) gets a warning naming the member, day, box and distribution there,
//    since the file is the model's distribution, sampled rightly, but not rain to feed on.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "predict/precipitation.h"

namespace ds {

// Standard errors beyond which the members' mean is refused. A right sampler lies beyond 8 with
// probability about 1e-15 where the normal approximation holds. kMinWetDraws expected wet draws
// make it hold for a predicted field (the sum's skewness about 2 / sqrt(wet draws x shape) under
// 0.1 for shapes above 0.04, which moves an 8-sigma quantile by under one sigma); a field whose
// variance a few draws of a far smaller shape dominate could reach 8 sigma rarely (about 1e-5).
inline constexpr double kMemberMeanSigmas = 8;
inline constexpr double kMinWetDraws = 1e4;
// The members' largest value above this many times the largest training observation warns. N
// times the training's days of draws move a gamma's maximum by about its scale times log(N):
// for 50 members of a test split, or a century of a GCM run, well under a factor 3 for a model
// fitted to the observations (1.4 for the 12-epoch demo model's 50 members); a warning, not a
// refusal, for the far longer runs that might pass it.
inline constexpr double kMemberMaxRatio = 3;
// The largest daily precipitation ever measured (WMO: Foc-Foc, La Reunion, 7-8 January 1966).
inline constexpr double kRecordDailyMm = 1825;

// Where a value lies, for the messages: its day index (into the prediction's days) and box.
struct MemberExtreme {
  double value = -1;  // mm/day; -1: no draw yet
  int member = 0;
  size_t day = 0, point = 0;
  double p = 0, shape = 0, scale = 0;  // the distribution it was drawn from
};

class MemberCheck {
 public:
  MemberCheck(int members, double shift) : members_(members), shift_(shift) {}
  // One block of days: `b` its parameters (time, point), `draws` its realizations (member, time,
  // point) as StochasticPrecipitation gives them, `first` the block's first day. Ocean and
  // unmodelled boxes (mask 0, NaN) are left out.
  void add(const BernoulliGammaParams& b, const std::vector<float>& draws, const std::vector<uint8_t>& mask,
           size_t first);
  // The members' mean in standard errors from the distribution's (0 before kMinWetDraws).
  double mean_sigmas() const;
  bool checkable() const { return wet_draws_ >= kMinWetDraws; }
  double members_mean() const { return values_ > 0 ? draw_sum_ / values_ : 0; }
  double expected_mean() const { return values_ > 0 ? expected_sum_ / values_ : 0; }
  const MemberExtreme& largest() const { return largest_; }

 private:
  int members_;
  double shift_;
  double values_ = 0, draw_sum_ = 0, expected_sum_ = 0, variance_sum_ = 0, wet_draws_ = 0;
  MemberExtreme largest_;
};

}  // namespace ds
