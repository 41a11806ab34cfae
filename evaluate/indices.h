// The VALUE validation indices for daily precipitation (Maraun et al. 2015; Gutiérrez et al.
// 2019), each computed on one grid box's time series. NaN values in either series are skipped
// pairwise, so a day missing in the observations is missing for the prediction too.
//   mean   mean precipitation (mm/day)
//   R01    wet-day frequency: share of days with precipitation >= 1 mm
//   SDII   simple daily intensity index: mean precipitation of the wet days (>= 1 mm)
//   P98    98th percentile of all days (linear interpolation between order statistics, R type 7)
//   P98Wet 98th percentile of the wet days only (R.VALUE index.prcXXth(prob = 0.98, threshold = 1))
//   WetAnnualMaxSpell, DryAnnualMaxSpell
//          the median over the years of each year's longest run of wet (>= 1 mm) / dry (< 1 mm)
//          days (R.VALUE index.spellmax.annual.prcXXth(prob = 0.5, condition GE / LT, threshold
//          1), VALUE's lookup table "Median of the annual wet spell maxima"; R type 7, so with two
//          years it is their mean). A run ends at the end of a calendar year (a spell crossing
//          1 January counts as two, one in each year) and at a missing day (R.VALUE drops the
//          days where either series is missing, and a gap in the dates cuts the spell). A year
//          with no wet (dry) day has a longest spell of 0 days (R.VALUE's max() of no spell is
//          -Inf there: a bug we do not copy). R.VALUE also drops the days after a year's last
//          gap (its segment list misses the last segment); we count them.
// Scores of a prediction against the observations on the same days:
//   RMSE, RMSE over observed wet days, Spearman rank correlation (ties get average ranks),
//   ROCSS = 2 * AUC - 1 of a wet-day score (probability or amount) against observed occurrence.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/calendar.h"

namespace ds {

constexpr double kWetDay = 1.0;  // mm/day, VALUE's wet-day threshold

struct Series {
  std::vector<double> obs, pred;  // the pairs where both are finite
  std::vector<size_t> time = {};  // the time step of each pair
};
// The days of the time steps: their numbers (days since 1970-01-01 in the data's calendar,
// consecutive days differ by 1) and calendar years. The spells need both.
struct TestDays {
  std::vector<int64_t> number;
  std::vector<int> year;
};
TestDays test_days(const std::vector<int64_t>& numbers, Calendar calendar);
// Collects the finite pairs of one point from (time, point) arrays.
Series pair_series(const std::vector<float>& obs, const std::vector<float>& pred, size_t npoints, size_t point);

double mean(const std::vector<double>& x);
double wet_day_frequency(const std::vector<double>& x);  // R01
double sdii(const std::vector<double>& x);               // NaN when there is no wet day
double percentile(std::vector<double> x, double q);       // q in [0, 1]
double wet_percentile(const std::vector<double>& x, double q);  // of the wet days; NaN if none
enum class Spell { wet, dry };
// The median over the years of each year's longest spell (days); x[i] is of day time[i] (ascending).
// NaN when there is no day.
double annual_max_spell(const std::vector<double>& x, const std::vector<size_t>& time, const TestDays& days,
                        Spell kind);
// The median of the finite values (the boxes where a score is defined); NaN if there is none.
double domain_median(const std::vector<double>& v);
double rmse(const Series& s);
double rmse_wet(const Series& s);                          // over observed wet days; NaN if none
double pearson(const Series& s);                           // NaN if either series is constant
double spearman(const Series& s);                          // NaN if either series is constant
// ROC skill score of `score` for the event obs >= kWetDay; NaN if all days are wet or all dry.
double roc_skill_score(const std::vector<double>& obs, const std::vector<double>& score);

}  // namespace ds
