// Checks of a prediction before it is written: no non-finite value over a modelled box, and a
// level of precipitation the model could have meant (predict.plausible_ratio), first after
// kEarlyLevelDays and again at the end. Each refusal names the checkpoint, the days and what to do.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/training_store.h"
#include "predict/member_check.h"
#include "predict/precipitation.h"

namespace ds {

// "2004-07-12 at lat 35.25, lon -98.75": day `day` of `days`, box `point` of the predictand grid.
std::string day_and_box(const StoreMeta& meta, const std::vector<int64_t>& days, size_t day, size_t point,
                        const std::string& calendar);

// A non-finite output over a modelled box would be written as a missing value and scored as if
// the box were not there: an error naming the date and point instead. values: (n, channels, hw).
void check_finite(const std::vector<float>& values, int channels, const StoreMeta& meta, const std::vector<int64_t>& days,
                  size_t first, const std::string& calendar, const std::string& what);

// Days after which predict.plausible_ratio and plausible_sd are first checked, while the rest is
// still to come: a year over a domain lies far inside a factor 5 (or 5 sd of the domain mean) of
// its months' climatology unless the model is broken, and a broken model should not hold a node
// for a 95-year GCM run before saying so. The whole prediction is checked again at the end.
inline constexpr size_t kEarlyLevelDays = 365;

// "" at the end; " (after the first N of M days; the rest was not predicted)" for the early check.
std::string level_stage(size_t done, size_t n);

// The training observations' monthly sums over the modelled boxes, predict.plausible_ratio's
// reference; read before the first block so the check can run while the prediction goes on.
// Returns the largest training observation over the modelled boxes (mm/day), the members' check's.
double read_training_level(const StoreReader& store, PrecipitationLevel& level);

// predict.plausible_ratio: never a file of amounts the model could not have meant. The training
// observations' monthly means over the modelled boxes, weighted by the predicted days of each
// month, against the prediction's mean (no predicted month a training one: the training's whole
// mean, see PrecipitationLevel); refused (exit 1) before the file is renamed into place, so
// nothing is written. Fewer than 90 predicted days only warn: a case study's few days may lie far
// from any month's mean. `predictors`: the new predictors' folder, empty for the store's test
// split. `done` of `n` days predicted so far (the early check) or all of them.
void check_precipitation_level(const PrecipitationLevel& level, const Config& cfg, const std::string& ckpt,
                               const std::string& predictors, size_t done, size_t n);

// predict.members (see MemberCheck): refused (exit 1) when the members' mean lies beyond
// kMemberMeanSigmas of their distributions'; a warning when their largest value passes
// kMemberMaxRatio times `observed_max`, the largest training observation.
void check_members(const MemberCheck& check, double observed_max, const StoreMeta& meta,
                   const std::vector<int64_t>& days, const std::string& calendar, const std::string& ckpt);

}  // namespace ds
