#include "predict/plausibility.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>

#include "io/calendar.h"
#include "io/error.h"

namespace ds {

std::string day_and_box(const StoreMeta& meta, const std::vector<int64_t>& days, size_t day, size_t point,
                        const std::string& calendar) {
  return to_string(date_from_days(days.at(day), parse_calendar(calendar, "predict"))) + " at lat " +
         fmt::format("{:g}", meta.predictand_lat[point / meta.Wy()]) + ", lon " +
         fmt::format("{:g}", meta.predictand_lon[point % meta.Wy()]);
}

void check_finite(const std::vector<float>& values, int channels, const StoreMeta& meta, const std::vector<int64_t>& days,
                  size_t first, const std::string& calendar, const std::string& what) {
  const size_t hw = size_t(meta.Hy()) * meta.Wy();
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t k = i % hw, t = i / hw / channels;
    if (!meta.mask[k] || std::isfinite(values[i])) continue;
    throw Error("predict: the " + what + " is " + std::to_string(values[i]) + " on " +
                day_and_box(meta, days, first + t, k, calendar) +
                " (a modelled box): the inputs or the weights are not sane; nothing was written");
  }
}

std::string level_stage(size_t done, size_t n) {
  return done < n ? fmt::format(" (after the first {} of {} days; the rest was not predicted)", done, n) : "";
}

double read_training_level(const StoreReader& store, PrecipitationLevel& level) {
  const StoreMeta& meta = store.meta();
  const std::vector<int> months = months_of(store.read_time("train"), parse_calendar(meta.calendar, store.path()));
  const size_t np = meta.mask.size();
  double largest = 0;
  store.for_each_block("train", StoreReader::Field::obs, [&](size_t first, size_t r, const float* obs) {
    level.add_observed(obs, r, months.data() + first, meta.mask, meta.wet_threshold);
    for (size_t i = 0; i < r * np; ++i)
      if (meta.mask[i % np] && obs[i] > largest) largest = obs[i];  // false for NaN
  });
  return largest;
}

void check_precipitation_level(const PrecipitationLevel& level, const Config& cfg, const std::string& ckpt,
                               const std::string& predictors, size_t done, size_t n) {
  const double limit = cfg.predict.plausible_ratio;
  if (limit == 0 || level.predicted_days() == 0) return;
  const double predicted = level.predicted_mean(), reference = level.reference_mean();
  if (plausible_precipitation_level(predicted, reference, limit)) return;
  const std::string what = fmt::format(
      "{} on {}: the predicted expected precipitation averages {:.4g} mm/day over the modelled boxes and {} days, "
      "the training observations {:.4g} mm/day {}: {:.3g} times theirs (beyond a factor {:g} either way, "
      "predict.plausible_ratio){}",
      ckpt, predictors.empty() ? "the store's test split" : predictors, predicted, level.predicted_days(), reference,
      level.shares_months() ? "in the same months"
                            : "over all their months (no predicted day lies in a month the model trained on)",
      predicted / reference, limit, level_stage(done, n));
  if (level.predicted_days() < 90) {
    spdlog::warn("{}; not refused for fewer than 90 days, which may lie far from their months' mean", what);
    return;
  }
  if (!level.shares_months())
    throw Error(what + ". The model never trained on these months: fetch the predictors for its season, or train on "
                       "theirs (predict.plausible_ratio 0 writes the prediction unchecked); nothing written");
  throw Error(what + ". The model does not reproduce the precipitation's level: see its training loss (metrics.csv "
                     "beside the checkpoint) and whether these predictors are the training ones (variables, levels, "
                     "units); a scenario meant to lie this far out: raise predict.plausible_ratio (0: unchecked); "
                     "nothing written");
}

void check_members(const MemberCheck& check, double observed_max, const StoreMeta& meta,
                   const std::vector<int64_t>& days, const std::string& calendar, const std::string& ckpt) {
  if (check.checkable() && std::abs(check.mean_sigmas()) > kMemberMeanSigmas)
    throw Error(fmt::format(
        "predict: the stochastic members of {} average {:.5g} mm/day over the modelled boxes, their Bernoulli-Gamma "
        "distributions {:.5g}: {:.1f} standard errors apart (a right sampler stays within {:g}); the draws do not "
        "follow the model's distribution, a fault of this build, not of the model or data: please report it "
        "(predict.members: 0 writes the prediction without members); nothing written",
        ckpt, check.members_mean(), check.expected_mean(), check.mean_sigmas(), kMemberMeanSigmas));
  if (check.checkable())
    spdlog::debug("stochastic members average {:.5g} mm/day over the modelled boxes, their distributions {:.5g}: "
                  "{:.2f} standard errors apart",
                  check.members_mean(), check.expected_mean(), check.mean_sigmas());
  const MemberExtreme& top = check.largest();
  if (!(observed_max > 0) || top.value <= kMemberMaxRatio * observed_max) return;
  const double wet_mean = top.shape * top.scale + meta.wet_threshold;
  spdlog::warn(
      "stochastic member {} reaches {:.0f} mm/day on {}, {:.1f} times the largest training observation ({:.0f} "
      "mm/day){}: drawn from p_wet {:.3g}, gamma_shape {:.3g} and gamma_scale {:.4g} mm/day there, whose wet days "
      "average {:.4g} mm/day, hidden in the expected precipitation ({:.3g} mm/day). The members sample the model's "
      "distribution rightly, but its wet-day amounts are not plausible: a model trained further (see metrics.csv "
      "beside {}) usually fits them; check the members' extremes before using them",
      top.member, top.value, day_and_box(meta, days, top.day, top.point, calendar), top.value / observed_max,
      observed_max,
      top.value > kRecordDailyMm ? fmt::format(", above the largest daily precipitation ever measured ({:g} mm)",
                                                kRecordDailyMm)
                                 : "",
      top.p, top.shape, top.scale, wet_mean, top.p * wet_mean, ckpt);
}

}  // namespace ds
