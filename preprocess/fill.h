// Missing values (NaN) in predictors, by preprocess.fill:
//   none          an error naming the file, variable and date (the default: a reanalysis has no
//                 gaps, so a NaN means a broken download or a wrong variable)
//   nearest_time  the same point's value on the nearest day that has one, within
//                 kMaxFillDays either side (the earlier day on a tie)
//   climatology   the training mean of the grid box: the value is left NaN through regridding
//                 and the statistics (which skip NaN) and becomes 0 once standardized
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "preprocess/fetched_field.h"

namespace ds {

enum class FillPolicy { none, nearest_time, climatology };
FillPolicy parse_fill_policy(const std::string& name);  // UsageError if unknown

// A gap longer than a month is not weather any more: filling it from its neighbours would
// invent a season, so nearest_time gives up (an error) beyond 15 days.
constexpr int kMaxFillDays = 15;

// A predictor mostly filled (fill: climatology) is mostly the training mean: its values tell the
// network nothing of those days, and a model trained, scored or run on them is one of the fill.
// Preprocess (per split) and predict refuse a channel with more than this share of its values on
// the predictor grid left to the training mean (what regridding could not reach from the source).
// nearest_time's values are other days' weather (within kMaxFillDays) and are not counted.
constexpr double kMostFilled = 0.5;

// Applies the policy to `block`: the time steps `idx` of `f`, on f's grid. Returns how many
// values were missing. `key` is the config key that set the policy (preprocess.fill, or
// predict.fill for new predictors): the error for a gap names it.
size_t fill_missing(const FetchedField& f, const std::vector<size_t>& idx, std::vector<float>& block, FillPolicy policy,
                    const std::string& key = "preprocess.fill");

}  // namespace ds
