// Scores of a continuous predictand (temperature and the like) against the observations of the
// same days, per grid box and averaged over the modelled boxes: the VALUE-style accuracy and
// distribution scores of a daily series,
//   bias      mean(predicted) - mean(observed)                      (the variable's units)
//   RMSE      root mean squared error of the daily values            (the variable's units)
//   Pearson   correlation of the daily series                        (NaN if either is constant)
//   sd_ratio  sd(predicted) / sd(observed)                           (1 is right; n - 1 both)
// Each box uses the days where both series are finite, so a day missing in the observations is
// missing for the prediction too.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "evaluate/domain_table.h"

namespace ds {

struct ContinuousMethod {
  std::string name;
  std::vector<float> values;  // (time, point) in the observations' units
};

struct ContinuousScores {
  std::string name;
  std::vector<double> mean, bias, rmse, pearson, sd_ratio;  // per point; NaN off the mask
  std::map<std::string, double> domain;                     // means over the modelled boxes
  std::map<std::string, double> median;                     // medians over the modelled boxes
};

struct ContinuousEvaluation {
  std::string variable, units;
  size_t npoints = 0, ndays = 0;
  std::vector<double> observed_mean, observed_sd;
  std::map<std::string, double> observed_domain;
  std::vector<ContinuousScores> methods;
};

// obs: (time, point), NaN where not observed; mask: 1 where the box is modelled.
ContinuousEvaluation evaluate_continuous(const std::vector<float>& obs, size_t npoints, const std::vector<uint8_t>& mask,
                                         const std::vector<ContinuousMethod>& methods, const std::string& variable,
                                         const std::string& units);

const std::vector<std::string>& continuous_score_names();  // bias, RMSE, Pearson, sd_ratio
// With seasons: as evaluation_json / evaluation_csv (evaluate/scores.h).
using ContinuousSeason = SeasonOf<ContinuousEvaluation>;
// `about`: what was scored against what (prediction, checkpoint, store, test period), as top-level keys.
std::string continuous_json(const ContinuousEvaluation& e, const std::vector<ContinuousSeason>& seasons = {},
                            const std::map<std::string, std::string>& about = {});
std::string continuous_csv(const ContinuousEvaluation& e, const std::vector<ContinuousSeason>& seasons = {});

}  // namespace ds
