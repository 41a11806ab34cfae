// evaluate/scores.nc: every per-box index and score of every method (the CNN's outputs and the
// baselines) and of the observations, as CF-1.8 NetCDF-4 on the prediction's lat/lon, so the
// maps can be replotted and the scores aggregated over any region (CDO, xarray, climate4R).
//
// One variable per index and method, named <index>_<method> ("rmse_cnn_expected",
// "mean_observed"), rather than one variable per index with a string `method` dimension: CDO
// knows no string dimension (it would show the methods as levels of a generic axis, without
// names), while `cdo fldmean -selname,rmse_linear_pcs` or `ds.rmse_cnn_expected[0].plot()` in
// xarray need nothing else. Each variable names its index and method in attributes, so
// `ds.filter_by_attrs(index="rmse")` gathers one index of every method.
//
// The test period is one step of the time axis, (time=1, lat, lon), as `cdo timmean` writes a
// period mean: time in the middle of the period, time_bnds [first day, day after the last],
// which `cell_methods` "time: mean" refers to. (A scalar time coordinate would spare xarray
// users the [0], but CDO cannot attach one: "Coordinates variable time can't be assigned".)
// The period is also in global attributes (test_period_start, test_period_end, test_days).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "evaluate/continuous_scores.h"
#include "evaluate/scores.h"

namespace ds {

struct ScoreField {
  std::string index, method;  // the variable is <index>_<method>
  std::string long_name, units, standard_name, cell_methods;  // empty: attribute left out
  std::vector<double> values;                                   // (lat, lon); NaN: _FillValue
};

// One season's per-box fields (evaluate/seasons.h), written besides the annual ones as variables
// <index>_<method>_<season> ("rmse_cnn_expected_DJF", attribute season = "DJF"), each season on
// its own climatological time axis time_<season> of one step (CF-1.8 section 7.4: the
// `climatology` attribute names climatology_bnds_<season>, from the first day of the season-year
// of its first test day to the day after the season in that of its last: DJF of a 2004 test
// year is [2003-12-01, 2005-03-01]; cell_methods "time_DJF: mean within years time_DJF: mean over
// years" where the annual field has "time: mean"). One variable per season rather than a
// season dimension, as the annual ones are per method: `cdo selname,rmse_cnn_expected_DJF`.
struct SeasonFields {
  std::string season;         // DJF, MAM, JJA, SON
  std::vector<int64_t> days;  // the season's test days, ascending
  std::vector<ScoreField> fields;
};

struct ScoresFile {
  std::vector<double> lat, lon;         // the prediction's cell centres
  std::vector<int64_t> days;            // the test days (days since 1970-01-01 in `calendar`)
  std::string calendar = "standard";    // CF name
  std::string variable;                 // the predictand scored: tas, tasmax, tasmin put every field at 2 m
  std::string title, history, source;   // history: the command line (stamped with the time)
  std::map<std::string, std::string> attributes;  // further global attributes
  std::vector<ScoreField> fields;
  std::vector<SeasonFields> seasons;    // besides annual; none: the file is as before seasons
};

// The per-box fields of a precipitation evaluation: amounts in kg m-2 s-1 as the prediction's
// pr (86400 kg m-2 s-1 = 1 mm/day), frequencies and skill scores in 1.
std::vector<ScoreField> precipitation_score_fields(const Evaluation& e);
// The per-box fields of a continuous predictand (tas, ...) in its units; `standard_name` is the
// predictand's ("air_temperature"; empty if none).
std::vector<ScoreField> continuous_score_fields(const ContinuousEvaluation& e, const std::string& standard_name);

// Writes atomically (AtomicFile). Error naming the file on failure.
void write_scores_file(const std::string& path, const ScoresFile& f);

}  // namespace ds
