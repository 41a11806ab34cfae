// The maps `downscale evaluate` draws (PNG, evaluate/maps.h), for the whole test period and for
// each season of evaluate.seasons besides annual:
//   precipitation  observed_mean, predicted_mean (CNN deterministic), bias (of the mean), rocss
//   other (tas)    observed_mean, predicted_mean (CNN), bias, rmse, pearson
// and summary.png, four of them as panels of one figure (precipitation: all four; otherwise the
// two means, the bias and the correlation). A season's maps are the same figures of its test
// days only, named <map>_<season>.png (as scores_table_<season>.png), the season in the titles.
// Colour scales: one per map kind (observed and predicted mean share one), computed from that
// kind's fields of every period drawn (annual and each season) together, by colour_scale's rule
// (2nd..98th percentile, round limits, centred palettes symmetric about 0). So a colour means the
// same amount in the annual map and in every season's map of the run, and the seasons can be
// compared by eye (a dry JJA reads as pale next to a wet DJF) rather than each map stretching
// its own range; a season's extremes beyond the shared limits get the colour bar's triangles.
// With evaluate.seasons [annual] (the default) the fields pooled are the annual ones only: the
// maps are those drawn before seasons existed, byte for byte.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "evaluate/continuous_scores.h"
#include "evaluate/scores.h"

namespace ds {

struct MapGrid {
  std::vector<double> lon, lat;  // the prediction's, ascending
};

// Writes dir/{observed_mean,predicted_mean,bias,rocss,summary}.png and the same with _<season>
// for each season. `config` names the run in the summary's title.
void write_precipitation_maps(const std::string& dir, const MapGrid& grid, const std::string& config,
                              const Evaluation& annual, const std::vector<SeasonEvaluation>& seasons);
// Writes dir/{observed_mean,predicted_mean,bias,rmse,pearson,summary}.png and the same with
// _<season> for each season.
void write_continuous_maps(const std::string& dir, const MapGrid& grid, const std::string& config,
                           const ContinuousEvaluation& annual, const std::vector<ContinuousSeason>& seasons);

// The figures of seasons not in `seasons` left by an earlier evaluate into dir (scores_table,
// the maps and summary, <name>_<season>.png), removed so that the folder holds the figures of
// this scores.json only. Returns how many were removed.
size_t remove_unlisted_season_figures(const std::string& dir, const std::vector<std::string>& seasons);

}  // namespace ds
