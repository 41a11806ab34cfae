#include "evaluate/evaluation_maps.h"

#include <algorithm>
#include <filesystem>

#include "evaluate/maps.h"
#include "evaluate/seasons.h"

namespace ds {

namespace {

// One kind of map: its file name (without .png) and palette; kinds with the same `scale` number
// share one colour scale (observed and predicted mean: one scale, so they compare).
struct MapKind {
  std::string file;
  Palette palette;
  bool centred;
  int scale;
};
// The maps of each evaluation, in the order its period's fields are made (precipitation_period,
// continuous_period). Precipitation: amounts white-yellow (dry) to blue (wet); the bias brown
// (drier) to green (wetter).
const std::vector<MapKind>& precipitation_kinds() {
  static const std::vector<MapKind> kinds{{"observed_mean", Palette::kYlGnBu, false, 0},
                                          {"predicted_mean", Palette::kYlGnBu, false, 0},
                                          {"bias", Palette::kBrBG, true, 1},
                                          {"rocss", Palette::kPiYG, true, 2}};
  return kinds;
}
const std::vector<MapKind>& continuous_kinds() {
  static const std::vector<MapKind> kinds{{"observed_mean", Palette::kViridis, false, 0},
                                          {"predicted_mean", Palette::kViridis, false, 0},
                                          {"bias", Palette::kRdBu, true, 1},
                                          {"rmse", Palette::kViridis, false, 2},
                                          {"pearson", Palette::kViridis, false, 3}};
  return kinds;
}
// One period's maps: annual (suffix "") or a season ("_DJF"), a field per kind, scales unset.
struct PeriodMaps {
  std::string suffix, summary_title;
  std::vector<MapField> fields;
};

// Each kind's scale from its fields of every period together (evaluation_maps.h says why), then
// every map and each period's summary of the panels `summary` (indices into kinds).
void draw_maps(const std::string& dir, const MapGrid& grid, const std::vector<MapKind>& kinds,
               const std::vector<size_t>& summary, std::vector<PeriodMaps> periods) {
  for (size_t k = 0; k < kinds.size(); ++k) {
    std::vector<const std::vector<double>*> pooled;
    for (const PeriodMaps& p : periods)
      for (size_t j = 0; j < kinds.size(); ++j)
        if (kinds[j].scale == kinds[k].scale) pooled.push_back(&p.fields[j].values);
    const ColourScale s = colour_scale(pooled, kinds[k].palette, kinds[k].centred);
    for (PeriodMaps& p : periods) p.fields[k].scale = s;
  }
  const Basemap basemap = load_basemap(grid.lon, grid.lat);
  for (const PeriodMaps& p : periods) {
    for (size_t k = 0; k < kinds.size(); ++k)
      write_map_png(dir + "/" + kinds[k].file + p.suffix + ".png", p.fields[k], basemap);
    std::vector<MapField> panels;
    for (size_t k : summary) panels.push_back(p.fields[k]);
    write_figure_png(dir + "/summary" + p.suffix + ".png", p.summary_title, panels, basemap);
  }
}

// The words a title gets for a period: "test period" for annual, "DJF of the test period"; and
// the tail of a title that names no period: nothing for annual (the titles drawn before seasons
// existed), ", DJF" for a season.
std::string period_words(const std::string& season) {
  return season.empty() ? "test period" : season + " of the test period";
}
std::string season_tail(const std::string& season) { return season.empty() ? "" : ", " + season; }
// The summary's title: the annual one as before seasons; a season's as its score table's.
std::string summary_title(const std::string& head, const std::string& season, size_t ndays, const std::string& config) {
  if (season.empty()) return head + ": " + config;
  return head + ", " + season + " (" + std::to_string(ndays) + " test days): " + config;
}

PeriodMaps precipitation_period(const MapGrid& grid, const std::string& config, const std::string& season,
                                const Evaluation& e) {
  const MethodScores& cnn = e.methods.front();  // cnn_deterministic
  std::vector<double> bias(e.npoints);
  for (size_t k = 0; k < e.npoints; ++k) bias[k] = cnn.indices.mean[k] - e.observed.mean[k];
  auto field = [&](const std::string& title, const std::string& units, const std::vector<double>& v) {
    return MapField{title, units, grid.lon, grid.lat, v, {}};
  };
  const std::string tail = season_tail(season);
  return {season.empty() ? "" : "_" + season,
          summary_title("downscale evaluate", season, e.ndays, config),
          {field("Observed mean precipitation, " + period_words(season), "mm/day", e.observed.mean),
           field("CNN (deterministic) mean precipitation" + tail, "mm/day", cnn.indices.mean),
           field("CNN (deterministic) bias of the mean precipitation" + tail, "mm/day", bias),
           field("CNN ROC skill score of wet days" + tail, "", cnn.rocss)}};
}

PeriodMaps continuous_period(const MapGrid& grid, const std::string& config, const std::string& season,
                             const ContinuousEvaluation& e) {
  const ContinuousScores& cnn = e.methods.front();
  const std::string& v = e.variable;
  const std::string& u = e.units;
  auto field = [&](const std::string& title, const std::string& units, const std::vector<double>& values) {
    return MapField{title, units, grid.lon, grid.lat, values, {}};
  };
  const std::string tail = season_tail(season);
  return {season.empty() ? "" : "_" + season,
          summary_title("downscale evaluate (" + v + ")", season, e.ndays, config),
          {field("Observed mean " + v + ", " + period_words(season), u, e.observed_mean),
           field("CNN mean " + v + ", " + period_words(season), u, cnn.mean),
           field("CNN bias of the mean " + v + tail, u, cnn.bias),
           field("CNN RMSE of daily " + v + tail, u, cnn.rmse),
           field("CNN Pearson correlation of daily " + v + tail, "", cnn.pearson)}};
}

}  // namespace

void write_precipitation_maps(const std::string& dir, const MapGrid& grid, const std::string& config,
                              const Evaluation& annual, const std::vector<SeasonEvaluation>& seasons) {
  const std::vector<MapKind>& kinds = precipitation_kinds();
  std::vector<PeriodMaps> periods{precipitation_period(grid, config, "", annual)};
  for (const auto& s : seasons) periods.push_back(precipitation_period(grid, config, s.season, s.evaluation));
  draw_maps(dir, grid, kinds, {0, 1, 2, 3}, std::move(periods));
}

void write_continuous_maps(const std::string& dir, const MapGrid& grid, const std::string& config,
                           const ContinuousEvaluation& annual, const std::vector<ContinuousSeason>& seasons) {
  const std::vector<MapKind>& kinds = continuous_kinds();
  std::vector<PeriodMaps> periods{continuous_period(grid, config, "", annual)};
  for (const auto& s : seasons) periods.push_back(continuous_period(grid, config, s.season, s.evaluation));
  draw_maps(dir, grid, kinds, {0, 1, 2, 4}, std::move(periods));  // summary: means, bias, correlation
}

size_t remove_unlisted_season_figures(const std::string& dir, const std::vector<std::string>& seasons) {
  // Every figure a season gets: its score table, each kind's map of either evaluation, the summary.
  std::vector<std::string> names{"scores_table", "summary"};
  for (const auto* kinds : {&precipitation_kinds(), &continuous_kinds()})
    for (const MapKind& k : *kinds) names.push_back(k.file);
  size_t removed = 0;
  for (const std::string& season : season_names()) {
    if (season == "annual" || std::find(seasons.begin(), seasons.end(), season) != seasons.end()) continue;
    for (const std::string& name : names) {
      std::error_code ec;  // absent: nothing to do
      removed += std::filesystem::remove(dir + "/" + name + "_" + season + ".png", ec);
    }
  }
  return removed;
}

}  // namespace ds
