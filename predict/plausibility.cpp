#include "predict/plausibility.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>

#include "io/calendar.h"
#include "io/error.h"

namespace ds {

void check_finite(const std::vector<float>& values, int channels, const StoreMeta& meta, const std::vector<int64_t>& days,
                  size_t first, const std::string& calendar, const std::string& what) {
  const size_t hw = size_t(meta.Hy()) * meta.Wy();
  for (size_t i = 0; i < values.size(); ++i) {
    const size_t k = i % hw, t = i / hw / channels;
    if (!meta.mask[k] || std::isfinite(values[i])) continue;
    throw Error("predict: the " + what + " is " + std::to_string(values[i]) + " on " +
                to_string(date_from_days(days.at(first + t), parse_calendar(calendar, "predict"))) + " at lat " +
                fmt::format("{:g}", meta.predictand_lat[k / meta.Wy()]) + ", lon " +
                fmt::format("{:g}", meta.predictand_lon[k % meta.Wy()]) +
                " (a modelled box): the inputs or the weights are not sane; nothing was written");
  }
}

std::string level_stage(size_t done, size_t n) {
  return done < n ? fmt::format(" (after the first {} of {} days; the rest was not predicted)", done, n) : "";
}

void read_training_level(const StoreReader& store, PrecipitationLevel& level) {
  const StoreMeta& meta = store.meta();
  const std::vector<int> months = months_of(store.read_time("train"), parse_calendar(meta.calendar, store.path()));
  store.for_each_block("train", StoreReader::Field::obs, [&](size_t first, size_t r, const float* obs) {
    level.add_observed(obs, r, months.data() + first, meta.mask, meta.wet_threshold);
  });
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

}  // namespace ds
