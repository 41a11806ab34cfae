// Driver of `downscale evaluate`: the prediction of the test period against the observations,
// next to two baselines computed from the same store (climatology and a linear model on the
// predictors' principal components), over the observation window and the modelled boxes only.
// Precipitation: the VALUE indices and scores; any other predictand (tas, ...): bias, RMSE,
// Pearson correlation and ratio of standard deviations. Writes evaluate/scores.json,
// scores.csv, scores.nc (per box), maps (PNG), a multi-panel summary.png and the score table (PNG);
// with evaluate.seasons, each season's figures besides (evaluate/seasons.h; JSON, CSV, NetCDF, log,
// its score table and maps, <name>_<season>.png: evaluate/evaluation_maps.h).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <tuple>

#include "evaluate/baselines.h"
#include "evaluate/continuous_scores.h"
#include "evaluate/indices.h"
#include "evaluate/evaluation_maps.h"
#include "evaluate/maps.h"
#include "evaluate/prediction_checks.h"
#include "evaluate/scores.h"
#include "evaluate/scores_file.h"
#include "evaluate/seasons.h"
#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/cf_axes.h"
#include "io/command_line.h"
#include "io/error.h"
#include "io/precipitation_file.h"
#include "io/predictand_file.h"
#include "io/run_lock.h"
#include "io/sha256.h"
#include "io/stop_signal.h"
#include "io/training_store.h"
#include "io/version.h"
#include "train/checkpoint.h"
#include "pipeline/stages.h"
#include "predict/window.h"
#include "train/store_settings.h"

namespace ds {

namespace {

void write_text(const std::string& path, const std::string& text) { write_file_atomically(path, text); }

// A stop between the score files and the figures: say which outputs are this run's.
constexpr const char* kMapsStopNote =
    "drawing the figures; scores.json, scores.csv and scores.nc are written, the figures are an earlier run's, if any";

// What of the figures is an earlier run's when drawing one of them fails (OutputsInOrder's `rest`).
constexpr const char* kFiguresRest = "the figures drawn before this one are this run's, the others an earlier run's, if any";

// evaluate's outputs, each written whole (atomically) one after the other: a failure after the
// first (a full disk) leaves this run's files beside an earlier run's, and the error says which.
class OutputsInOrder {
 public:
  explicit OutputsInOrder(std::string dir) : dir_(std::move(dir)) {}
  // `rest`: what of this step and the later ones is an earlier run's (the figures: those not
  // drawn again).
  template <typename Write>
  void write(const std::string& what, const Write& w,
             const std::string& rest = "the rest is an earlier run's, if any") {
    try {
      w();
    } catch (const Interrupted&) {
      throw;  // its own note says what is written
    } catch (const Error& e) {
      if (done_.empty()) throw;
      std::string done;
      for (const auto& d : done_) done += (done.empty() ? "" : ", ") + d;
      throw Error(std::string(e.what()) + " (while writing " + what + " into " + dir_ + ": " + done +
                      (done_.size() > 1 ? " are" : " is") + " this run's; " + rest + ")",
                  e.code());
    }
    done_.push_back(what);
  }

 private:
  std::string dir_;
  std::vector<std::string> done_;
};

// What scores.nc says of the prediction it scores, beside its path (`source`): the checkpoint and
// the store, as the prediction names them, so that the file alone tells which model it is of.
template <typename Prediction>
std::map<std::string, std::string> scored_prediction(const Prediction& pred,
                                                     std::map<std::string, std::string> extra = {}) {
  extra["checkpoint"] = pred.checkpoint.empty() ? "not recorded" : pred.checkpoint;
  for (const auto& [key, value] : pred.attributes) extra[key] = value;  // store_identity, checkpoint_ and model_sha256
  return extra;
}

// evaluate/scores.nc: the per-box fields behind the report, on the prediction's grid and days.
void write_scores_nc(const std::string& dir, const std::string& pred_path, const std::string& variable,
                     const std::vector<double>& lat,
                     const std::vector<double>& lon, const std::vector<int64_t>& days, const std::string& calendar,
                     std::vector<ScoreField> fields, const std::map<std::string, std::string>& extra,
                     std::vector<SeasonFields> seasons) {
  ScoresFile f;
  f.lat = lat;
  f.lon = lon;
  f.days = days;
  f.calendar = calendar;
  f.variable = variable;
  f.title = "per-box scores of the downscaled prediction and the baselines over the test period";
  f.source = "downscale " DOWNSCALE_VERSION " evaluate of " + pred_path;
  f.history = command_line();
  f.attributes = extra;
  f.fields = std::move(fields);
  f.seasons = std::move(seasons);
  write_scores_file(dir + "/scores.nc", f);
}

// The prediction must be of the store's test split on its observation window.
void check_matches(const std::string& pred_path, const StoreReader& store, const std::vector<int64_t>& days,
                   const std::string& calendar, const std::vector<double>& lat, const std::vector<double>& lon,
                   const Window& win,
                   const std::map<std::string, std::string>& attributes, const std::string& checkpoint) {
  // Predicted from the model the checkpoint holds now: its model_sha256 (spec and tensors), or in
  // files written before that was recorded the file's checkpoint_sha256 (older files record
  // neither; a checkpoint no longer there, its run folder moved, is not held against the prediction).
  const auto model = attributes.find(kModelSumAttr);
  const auto sum = attributes.find(kCheckpointSumAttr);
  const bool there = !checkpoint.empty() && path_exists(checkpoint);
  const bool rewritten = there && (model != attributes.end() ? checkpoint_model_sha256(checkpoint) != model->second
                                   : sum != attributes.end() && file_sha256(checkpoint) != sum->second);
  if (rewritten)
    throw InputError(pred_path + ": predicted from " + checkpoint + " as it was before it was rewritten with another model (trained " +
                     "again into its folder?): its scores would be the new model's in name only; run `downscale " +
                     "predict` again");
  // Predicted from this store's model and test split: the identity predict wrote (older files have none).
  const auto id = attributes.find(kStoreIdentityAttr);
  if (id != attributes.end() && id->second != store.identity())
    throw InputError(pred_path + ": predicted with a model of another store than " + store.path() +
                     " (its store_identity differs: channels, grids or statistics): predict again with a model of this store (after "
                     "preprocess was run again, train it again first)");
  if (store.read_time("test") != days || lat.size() != size_t(win.rows) || lon.size() != size_t(win.cols))
    throw InputError(pred_path + ": its days or grid differ from the test split of " + store.path() +
                     " (predicted with another store?)");
  // The boxes themselves, not their counts alone (a grid shifted by a quarter degree was scored
  // against the store's observations, exit 0): predict writes the store's coordinates as they are.
  for (const auto& [axis, got, want] : {std::tuple<const char*, const std::vector<double>*, std::vector<double>>{
                                            "lat", &lat, window_lat(store.meta(), win)},
                                        {"lon", &lon, window_lon(store.meta(), win)}})
    for (size_t i = 0; i < want.size(); ++i)
      if (!(std::abs((*got)[i] - want[i]) <= 1e-3))
        throw InputError(fmt::format("{}: {} {} is {:g}, but the test split of {} has its box at {:g}: another grid "
                                     "than the store's (the file edited or regridded since predict?)",
                                     pred_path, axis, i, (*got)[i], store.path(), want[i]));
  // Compared as calendars, so "gregorian" in one and "standard" in the other agree.
  if (cf_name(parse_calendar(calendar, pred_path)) != cf_name(parse_calendar(store.meta().calendar, store.path())))
    throw InputError(pred_path + ": its calendar " + calendar + " is not the store's " + store.meta().calendar);
}

// A season of evaluate.seasons besides annual and its time steps among the test days.
struct SeasonSteps {
  std::string season;
  std::vector<int> months;
  std::vector<size_t> steps;
};
// Checked before any scoring: a season without a test day (fetch.season cut its months out, or
// a test split of a few months) is a usage error naming the months the test split has.
std::vector<SeasonSteps> season_steps(const Config& cfg, const std::vector<int64_t>& days, Calendar calendar,
                                      const std::string& store) {
  const std::vector<int> month = months_of(days, calendar);
  std::vector<SeasonSteps> out;
  for (const std::string& season : cfg.evaluate.seasons) {
    if (season == "annual") continue;  // the annual figures are always computed
    SeasonSteps s{season, season_months(season), {}};
    s.steps = steps_in_months(month, s.months);
    if (s.steps.empty()) {
      std::vector<int> present;
      for (int m = 1; m <= 12; ++m)
        if (std::find(month.begin(), month.end(), m) != month.end()) present.push_back(m);
      throw UsageError(cfg.origin("evaluate.seasons") + ": key 'evaluate.seasons' lists " + season + " (months " + months_text(s.months) +
                       "), but the test split of " + store + " has no day in them; its months: " +
                       months_text(present) + " (fetch.season)");
    }
    // Scored under the season's name whatever of it the test split holds: said when not all of it.
    std::vector<int> held, missing;
    for (int m : s.months)
      (std::find(month.begin(), month.end(), m) != month.end() ? held : missing).push_back(m);
    if (!missing.empty())
      spdlog::info("evaluate.seasons: {}'s test days are of month{} {} only; the test split of {} has no day in {} "
                   "(fetch.season)", season, held.size() > 1 ? "s" : "", months_text(held), store, months_text(missing));
    out.push_back(std::move(s));
  }
  return out;
}
std::vector<int64_t> days_of(const std::vector<int64_t>& days, const std::vector<size_t>& steps) {
  std::vector<int64_t> d;
  for (size_t t : steps) d.push_back(days[t]);
  return d;
}

// Once this evaluate's figures are written: those of seasons an earlier evaluate listed and this
// one does not go, so no DJF map outlives the scores.json it was drawn from.
void remove_old_season_figures(const std::string& dir, const Config& cfg) {
  if (const size_t n = remove_unlisted_season_figures(dir, cfg.evaluate.seasons))
    spdlog::info("removed {} figures of seasons an earlier evaluate listed and evaluate.seasons does not", n);
}

// The test split's observations and land mask on the observation window, once the prediction
// at pred_path (days, calendar, grid and store identity as read from it) is checked to be of them.
struct TestObservations {
  size_t days = 0, points = 0;  // n test days, np points of the window
  std::vector<float> obs;       // n x np, NaN where not observed
  std::vector<uint8_t> mask;    // np, 1 on modelled (land) boxes
};
TestObservations read_test_observations(const std::string& pred_path, const StoreReader& store,
                                        const std::vector<int64_t>& days, const std::string& calendar,
                                        const std::vector<double>& lat, const std::vector<double>& lon, const Window& win,
                                        const std::map<std::string, std::string>& attributes,
                                        const std::string& checkpoint) {
  check_matches(pred_path, store, days, calendar, lat, lon, win, attributes, checkpoint);
  TestObservations t;
  t.days = store.count("test");
  t.points = win.size();
  std::vector<float> all(t.days * win.out_size());
  store.read_obs("test", 0, t.days, all.data());
  t.obs = crop_to_window(std::move(all), win);
  t.mask = crop_to_window(store.meta().mask, win);
  return t;
}

// The observations that bound what a prediction can be (evaluate/prediction_checks.h): every
// split's, as the store records them; in older stores the test split's.
ObservedRange observed_for_bounds(const StoreMeta& meta, const TestObservations& test) {
  if (!std::isnan(meta.obs_min)) return {meta.obs_min, meta.obs_max};
  return observed_range(test.obs, test.mask);
}

// What is scored against what, logged before the scoring and kept in scores.json: a user with
// several models, checkpoints and stores sees which one each score is of.
std::map<std::string, std::string> say_what_is_scored(const Config& cfg, const std::string& pred_path,
                                                      const std::string& checkpoint, const StoreReader& store,
                                                      const std::vector<int64_t>& days, const std::string& calendar,
                                                      const TestObservations& t, const Window& win) {
  std::map<std::string, std::string> about{{"prediction", pred_path},
                                           {"checkpoint", checkpoint.empty() ? "not recorded" : checkpoint},
                                           {"observations", store.path() + " (test split)"}};
  // The linear baseline as fitted (evaluate.pcs and ridge), so that its row can be read, or
  // compared with another evaluate's.
  about["linear_pcs"] = fmt::format("ridge regression (penalty {:g}, evaluate.ridge) per modelled box on the first {} "
                                    "principal components (evaluate.pcs) of the training predictors",
                                    cfg.evaluate.ridge, cfg.evaluate.pcs);
  const size_t modelled = size_t(std::count_if(t.mask.begin(), t.mask.end(), [](uint8_t m) { return m != 0; }));
  std::string period = "no days";
  if (!days.empty()) {
    const Calendar cal = parse_calendar(calendar, pred_path);
    period = to_string(date_from_days(days.front(), cal)) + ".." + to_string(date_from_days(days.back(), cal));
  }
  about["test_period"] = period;
  spdlog::info("scoring {} (checkpoint {}) on {} test days, {}, against the observations of {}'s test split; each "
               "score is the mean over the {} modelled boxes of the {} x {} observation grid of that box's score",
               pred_path, about["checkpoint"], days.size(), period, store.path(), modelled,
               win.rows, win.cols);
  return about;
}

// The log's score tables: the annual block (headed by its day count when seasons follow), then
// one block per season; log_table prints one evaluation's rows (precipitation or continuous).
template <typename Annual, typename Seasonal, typename LogTable>
void log_by_season(const Annual& annual, const std::vector<Seasonal>& seasonal, const LogTable& log_table) {
  // "annual" is every test day, whatever the season the data were cut to (a DJF run's too).
  if (!seasonal.empty()) spdlog::info("all test days ({}; 'annual' in scores.json)", annual.ndays);
  log_table(annual);
  for (const auto& s : seasonal) {
    spdlog::info("{} (months {}; {} test days)", s.season, months_text(s.months), s.evaluation.ndays);
    log_table(s.evaluation);
  }
}

int evaluate_continuous_predictand(const Config& cfg, const RunPaths& paths, const StoreReader& store) {
  const StoreMeta& meta = store.meta();
  const std::string pred_path = paths.predict_dir() + "/" + meta.predictand + ".nc";
  if (!path_exists(pred_path))
    throw InputError(pred_path + ": no such file (run `downscale predict` first" +
                     paths.other_models_hint("predict", meta.predictand + ".nc", "models predicted") + ")");
  PredictandOutput pred = read_predictand(pred_path, meta.predictand);
  throw_if_stop_requested("reading " + pred_path + "; nothing written");  // members make it long
  const Window win = observation_window(meta);
  const TestObservations test = read_test_observations(pred_path, store, pred.days, pred.calendar, pred.lat,
                                                       pred.lon, win, pred.attributes,
                                                       pred.checkpoint);
  // predict writes the store's units; another would be scored as if it were them.
  if (pred.units != meta.predictand_units)
    throw InputError(pred_path + ": " + meta.predictand + " is in '" + pred.units + "' but " + store.path() +
                     " observes it in '" + meta.predictand_units + "'; predict again");
  {
    const ScoredGrid grid{&pred.days, pred.calendar, &pred.lat, &pred.lon, &test.mask};
    std::string range;
    const auto [lo, hi] = possible_values(observed_for_bounds(meta, test), false, meta.predictand_units, range);
    check_scored_values(pred_path, meta.predictand, pred.mean, grid, lo, hi, range);
    if (!pred.sd.empty()) check_scored_values(pred_path, meta.predictand + "_sd", pred.sd, grid, 0, hi - lo, fmt::format("[0, {:g}]", hi - lo));
  }
  const auto about = say_what_is_scored(cfg, pred_path, pred.checkpoint, store, pred.days, pred.calendar, test, win);
  const size_t np = test.points;
  const std::vector<float>& obs = test.obs;
  const std::vector<uint8_t>& mask = test.mask;
  const std::vector<SeasonSteps> seasons =
      season_steps(cfg, pred.days, parse_calendar(pred.calendar, pred_path), store.path());

  std::vector<ContinuousMethod> methods;
  methods.push_back({"cnn", std::move(pred.mean)});  // not read from pred again
  throw_if_stop_requested("computing the climatology baseline; nothing written");
  spdlog::info("baseline: climatology");
  methods.push_back({"climatology", crop_to_window(climatology_baseline(store, "test"), win)});
  throw_if_stop_requested("computing the linear baseline; nothing written");
  spdlog::info("baseline: linear model on {} principal components", cfg.evaluate.pcs);
  methods.push_back({"linear_pcs", crop_to_window(linear_baseline(store, "test", {cfg.evaluate.pcs, cfg.evaluate.ridge}), win)});
  const ContinuousEvaluation e = evaluate_continuous(obs, np, mask, methods, meta.predictand, meta.predictand_units);
  // Each season: the same scores on its days only (the baselines as computed for the whole test).
  std::vector<ContinuousSeason> seasonal;
  std::vector<SeasonFields> season_fields;
  for (const SeasonSteps& s : seasons) {
    spdlog::info("season {}: {} test days", s.season, s.steps.size());
    std::vector<ContinuousMethod> in_season;
    for (const auto& m : methods) in_season.push_back({m.name, select_steps(m.values, np, s.steps)});
    seasonal.push_back({s.season, s.months,
                        evaluate_continuous(select_steps(obs, np, s.steps), np, mask, in_season, meta.predictand,
                                            meta.predictand_units)});
    season_fields.push_back({s.season, days_of(pred.days, s.steps),
                             continuous_score_fields(seasonal.back().evaluation, cf_standard_name(meta.predictand))});
  }

  const std::string dir = paths.evaluate_dir();
  make_dirs(dir);
  // scores.nc first (the long write, checked for a stop before it is renamed), then the small
  // files: a stop before the maps leaves the three score files of this run together.
  throw_if_stop_requested("scoring; nothing written");
  OutputsInOrder outputs(dir);
  const std::string replacing = path_exists(dir + "/scores.json") ? " (replacing the earlier evaluation's)" : "";
  outputs.write("scores.nc", [&] {
    write_scores_nc(dir, pred_path, meta.predictand, pred.lat, pred.lon, pred.days, pred.calendar,
                    continuous_score_fields(e, cf_standard_name(meta.predictand)), scored_prediction(pred),
                    std::move(season_fields));
  });
  outputs.write("scores.json", [&] { write_text(dir + "/scores.json", continuous_json(e, seasonal, about)); });
  outputs.write("scores.csv", [&] { write_text(dir + "/scores.csv", continuous_csv(e, seasonal)); });
  throw_if_stop_requested(kMapsStopNote);
  const std::string& v = meta.predictand;
  const std::string& units = meta.predictand_units;
  outputs.write("the figures", [&] {
    // Maps and summary.png, annual and each season's (evaluate/evaluation_maps.h).
    write_continuous_maps(dir, {pred.lon, pred.lat}, cfg.file, e, seasonal);
    // The score table, annual, then scores_table_<season>.png for each season.
    auto table = [&](const std::string& path, const ContinuousEvaluation& x, const std::string& when) {
      std::vector<TableRow> rows;
      for (const auto& m : x.methods) {
        TableRow r{m.name, {}};
        for (const auto& c : continuous_score_names()) r.values.push_back(m.domain.at(c));
        rows.push_back(std::move(r));
      }
      write_table_png(path, "downscale evaluate (" + v + ", " + units + when + "): " + cfg.file, continuous_score_names(),
                      rows, "averages over modelled boxes, " + std::to_string(x.ndays) + " test days; see scores.json for definitions");
    };
    table(dir + "/scores_table.png", e, "");
    for (const auto& s : seasonal) table(dir + "/scores_table_" + s.season + ".png", s.evaluation, ", " + s.season);
    remove_old_season_figures(dir, cfg);
  }, kFiguresRest);

  // The log table: the annual block, then one per season.
  auto log_table = [](const ContinuousEvaluation& x) {
    spdlog::info("{:<12} {:>10} {:>8} {:>8} {:>8}", "method", "bias", "RMSE", "Pearson", "sd ratio");
    for (const auto& m : x.methods) {
      const auto& d = m.domain;
      spdlog::info("{:<12} {:>10.3f} {:>8.3f} {:>8.3f} {:>8.3f}", m.name, d.at("bias"), d.at("RMSE"), d.at("Pearson"),
                   d.at("sd_ratio"));
    }
  };
  log_by_season(e, seasonal, log_table);
  spdlog::info("wrote {}/scores.json, scores.csv, scores.nc, scores_table.png, maps and summary.png{} ({} in {}){}", dir,
               seasonal.empty() ? "" : " (each table and map also per season)", v, units, replacing);
  return 0;
}

// A Bernoulli-Gamma model's prediction (predict/precipitation.nc): its deterministic, expected
// and stochastic precipitation and the climatology and linear baselines, scored annually and per
// season (evaluate.seasons), into scores.nc/json/csv, the tables and the maps.
int evaluate_precipitation(const Config& cfg, const RunPaths& paths, const StoreReader& store) {
  const StoreMeta& meta = store.meta();
  const std::string pred_path = paths.predict_dir() + "/precipitation.nc";
  if (!path_exists(pred_path))
    throw InputError(pred_path + ": no such file (run `downscale predict` first" +
                     paths.other_models_hint("predict", "precipitation.nc", "models predicted") + ")");
  PrecipitationOutput pred = read_precipitation(pred_path, /*gamma=*/false);  // not scored
  throw_if_stop_requested("reading " + pred_path + "; nothing written");  // members make it long
  const Window win = observation_window(meta);
  const TestObservations test = read_test_observations(pred_path, store, pred.days, pred.calendar, pred.lat,
                                                       pred.lon, win, pred.attributes,
                                                       pred.checkpoint);
  // The wet-day threshold is not part of the store's identity (the predictors'), yet a store
  // rebuilt with another preprocess.wet_threshold has other targets and another model to go
  // with them (predict and train --resume refuse the checkpoint then): so is this prediction.
  if (std::abs(pred.wet_threshold - meta.wet_threshold) > 1e-9 * std::max(1.0, std::abs(meta.wet_threshold)))
    throw InputError(fmt::format(
        "{}: predicted with a wet-day threshold of {:g} mm (its wet_day_threshold_mm) but {} was built with "
        "preprocess.wet_threshold {:g}: preprocess ran again since; train and predict again on this store, or "
        "preprocess with wet_threshold {:g}",
        pred_path, pred.wet_threshold, store.path(), meta.wet_threshold, pred.wet_threshold));
  {
    const ScoredGrid grid{&pred.days, pred.calendar, &pred.lat, &pred.lon, &test.mask};
    std::string range;
    const auto [lo, hi] = possible_values(observed_for_bounds(meta, test), true, "mm/day", range);
    check_scored_values(pred_path, "pr", pred.pr, grid, lo, hi, range);
    check_scored_values(pred_path, "pr_expected", pred.pr_expected, grid, lo, hi, range);
    check_scored_values(pred_path, "pr_stochastic", pred.pr_members, grid, lo, hi, range);
    check_scored_values(pred_path, "p_wet", pred.p_wet, grid, 0, 1, "[0, 1]");
  }
  auto about = say_what_is_scored(cfg, pred_path, pred.checkpoint, store, pred.days, pred.calendar, test, win);
  // How the prediction decided its wet days and drew its members: two evaluations of one model
  // differ by these when predict.occurrence or predict.seed changed between them.
  if (!pred.occurrence_rule.empty()) about["prediction_wet_days"] = pred.occurrence_rule;
  if (pred.attributes.count("members_seed")) about["members_seed"] = pred.attributes.at("members_seed");
  // The wet-day indices count days of at least VALUE's 1 mm; the model was trained, and predict
  // adds its amounts back, above the store's threshold. Far apart, the scores would say nothing
  // of it: below 1 mm (preprocess.wet_threshold 0.1, say) days between the two, wet to the model,
  // count as dry in R01, SDII, P98Wet and the spells; above it (2 mm) observed days between the
  // two count as wet there while the model, trained to call them dry, predicts none of them.
  about["store_wet_threshold_mm"] = fmt::format("{:g}", meta.wet_threshold);
  if (std::abs(meta.wet_threshold - kWetDay) > 0.05)
    spdlog::warn("{}: the model was trained on wet days above {:g} mm (preprocess.wet_threshold) but the wet-day scores "
                 "(R01, SDII, P98Wet, spells, RMSE_wet) count days of at least VALUE's {:g} mm: {}",
                 store.path(), meta.wet_threshold, kWetDay,
                 meta.wet_threshold < kWetDay
                     ? "days between the two, wet to the model, count as dry there (observed and predicted alike)"
                     : "observed days between the two count as wet there, while the model, trained to call them dry, "
                       "predicts none of them (its wet-day frequency reads low by construction)");
  const size_t n = test.days, np = test.points;
  const std::vector<float>& obs = test.obs;
  const std::vector<uint8_t>& mask = test.mask;
  const Calendar calendar = parse_calendar(pred.calendar, pred_path);
  const std::vector<SeasonSteps> seasons = season_steps(cfg, pred.days, calendar, store.path());

  // The prediction's fields move into the methods rather than being copied (each is 214 MB on the
  // North America test split, the members that times their number); only p_wet, the wet-day
  // score of all three, is copied. Nothing reads them from `pred` after this.
  // (A braced {std::move(x)} would still copy: an initializer_list's elements are const.)
  const auto one_series = [](std::string name, std::vector<float>&& values, std::vector<float> wet_score) {
    Method m{std::move(name), {}, std::move(wet_score)};
    m.members.push_back(std::move(values));
    return m;
  };
  std::vector<Method> methods;
  methods.push_back(one_series("cnn_deterministic", std::move(pred.pr), pred.p_wet));
  methods.push_back(one_series("cnn_expected", std::move(pred.pr_expected), {}));
  if (pred.members > 0) {
    Method m{"cnn_stochastic", {}, pred.p_wet};
    for (int i = 0; i < pred.members; ++i)
      m.members.emplace_back(pred.pr_members.begin() + i * n * np, pred.pr_members.begin() + (i + 1) * n * np);
    std::vector<float>().swap(pred.pr_members);
    methods.push_back(std::move(m));
  }
  methods[1].wet_score = std::move(pred.p_wet);
  throw_if_stop_requested("computing the climatology baseline; nothing written");
  spdlog::info("baseline: climatology");
  methods.push_back(one_series("climatology", crop_to_window(climatology_baseline(store, "test"), win), {}));
  throw_if_stop_requested("computing the linear baseline; nothing written");
  spdlog::info("baseline: linear model on {} principal components", cfg.evaluate.pcs);
  methods.push_back(one_series(
      "linear_pcs", crop_to_window(linear_baseline(store, "test", {cfg.evaluate.pcs, cfg.evaluate.ridge}), win), {}));

  const TestDays days = test_days(pred.days, calendar);
  const Evaluation e = evaluate_methods(obs, np, mask, days, methods);
  // Each season: the same indices and scores on its days only; the days keep their numbers, so
  // the gap between two seasons' days ends a spell (evaluate/seasons.h).
  std::vector<SeasonEvaluation> seasonal;
  std::vector<SeasonFields> season_fields;
  for (const SeasonSteps& s : seasons) {
    spdlog::info("season {}: {} test days", s.season, s.steps.size());
    std::vector<Method> in_season;
    for (const Method& m : methods) {
      Method x{m.name, {}, m.wet_score.empty() ? std::vector<float>{} : select_steps(m.wet_score, np, s.steps)};
      for (const auto& member : m.members) x.members.push_back(select_steps(member, np, s.steps));
      in_season.push_back(std::move(x));
    }
    seasonal.push_back({s.season, s.months,
                        evaluate_methods(select_steps(obs, np, s.steps), np, mask, select_days(days, s.steps), in_season)});
    season_fields.push_back({s.season, days_of(pred.days, s.steps), precipitation_score_fields(seasonal.back().evaluation)});
  }
  const std::string dir = paths.evaluate_dir();
  make_dirs(dir);
  throw_if_stop_requested("scoring; nothing written");
  OutputsInOrder outputs(dir);
  const std::string replacing = path_exists(dir + "/scores.json") ? " (replacing the earlier evaluation's)" : "";
  outputs.write("scores.nc", [&] {
    write_scores_nc(dir, pred_path, "pr", pred.lat, pred.lon, pred.days, pred.calendar, precipitation_score_fields(e),
                    scored_prediction(pred, {{"wet_day_threshold", "1 mm/day"}, {"prediction_wet_days", pred.occurrence_rule}}), std::move(season_fields));
  });
  outputs.write("scores.json", [&] { write_text(dir + "/scores.json", evaluation_json(e, seasonal, about)); });
  outputs.write("scores.csv", [&] { write_text(dir + "/scores.csv", evaluation_csv(e, seasonal)); });
  throw_if_stop_requested(kMapsStopNote);

  outputs.write("the figures", [&] {
    // Maps and summary.png, annual and each season's (evaluate/evaluation_maps.h).
    write_precipitation_maps(dir, {pred.lon, pred.lat}, cfg.file, e, seasonal);
    write_table_png(dir + "/scores_table.png", e, "downscale evaluate: " + cfg.file);
    for (const auto& s : seasonal)
      write_table_png(dir + "/scores_table_" + s.season + ".png", s.evaluation,
                      "downscale evaluate, " + s.season + " (" + std::to_string(s.evaluation.ndays) +
                          " test days): " + cfg.file);
    remove_old_season_figures(dir, cfg);
  }, kFiguresRest);

  // The log table: the annual block, then one per season.
  auto log_table = [](const Evaluation& x) {
    spdlog::info("{:<18} {:>10} {:>8} {:>10} {:>10} {:>10} {:>9} {:>9} {:>7} {:>9} {:>9} {:>7}", "method",
                 "mean bias", "R01 bias", "SDII bias", "P98 bias", "P98Wet bias", "wet spell", "dry spell", "RMSE",
                 "RMSE wet", "Spearman", "ROCSS");
    for (const auto& m : x.methods) {
      const auto& d = m.domain;
      spdlog::info("{:<18} {:>9.1f}% {:>8.3f} {:>9.1f}% {:>9.1f}% {:>10.1f}% {:>8.2f}d {:>8.2f}d {:>7.2f} {:>9.2f} "
                   "{:>9.3f} {:>7.3f}",
                   m.name, 100 * d.at("mean_relative_bias"), d.at("R01_bias"), 100 * d.at("SDII_relative_bias"),
                   100 * d.at("P98_relative_bias"), 100 * d.at("P98Wet_relative_bias"),
                   d.at("WetAnnualMaxSpell_bias"), d.at("DryAnnualMaxSpell_bias"), d.at("RMSE"), d.at("RMSE_wet"),
                   d.at("Spearman"), d.at("ROCSS"));
    }
  };
  log_by_season(e, seasonal, log_table);
  // The % columns are means of per-box ratios, not the ratio of the domain's means: said once.
  spdlog::info("(% columns: each land box's relative bias, (predicted - observed) / observed, averaged over the "
               "land boxes; R01 bias: wet-day frequency, predicted - observed; spells in days; RMSE in mm/day; "
               "scores.json defines each score)");
  spdlog::info("wrote {}/scores.json, scores.csv, scores.nc, scores_table.png, maps and summary.png{}{}", dir,
               seasonal.empty() ? "" : " (each table and map also per season)", replacing);
  return 0;
}

// The linear baseline cannot have more principal components than the training days give (one
// fewer than their number): asked for more, it had silently used fewer, fitted every training
// day exactly, and scored an overfitted baseline far worse than climatology, exit 0. (More than
// the predictor values, on a tiny domain, is harmless: every one of them is used.)
void check_linear_baseline(const Config& cfg, const StoreReader& store) {
  const int64_t days = int64_t(store.count("train"));
  if (cfg.evaluate.pcs > days - 1)
    throw UsageError(fmt::format("{}: key 'evaluate.pcs' is {}, but the {} training days of {} give at most {} "
                                 "principal components; a few tens keep the linear baseline from fitting noise (the "
                                 "default: 20)",
                                 cfg.origin("evaluate.pcs"), cfg.evaluate.pcs, days, store.path(), days - 1));
}

}  // namespace

int run_evaluate(const Config& cfg) {
  const RunPaths paths = RunPaths::of(cfg);
  // One evaluate per model's folder; then whatever a killed one left (scores.json.tmp-PID, maps).
  RunLock lock(paths.evaluate_dir(), "evaluate");
  remove_stale_temps(paths.evaluate_dir());
  StoreReader store(paths.store());
  const StoreMeta& meta = store.meta();
  check_linear_baseline(cfg, store);
  if (const std::string changed = store_settings_change(cfg, store); !changed.empty()) spdlog::warn("{}", changed);
  // A config that predicts new predictors (a GCM run) has no observations for them: say which
  // prediction is scored, rather than leave the user thinking the GCM run was.
  if (!cfg.predict.predictors.empty())
    spdlog::info("scoring the test split's prediction against its observations; predict.predictors ({}) has no "
                 "observations to score", cfg.predict.predictors);
  return meta.is_precipitation() ? evaluate_precipitation(cfg, paths, store)
                                 : evaluate_continuous_predictand(cfg, paths, store);
}

}  // namespace ds
