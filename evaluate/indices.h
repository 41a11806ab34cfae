// The VALUE validation indices for daily precipitation (Maraun et al. 2015; Gutiérrez et al.
// 2019), each computed on one grid box's time series. NaN values in either series are skipped
// pairwise, so a day missing in the observations is missing for the prediction too.
//   mean   mean precipitation (mm/day)
//   R01    wet-day frequency: share of days with precipitation >= 1 mm
//   SDII   simple daily intensity index: mean precipitation of the wet days (>= 1 mm)
//   P98    98th percentile of all days (linear interpolation between order statistics, R type 7)
// Scores of a prediction against the observations on the same days:
//   RMSE, RMSE over observed wet days, Spearman rank correlation (ties get average ranks),
//   ROCSS = 2 * AUC - 1 of a wet-day score (probability or amount) against observed occurrence.
#pragma once
#include <cstddef>
#include <vector>

namespace ds {

constexpr double kWetDay = 1.0;  // mm/day, VALUE's wet-day threshold

struct Series {
  std::vector<double> obs, pred;  // the pairs where both are finite
};
// Collects the finite pairs of one point from (time, point) arrays.
Series pair_series(const std::vector<float>& obs, const std::vector<float>& pred, size_t npoints, size_t point);

double mean(const std::vector<double>& x);
double wet_day_frequency(const std::vector<double>& x);  // R01
double sdii(const std::vector<double>& x);               // NaN when there is no wet day
double percentile(std::vector<double> x, double q);       // q in [0, 1]
// The median of the finite values (the boxes where a score is defined); NaN if there is none.
double domain_median(const std::vector<double>& v);
double rmse(const Series& s);
double rmse_wet(const Series& s);                          // over observed wet days; NaN if none
double spearman(const Series& s);                          // NaN if either series is constant
// ROC skill score of `score` for the event obs >= kWetDay; NaN if all days are wet or all dry.
double roc_skill_score(const std::vector<double>& obs, const std::vector<double>& score);

}  // namespace ds
