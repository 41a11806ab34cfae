#include "io/config_validate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <tuple>
#include <cstdlib>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "io/error.h"

namespace ds {

namespace {

std::string num(double v) {
  std::ostringstream s;
  s << std::setprecision(15) << v;
  return s.str();
}

std::string years_text(const YearRange& y) { return "[" + std::to_string(y.first) + ", " + std::to_string(y.last) + "]"; }

class Checker {
 public:
  explicit Checker(const KeyOrigin& origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw UsageError(origin_(key) + ": key '" + key + "' " + what);
  }

  // lo <= v <= hi (and finite: .nan and .inf are YAML doubles too).
  void range(const std::string& key, double v, double lo, double hi, const std::string& why = "") const {
    if (!std::isfinite(v) || v < lo || v > hi)
      fail(key, "is " + num(v) + ", must be in " + num(lo) + ".." + num(hi) + (why.empty() ? "" : " (" + why + ")"));
  }
  void at_least(const std::string& key, double v, double lo, const std::string& why = "") const {
    if (!std::isfinite(v) || v < lo)
      fail(key, "is " + num(v) + ", must be at least " + num(lo) + (why.empty() ? "" : " (" + why + ")"));
  }
  void positive(const std::string& key, double v, const std::string& why = "") const {
    if (!std::isfinite(v) || !(v > 0))
      fail(key, "is " + num(v) + ", must be a positive number" + (why.empty() ? "" : " (" + why + ")"));
  }
  void one_of(const std::string& key, const std::string& v, const std::vector<std::string>& allowed) const {
    std::string list;
    for (size_t i = 0; i < allowed.size(); ++i) {
      if (v == allowed[i]) return;
      list += (i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ") + allowed[i];
    }
    fail(key, "is '" + v + "', expected " + list);
  }

  // Train, validation and test years must not share a year: a test score on training days
  // would look excellent and mean nothing.
  void disjoint(const std::vector<std::pair<std::string, YearRange>>& splits) const {
    for (size_t i = 0; i < splits.size(); ++i)
      for (size_t j = i + 1; j < splits.size(); ++j) {
        const YearRange& a = splits[i].second;
        const YearRange& b = splits[j].second;
        if (a.empty() || b.empty()) continue;
        const int lo = std::max(a.first, b.first), hi = std::min(a.last, b.last);
        if (lo > hi) continue;
        const std::string overlap = lo == hi ? "year " + std::to_string(lo) : "years " + std::to_string(lo) + ".." + std::to_string(hi);
        // Blame the later split, or the one an override set when only one of them was.
        const bool first_set = origin_(splits[i].first).rfind("--set", 0) == 0;
        const bool second_set = origin_(splits[j].first).rfind("--set", 0) == 0;
        const auto& blamed = first_set && !second_set ? splits[i] : splits[j];
        const auto& other = &blamed == &splits[i] ? splits[j] : splits[i];
        fail(blamed.first, years_text(blamed.second) + " overlaps '" + other.first + "' " + years_text(other.second) +
                               " in " + overlap + ": train, validation and test years must be disjoint");
      }
  }

 private:
  const KeyOrigin& origin_;
};

}  // namespace

void check_config(const Config& c, const KeyOrigin& origin) {
  const Checker k(origin);

  // run
  if (c.run.dir.empty()) k.fail("run.dir", "is required");
  k.range("run.threads", c.run.threads, 0, kMaxThreads, "0: all cores");
  k.one_of("run.device", c.run.device, {"auto", "cpu", "cuda"});
  k.one_of("run.communicator", c.run.communicator, {"auto", "mpi", "nccl"});  // train/device_communicator.h
  k.one_of("run.log_level", c.run.log_level, {"trace", "debug", "info", "warn", "warning", "error", "critical", "off"});

  // synth: its longitudes are -180..180 (synth/synth.cpp, which also wants min < max)
  k.range("synth.lon", c.synth.lon_min, -180, 180, "degrees east");
  k.range("synth.lon", c.synth.lon_max, -180, 180, "degrees east");
  k.range("synth.lat", c.synth.lat_min, -90, 90, "degrees north");
  k.range("synth.lat", c.synth.lat_max, -90, 90, "degrees north");

  // fetch
  // Every stage: preprocess splits season-years by it too.
  if (c.fetch.season.empty()) k.fail("fetch.season", "lists no month");
  for (int m : c.fetch.season)
    if (m < 1 || m > 12) k.fail("fetch.season", "holds month " + std::to_string(m) + ", not 1..12");
  for (size_t i = 0; i < c.fetch.season.size(); ++i)
    for (size_t j = i + 1; j < c.fetch.season.size(); ++j)
      if (c.fetch.season[i] == c.fetch.season[j])
        k.fail("fetch.season", "lists month " + std::to_string(c.fetch.season[i]) + " twice");
  // A field listed twice would be fetched twice into one file (the second write failed after the
  // whole download).
  for (size_t i = 0; i < c.fetch.predictors.size(); ++i)
    for (size_t j = i + 1; j < c.fetch.predictors.size(); ++j)
      if (c.fetch.predictors[i].name() == c.fetch.predictors[j].name())
        k.fail("fetch.predictors.fields", "lists " + c.fetch.predictors[i].name() + " twice");
  // A box across the antimeridian is written past 180 ([170, 190]); its columns east of it come
  // with longitudes past 180 too (fetch/plan.h: lon_selection).
  k.range("fetch.lon", c.fetch.lon_min, -180, 180, "degrees east");
  k.range("fetch.lon", c.fetch.lon_max, -180, 540, "degrees east");
  if (c.fetch.lon_max - c.fetch.lon_min > 360)
    k.fail("fetch.lon", "spans " + num(c.fetch.lon_max - c.fetch.lon_min) + " degrees, more than the globe's 360");
  k.range("fetch.lat", c.fetch.lat_min, -90, 90, "degrees north");
  k.range("fetch.lat", c.fetch.lat_max, -90, 90, "degrees north");
  k.range("fetch.parallel", c.fetch.parallel, 1, 256, "chunks in flight, one process each");
  k.range("fetch.attempts", c.fetch.attempts, 1, 100, "tries per chunk, the first included");
  k.range("fetch.retry_delay", c.fetch.retry_delay, 0, 3600, "seconds");
  k.range("fetch.piece_mb", c.fetch.piece_mb, 1e-3, 65536, "megabytes per read");
  k.range("fetch.timeout_s", c.fetch.timeout_s, 0, 86400, "seconds a request may take; 0: no time-out");

  // preprocess
  for (const auto& [key, g] : {std::pair<std::string, const GridSpec*>{"preprocess.predictor_grid", &c.preprocess.predictor_grid},
                               {"preprocess.predictand_grid", &c.preprocess.predictand_grid}}) {
    if (key == "preprocess.predictand_grid" && !c.preprocess.has_predictand_grid) continue;
    k.positive(key + ".step", g->step, "degrees");
    k.range(key + ".lat", g->lat_first, -90, 90, "degrees north");
    k.range(key + ".lat", g->lat_last, -90, 90, "degrees north");
    k.range(key + ".lon", g->lon_first, -360, 360, "degrees east");
    k.range(key + ".lon", g->lon_last, -360, 360, "degrees east");
    // The grid's points are first + i * step: a last value off that lattice would silently move
    // to the nearest point on it (lon [-10, 5] with step 2 ended at 6, which messages then named).
    for (const auto& [axis, first, last] : {std::tuple<std::string, double, double>{"lon", g->lon_first, g->lon_last},
                                            {"lat", g->lat_first, g->lat_last}}) {
      const double steps = (last - first) / g->step;
      if (std::abs(steps - std::round(steps)) > 1e-6) {
        const double below = first + std::floor(steps) * g->step, above = first + std::ceil(steps) * g->step;
        k.fail(key + "." + axis, "is [" + num(first) + ", " + num(last) + "], " + num(steps) + " steps of " + num(g->step) +
                                     ": the last value must be a whole number of steps from the first (" + num(below) +
                                     " or " + num(above) + ")");
      }
    }
    // Its size, before anything counts its points in an int (a step of 1e-6 degrees was a bare
    // std::bad_alloc, 1e-300 a "grid of one latitude"): 50 million points is 200 MB a field and
    // day, far past any regional downscaling (North America at 0.5 degrees: 24,453).
    const double points = (std::abs(g->lon_last - g->lon_first) / g->step + 1) *
                          (std::abs(g->lat_last - g->lat_first) / g->step + 1);
    if (g->step > 0 && !(points <= 5e7))
      k.fail(key + ".step", "is " + num(g->step) + " degrees: the grid would have " + num(points) +
                                " points, more than the 50 million preprocess builds");
  }
  // The box and each grid preprocess regrids onto share some area (a grid's cells reach half a
  // step past its points): a box moved off the grids, a sign dropped, would otherwise fetch the
  // predictor grid's area and ignore the box. Longitudes as written: fetch writes the box's, and
  // preprocess regrids by comparing them, so a grid a turn away (in 0..360 beside a box in
  // -180..180) is refused with the values that would do.
  const auto spans = [](double a0, double a1, double b0, double b1, double shift) {
    return a0 <= b1 + shift && b0 + shift <= a1;
  };
  for (const auto& [key, g, given] :
       {std::tuple<std::string, const GridSpec*, bool>{"preprocess.predictor_grid", &c.preprocess.predictor_grid,
                                                       c.preprocess.has_predictor_grid},
        {"preprocess.predictand_grid", &c.preprocess.predictand_grid, c.preprocess.has_predictand_grid}}) {
    if (!given || !c.fetch.has_box) continue;
    const double h = g->step / 2;
    const double lon0 = std::min(g->lon_first, g->lon_last) - h, lon1 = std::max(g->lon_first, g->lon_last) + h;
    const double lat0 = std::min(g->lat_first, g->lat_last) - h, lat1 = std::max(g->lat_first, g->lat_last) + h;
    const bool lon_ok = spans(c.fetch.lon_min, c.fetch.lon_max, lon0, lon1, 0);
    const auto turn_away = [&]() -> double {
      for (const double turn : {-720.0, -360.0, 360.0, 720.0})
        if (spans(c.fetch.lon_min, c.fetch.lon_max, lon0, lon1, turn)) return turn;
      return 0;
    };
    if (const double turn = lon_ok ? 0 : turn_away(); turn != 0) {
      k.fail(key + ".lon", "is [" + num(g->lon_first) + ", " + num(g->lon_last) + "], a turn away from fetch.lon [" +
                               num(c.fetch.lon_min) + ", " + num(c.fetch.lon_max) + "]: write the grid in the box's "
                               "longitudes, [" + num(g->lon_first + turn) + ", " + num(g->lon_last + turn) + "]");
      continue;
    }
    if (lon_ok && spans(c.fetch.lat_min, c.fetch.lat_max, lat0, lat1, 0)) continue;
    const std::string box_key = lon_ok ? "fetch.lat" : "fetch.lon", grid_key = key + (lon_ok ? ".lat" : ".lon");
    const std::string box = "the box (lon " + num(c.fetch.lon_min) + ".." + num(c.fetch.lon_max) + ", lat " +
                            num(c.fetch.lat_min) + ".." + num(c.fetch.lat_max) + ")";
    const std::string cells = key + "'s cells (lon " + num(lon0) + ".." + num(lon1) + ", lat " + num(lat0) + ".." +
                              num(lat1) + ")";
    // Blamed on the one a --set moved, when only one of them was (a sign dropped on the command line).
    if (origin(grid_key).rfind("--set", 0) == 0 && origin(box_key).rfind("--set", 0) != 0)
      k.fail(grid_key, "gives " + cells + " that share no area with " + box + " (fetch.lon, fetch.lat)");
    k.fail(box_key, "gives " + box + " that shares no area with " + cells +
                        ": the grids are regridded from what fetch cuts to the box");
  }
  k.disjoint({{"preprocess.train_years", c.preprocess.train_years},
              {"preprocess.validation_years", c.preprocess.validation_years},
              {"preprocess.test_years", c.preprocess.test_years}});
  k.range("preprocess.wet_threshold", c.preprocess.wet_threshold, 0, 1000, "mm/day");
  for (const auto& [field, method] : c.preprocess.regrid)
    k.one_of("preprocess.regrid." + field, method, {"bilinear", "conservative", "nearest"});
  k.one_of("preprocess.standardize", c.preprocess.standardize, {"grid_box", "field"});
  k.one_of("preprocess.fill", c.preprocess.fill, {"none", "nearest_time", "climatology"});
  k.range("preprocess.compression", c.preprocess.compression, 0, 9, "deflate level");
  k.range("preprocess.block_days", c.preprocess.block_days, 1, 1000000, "days per block");
  k.range("preprocess.min_valid_fraction", c.preprocess.min_valid_fraction, 0, 1,
          "share of training days a box is observed on");

  // model
  k.one_of("model.name", c.model.name, {"demo", "mnn", "deepesd"});
  if (c.model.filters.empty()) k.fail("model.filters", "is empty");
  for (int f : c.model.filters) k.range("model.filters", f, 1, 4096, "channels per layer");

  // train
  k.range("train.batch_size", c.train.batch_size, 1, 1 << 20, "samples per rank");
  if (!(std::isfinite(c.train.learning_rate) && c.train.learning_rate > 0 && c.train.learning_rate <= 10))
    k.fail("train.learning_rate", "is " + num(c.train.learning_rate) + ", must be in (0, 10]");
  k.range("train.epochs", c.train.epochs, 1, 1000000);
  k.range("train.patience", c.train.patience, 0, 1000000, "0: no early stopping");
  k.one_of("train.loss", c.train.loss, {"bernoulli_gamma", "gaussian", "mse"});
  k.one_of("train.optimizer", c.train.optimizer, {"adam", "sgd"});
  if (!(c.train.momentum >= 0 && c.train.momentum < 1)) k.fail("train.momentum", "is " + num(c.train.momentum) + ", must be in [0, 1)");
  k.range("train.warmup_epochs", c.train.warmup_epochs, 0, 1000000);
  k.at_least("train.reference_samples_per_second", c.train.reference_samples_per_second, 0, "0: none");
  k.range("train.allreduce_bucket_mb", c.train.allreduce_bucket_mb, 0, 65536, "0: one allreduce after backward");
  k.one_of("train.allreduce_dtype", c.train.allreduce_dtype, {"fp32", "bf16", "fp16"});
  k.one_of("train.data_on_device", c.train.data_on_device, {"auto", "true", "false"});
  k.one_of("train.device_check", c.train.device_check, {"auto", "true", "false"});
  k.at_least("train.stall_warning_seconds", c.train.stall_warning_seconds, 0, "0: off");
  k.at_least("train.stall_abort_seconds", c.train.stall_abort_seconds, 0, "0: never");
  // The name becomes a folder under train/, predict/ and evaluate/: nothing that could climb out.
  k.one_of("train.precision", c.train.precision, {"tf32", "fp32", "bf16", "fp16"});  // model/math_mode.h
  if (!c.train.loss_scale.empty() && c.train.loss_scale != "dynamic") {
    char* end = nullptr;
    const double v = std::strtod(c.train.loss_scale.c_str(), &end);
    if (end == c.train.loss_scale.c_str() || *end != '\0' || !(v > 0) || !std::isfinite(v))
      k.fail("train.loss_scale", "is '" + c.train.loss_scale + "', expected dynamic or a positive number");
  }
  for (char ch : c.train.name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.')
      k.fail("train.name", "is '" + c.train.name + "': only letters, digits, '-', '_' and '.' (it names a folder)");
  if (c.train.name == "." || c.train.name == "..") k.fail("train.name", "is '" + c.train.name + "', not a folder name");

  // predict
  if (c.predict.checkpoint.empty())  // it read the model's folder as a file: "train/: read error", exit 3
    k.fail("predict.checkpoint", "is empty: best, last (the checkpoints in the model's folder) or a checkpoint file's path");
  k.one_of("predict.occurrence", c.predict.occurrence, {"frequency", "p50"});
  k.range("predict.members", c.predict.members, 0, 10000, "stochastic realizations");
  k.range("predict.plausible_sd", c.predict.plausible_sd, 0, 1e6, "training standard deviations; 0: unchecked");
  k.range("predict.plausible_ratio", c.predict.plausible_ratio, 0, 1e6, "a factor either way; 0: unchecked");
  if (c.predict.plausible_ratio > 0 && c.predict.plausible_ratio <= 1)
    k.fail("predict.plausible_ratio",
           "is " + num(c.predict.plausible_ratio) + ", must be above 1 (a factor either way; 0: unchecked)");
  k.range("predict.block_days", c.predict.block_days, 0, 1000000, "days per block; 0: about 32 MiB a channel");
  k.one_of("predict.standardize", c.predict.standardize, {"training", "own"});
  if (c.predict.standardize == "own" && c.predict.reference_years.empty())
    k.fail("predict.reference_years", "([first, last]) is required with predict.standardize: own");
  if (c.predict.standardize != "own" && !c.predict.reference_predictors.empty())
    k.fail("predict.reference_predictors", "is only used with predict.standardize: own");
  if (!c.predict.fill.empty()) k.one_of("predict.fill", c.predict.fill, {"none", "nearest_time", "climatology"});
  // That both apply to new predictors only is predict's check (a config kept for GCM work names
  // them while its other stages run).
  for (char ch : c.predict.label)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.')
      k.fail("predict.label", "is '" + c.predict.label + "': only letters, digits, '-', '_' and '.' (it names a file)");

  // evaluate
  k.range("evaluate.pcs", c.evaluate.pcs, 1, 10000, "principal components");
  k.range("evaluate.ridge", c.evaluate.ridge, 0, 1e12, "ridge penalty");
  // The names of evaluate/seasons.h (io cannot link evaluate): VALUE's four seasons and annual.
  if (c.evaluate.seasons.empty()) k.fail("evaluate.seasons", "is empty; list annual, DJF, MAM, JJA or SON");
  for (size_t i = 0; i < c.evaluate.seasons.size(); ++i) {
    k.one_of("evaluate.seasons", c.evaluate.seasons[i], {"annual", "DJF", "MAM", "JJA", "SON"});
    for (size_t j = 0; j < i; ++j)
      if (c.evaluate.seasons[j] == c.evaluate.seasons[i])
        k.fail("evaluate.seasons", "lists " + c.evaluate.seasons[i] + " twice");
  }
}

}  // namespace ds
