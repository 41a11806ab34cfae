#include "preprocess/build_store.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/log.h"
#include "io/stop_signal.h"
#include "io/store_checks.h"
#include "io/training_store.h"
#include "preprocess/data_terms.h"
#include "preprocess/fetch_request.h"
#include "preprocess/fetched_field.h"
#include "preprocess/fill.h"
#include "preprocess/grid.h"
#include "preprocess/output_grid.h"
#include "preprocess/regrid.h"
#include "preprocess/regrid_covering.h"
#include "preprocess/sample_dates.h"
#include "preprocess/standardize.h"
#include "preprocess/target.h"
#include "preprocess/units.h"

namespace ds {

namespace {

// One fetched field on its way into the store.
struct Channel {
  std::string name, var;  // "z@500", "z"
  std::unique_ptr<FetchedField> file;
  std::unique_ptr<Regridder> regrid;
  std::vector<size_t> index[3];  // per split: the file's time index of each sample
  Standardization stats;
};

// The method for a field: preprocess.regrid.<name>, else .<var>, else .default, else bilinear.
class RegridChoice {
 public:
  explicit RegridChoice(const Config& cfg) : cfg_(cfg) {}
  RegridMethod of(const std::string& name, const std::string& var) {
    const std::string key = cfg_.preprocess.regrid_key(name, var);
    if (key.empty()) return RegridMethod::bilinear;
    used_.insert(key);
    return parse_regrid_method(cfg_.preprocess.regrid.at(key),
                               cfg_.origin("preprocess.regrid." + key) + ": preprocess.regrid." + key);
  }
  // A key naming no field is a typo the user should hear about.
  void check_all_used(const std::string& fields) const {
    for (const auto& [key, method] : cfg_.preprocess.regrid)
      if (key != "default" && !used_.count(key))
        throw UsageError(cfg_.origin("preprocess.regrid." + key) + ": key 'preprocess.regrid." + key + "' names no field in the fetch manifest (" + fields + ")");
  }

 private:
  const Config& cfg_;
  std::set<std::string> used_;
};

// Blocks of at most `block` consecutive entries of [0, n). Between blocks is preprocess's safe
// point for SIGINT/SIGTERM: the store's temporary file goes with the unwinding AtomicFile.
template <class F>
void for_blocks(size_t n, size_t block, const std::string& what, F f) {
  for (size_t a = 0; a < n; a += block) {
    throw_if_stop_requested(what + " at day " + std::to_string(a) + " of " + std::to_string(n) + "; no store written");
    f(a, std::min(n, a + block));
  }
}

std::vector<size_t> slice(const std::vector<size_t>& v, size_t a, size_t b) { return {v.begin() + a, v.begin() + b}; }

// Every file's calendar must count days as the predictand's does, else day numbers of one sample
// would name different dates. Returns the store's calendar.
// Each value is within its plausible range, but the whole training period over the domain can
// still betray a wrong unit: no day at or above the wet-day threshold anywhere (kg m-2 s-1
// labelled mm/day: 86400 times too small), or a mean above anything observed (the wettest
// places on Earth average about 32 mm/day; 0.1 mm labelled mm: 10 times too large).
// The threshold names its key: one above every day's amount (a wet_threshold of 200) leaves no
// wet day, a usage error rather than the data's; a threshold leaving almost no wet day (under
// kFewWetDays of the values) is warned about, since the model would learn almost no rain.
constexpr double kFewWetDays = 0.01;
void check_precipitation_climate(double wet_share, double mean, double largest, const Config& cfg,
                                 const std::string& where) {
  const double threshold = cfg.preprocess.wet_threshold;
  const std::string key = fmt::format("preprocess.wet_threshold {:g} mm/day (from {})", threshold,
                                      cfg.origin("preprocess.wet_threshold"));
  // Above any amount a wet-day threshold is meant to be (climate4R's 1 mm, 0.1 or 2.5 elsewhere),
  // and above the largest training value: the key's fault, whatever the units.
  if (wet_share == 0 && threshold > 5 && largest < threshold)
    throw UsageError(fmt::format("{}: {} is above every training day's amount (the largest {:g} mm/day): no wet day "
                                 "to learn from; wet-day thresholds are about 1 mm/day",
                                 where, key, largest));
  if (wet_share == 0)
    throw InputError(fmt::format("{}: no day at or above the wet-day threshold on any modelled box in the training "
                                 "years (mean {:f} mm/day; preprocess.wet_threshold {:g} mm/day, from {}): precipitation "
                                 "in another unit than its label?",
                                 where, mean, threshold, cfg.origin("preprocess.wet_threshold")));
  if (mean > 60)
    throw InputError(where + ": the training years' mean precipitation over the modelled boxes is " +
                     std::to_string(mean) + " mm/day, about twice the wettest place on Earth's: precipitation in "
                     "another unit than its label?");
  if (wet_share < kFewWetDays)
    spdlog::warn("{}: only {:.2g} % of the training days' values on the modelled boxes are wet, at or above {}: the "
                 "model learns almost no precipitation (the largest training value is {:g} mm/day; wet-day thresholds "
                 "are about 1 mm/day)",
                 where, 100 * wet_share, key, largest);
}

Calendar common_calendar(const FetchedField& predictand, const std::vector<Channel>& channels) {
  for (const auto& ch : channels)
    if (!same_days_after_1582(ch.file->calendar(), predictand.calendar()))
      throw InputError(ch.file->path() + " has calendar " + cf_name(ch.file->calendar()) + " but " + predictand.path() +
                       " has calendar " + cf_name(predictand.calendar()) +
                       ": the predictors and the predictand of one store must share a calendar");
  return predictand.calendar();
}

// The observation grid's rows x columns copied into the output grid at (row0, col0); padding NaN.
void embed(const std::vector<float>& in, size_t nt, const Grid& obs, const OutputGrid& out, std::vector<float>& dst) {
  const size_t ow = obs.lon.size(), oh = obs.lat.size(), W = out.grid.lon.size(), HW = out.grid.size();
  dst.assign(nt * HW, std::numeric_limits<float>::quiet_NaN());
  for (size_t t = 0; t < nt; ++t)
    for (size_t j = 0; j < oh; ++j)
      std::copy_n(&in[(t * oh + j) * ow], ow, &dst[t * HW + (j + size_t(out.row0)) * W + size_t(out.col0)]);
}

}  // namespace

// A split's years the fetched data does not hold: none of them is an error naming the key (a
// test split of 2005 from data ending in 2004 would otherwise be an empty split that predict
// trips over later); some of them, a warning (the split is smaller than the config says).
static void check_split_years(const SplitYears& splits, const SampleDates& dates, const std::string& fetch_dir) {
  static const char* const keys[] = {"preprocess.train_years", "preprocess.validation_years", "preprocess.test_years"};
  std::set<int> held;  // the (season-)years of the dates common to every file
  for (const auto& days : dates.split_days)
    for (int64_t d : days) held.insert(splits.year_of(d));
  for (int64_t d : dates.outside_splits) held.insert(splits.year_of(d));
  const std::string covered = held.empty() ? std::string("no year")
                                           : std::to_string(*held.begin()) + ".." + std::to_string(*held.rbegin());
  for (int k = 0; k < 3; ++k) {
    const YearRange& r = splits.years[k];
    if (r.empty()) continue;
    std::string missing;
    for (int y = r.first; y <= r.last; ++y) {
      if (held.count(y)) continue;
      int last = y;
      while (last < r.last && !held.count(last + 1)) ++last;
      missing += (missing.empty() ? "" : ", ") + std::to_string(y) + (last > y ? ".." + std::to_string(last) : "");
      y = last;
    }
    if (missing.empty()) continue;
    const std::string what = std::string(keys[k]) + " [" + std::to_string(r.first) + ", " + std::to_string(r.last) +
                             "]: the fetched data (" + fetch_dir + ") holds no day of " + missing + "; it covers " +
                             covered + (splits.season_years() ? " (season-years)" : "");
    if (dates.split_days[k].empty()) throw InputError(what);
    spdlog::warn("{}", what);
  }
}

namespace {

// A predictor grid of more than 16 times its source's cells (a step a quarter of the source's).
constexpr size_t kFinerThanSource = 16;

// The store's size before its two passes: x on the predictor grid, y and obs on the output grid,
// 4 bytes a value (what HDF5 writes uncompressed). A mistyped grid step once set out to write
// about 190 GB onto a disk with 79 free, to fail hours later: refused now (Error, exit 1) unless
// compression may make it fit, where it is said.
void check_store_fits(const std::string& store_path, size_t days, size_t channels, const Grid& xgrid, const Grid& ygrid,
                      int compression) {
  const double bytes = double(days) * (double(channels) * double(xgrid.size()) + 2.0 * double(ygrid.size())) * 4.0;
  const auto text = [](double b) {
    return b >= 1e9 ? fmt::format("{:.1f} GB", b / 1e9) : fmt::format("{:.1f} MB", b / 1e6);
  };
  const std::string dir = std::filesystem::path(store_path).parent_path().string();
  std::error_code ec;
  const auto space = std::filesystem::space(dir.empty() ? "." : dir, ec);
  const std::string what =
      fmt::format("{} days of {} channels on {} and the predictand on {}", days, channels, xgrid.describe(), ygrid.describe());
  if (ec) {
    spdlog::info("the store will take about {} uncompressed ({})", text(bytes), what);
    return;
  }
  const double available = double(space.available);
  spdlog::info("the store will take about {} uncompressed ({}); {} free there", text(bytes), what, text(available));
  if (bytes <= available) return;
  if (compression > 0) {
    spdlog::warn("{}: the store takes about {} uncompressed and {} has {} free: it fits only if preprocess.compression "
                 "{} shrinks it that much", store_path, text(bytes), dir, text(available), compression);
    return;
  }
  throw Error(fmt::format("{}: the store needs about {} ({}, uncompressed) but {} has {} free: free space, write it "
                          "elsewhere (run.dir), set preprocess.compression, or check preprocess.predictor_grid and the "
                          "years", store_path, text(bytes), what, dir, text(available)));
}

}  // namespace

StoreSummary build_store(const Config& cfg, const std::string& fetch_dir, const std::string& store_path) {
  const auto& pp = cfg.preprocess;
  const FetchManifest manifest = FetchManifest::read(fetch_dir + "/manifest.json");
  if (manifest.predictors.empty()) throw InputError(fetch_dir + "/manifest.json: no predictors");
  if (manifest.predictand.name.empty())
    throw InputError(fetch_dir + "/manifest.json: no predictand (a fetch of predictors alone); preprocess needs the "
                     "observed predictand to train on: add fetch.predictand to the config and fetch again");
  if (const std::string changed = fetch_request_change(manifest, cfg.fetch); !changed.empty()) spdlog::warn("{}", changed);
  if (const std::string fields = fetched_fields_change(manifest, cfg.fetch); !fields.empty())
    throw UsageError(cfg.origin("fetch.predictors.fields") + ": " + fields);
  std::string dataset_key;
  if (const std::string datasets = fetched_datasets_change(manifest, cfg.fetch, cfg.file, &dataset_key); !datasets.empty())
    throw UsageError(cfg.origin(dataset_key) + ": " + datasets);
  const FillPolicy fill = parse_fill_policy(pp.fill);
  const bool per_field = pp.standardize == "field";

  // Open every file (headers and coordinates only), check units, build the regridding weights.
  RegridChoice choice(cfg);
  std::vector<Channel> channels;
  std::vector<PredictorUnits> units;
  std::string field_names, regrid_attr;
  for (const auto& p : manifest.predictors) {
    Channel ch;
    ch.name = p.name;
    ch.var = p.name.substr(0, p.name.find('@'));
    ch.file = std::make_unique<FetchedField>(manifest.path_of(p), p.variable);
    ch.file->check_level(p.name);
    ch.file->check_as_fetched(p, manifest.dir + "/manifest.json", manifest.season);
    ch.file->set_valid_range(p.valid_min, p.valid_max, p.units);
    units.push_back({ch.name, ch.var, ch.file->units(), ch.file->where()});
    field_names += (field_names.empty() ? "" : ", ") + ch.name;
    channels.push_back(std::move(ch));
  }
  check_predictor_units(units, pp.units);
  const Grid xgrid = Grid::from_spec(pp.predictor_grid);
  // The predictand: precipitation is converted to mm/day and modelled as wet-day amounts; any
  // other variable is kept in its units and modelled as it is.
  const std::string predictand = manifest.predictand.name;
  const bool precipitation = predictand == "pr";
  FetchedField obs_file(manifest.path_of(manifest.predictand), manifest.predictand.variable);
  obs_file.check_as_fetched(manifest.predictand, manifest.dir + "/manifest.json", manifest.season);
  // Precipitation is never negative, whatever the manifest's age.
  obs_file.set_valid_range(std::isfinite(manifest.predictand.valid_min) || !precipitation ? manifest.predictand.valid_min : 0.0,
                           manifest.predictand.valid_max, manifest.predictand.units);
  if (precipitation) {
    std::vector<float> none;
    to_mm_per_day(none, obs_file.units(), obs_file.where());  // checks the units before any work
  }
  const Calendar calendar = common_calendar(obs_file, channels);
  field_names += ", " + predictand;
  bool partial_said = false, finer_said = false;
  for (auto& ch : channels) {
    const RegridMethod m = choice.of(ch.name, ch.var);
    // Edge cells the source covers in part are taken from that part, as predict does for a GCM's
    // grid (regrid_covering.h): NCEP's T62 grid ends 0.3 degrees short of a 2-degree grid's edges.
    CoverageRegrid cov = regrid_covering(m, ch.file->grid(), xgrid, ch.file->where());
    if (cov.partial && !partial_said) {
      partial_said = true;
      spdlog::warn("{}: {} of {} predictor-grid cells ({}) are only partly covered by its grid {} (the least {:.0f} %): "
                   "their values come from the covered part{}; fetch cuts one source cell beyond the predictor grid's "
                   "cells where the source has them, so the source stops short of them here (or was fetched for "
                   "another preprocess.predictor_grid: fetch again)",
                   ch.file->where(), cov.partial, xgrid.size(), xgrid.describe(), ch.file->grid().describe(),
                   100 * cov.least_covered, m == RegridMethod::nearest ? " (nearest: the source cell at the edge)" : "");
    }
    if (!finer_said && xgrid.size() > kFinerThanSource * ch.file->grid().size()) {
      finer_said = true;
      spdlog::warn("{}: preprocess.predictor_grid {} has {:.0f} times the cells of its source grid {} over the domain: "
                   "regridding adds no detail the source lacks, and the store grows with the cells (a mistyped "
                   "preprocess.predictor_grid step?)",
                   ch.file->where(), xgrid.describe(), double(xgrid.size()) / double(ch.file->grid().size()),
                   ch.file->grid().describe());
    }
    ch.regrid = std::make_unique<Regridder>(m, std::move(cov.weights));
    regrid_attr += ch.name + ":" + to_string(m) + ",";
  }
  // The observation grid: preprocess.predictand_grid (the predictand regridded onto it), or the
  // fetched grid as it is.
  const Grid ogrid = pp.has_predictand_grid ? Grid::from_spec(pp.predictand_grid) : obs_file.grid();
  // The message names what set the grids: a --set of the predictand grid, the predictor grid or
  // the model, else the file.
  std::string grid_origin = cfg.file;
  for (const char* key : {"preprocess.predictand_grid", "preprocess.predictor_grid", "model.name"})
    if (grid_origin == cfg.file && (std::string(key) != "preprocess.predictand_grid" || pp.has_predictand_grid))
      grid_origin = cfg.origin(key);
  const OutputGrid ygrid = output_grid(cfg.model.name, xgrid, ogrid, grid_origin, !pp.has_predictand_grid);
  std::unique_ptr<Regridder> obs_regrid;
  if (pp.has_predictand_grid) {
    const RegridMethod m = choice.of(predictand, manifest.predictand.variable);
    obs_regrid = std::make_unique<Regridder>(m, obs_file.grid(), ogrid, obs_file.where());
    regrid_attr += predictand + ":" + to_string(m);
    // Interpolated between boxes, rain spreads over dry ones: more wet days of less (a half-cell
    // shift of the demo's grid: 34 % wet days became 47 %). Onto a subset of the source's points
    // bilinear is a copy, and nothing spreads.
    const auto on_points = [](const std::vector<double>& target, const std::vector<double>& source) {
      for (double t : target)
        if (std::none_of(source.begin(), source.end(), [&](double s) { return std::fabs(s - t) < 1e-6; })) return false;
      return true;
    };
    if (precipitation && m == RegridMethod::bilinear &&
        !(on_points(ogrid.lat, obs_file.grid().lat) && on_points(ogrid.lon, obs_file.grid().lon)))
      spdlog::warn("{}: precipitation is regridded bilinearly onto preprocess.predictand_grid, which spreads rain over "
                   "dry boxes (more wet days, smaller amounts); conservative regridding keeps each box's amount: set "
                   "preprocess.regrid: {{pr: conservative}}",
                   obs_file.where());
  } else {
    regrid_attr += predictand + ":none";
  }
  choice.check_all_used(field_names);
  // Downscaling maps coarse predictors to a finer grid; observations coarser than the predictors
  // train a model of something else, which the user rarely means.
  const auto step = [](const std::vector<double>& c) { return c.size() > 1 ? (c.back() - c.front()) / double(c.size() - 1) : 0.0; };
  if (step(ogrid.lat) > 1.01 * step(xgrid.lat) && step(ogrid.lon) > 1.01 * step(xgrid.lon) && step(xgrid.lat) > 0)
    spdlog::warn("the observation grid ({}) is coarser than the predictor grid ({}): the model maps the predictors onto "
                 "a coarser grid, which is no downscaling (preprocess.predictand_grid, or the fetched observations)",
                 ogrid.describe(), xgrid.describe());
  if (ygrid.grid.size() != ogrid.size())
    spdlog::info("model '{}' outputs {} x {} (lat x lon); the {} x {} observation grid sits at row {}, column {}, the "
                 "rest is padding",
                 cfg.model.name, ygrid.grid.nlat(), ygrid.grid.nlon(), ogrid.nlat(), ogrid.nlon(), ygrid.row0, ygrid.col0);

  // Samples: the dates in every file and in a split.
  std::vector<std::string> names;
  std::vector<const std::vector<int64_t>*> days;
  for (const auto& ch : channels) names.push_back(ch.name), days.push_back(&ch.file->days());
  names.push_back(predictand), days.push_back(&obs_file.days());
  SplitYears splits = SplitYears::from(cfg, calendar);
  // Season-years follow what fetch cut: a config whose fetch.season changed since would split
  // DJF data by calendar years (or drop a December) without a word.
  if (!manifest.season.empty() && manifest.season != splits.season) {
    spdlog::warn("{}: fetch.season is [{}] but the fetch in {} cut [{}]: splitting by the fetched season (fetch "
                 "again for the config's)", cfg.origin("fetch.season"), months_text(splits.season), fetch_dir,
                 months_text(manifest.season));
    splits.season = manifest.season;
  }
  const SampleDates dates = plan_sample_dates(splits, names, days);
  for (const auto& line : dates.report()) spdlog::info("{}", line);
  if (dates.total() == 0) throw InputError(fetch_dir + ": no dates common to all variables within the split years");
  check_split_years(splits, dates, fetch_dir);
  check_store_fits(store_path, dates.total(), channels.size(), xgrid, ygrid.grid, pp.compression);
  std::vector<size_t> obs_index[3];
  for (int s = 0; s < 3; ++s) {
    for (auto& ch : channels) ch.index[s] = indices_of(ch.file->days(), dates.split_days[s]);
    obs_index[s] = indices_of(obs_file.days(), dates.split_days[s]);
  }

  StoreSummary summary;
  summary.splits = splits.describe();
  {
    // The years asked for and the days the data hold in them (a test_years past the data's end
    // is warned about above; here the split's real extent).
    std::string held;
    for (int k = 0; k < 3; ++k) {
      const auto& d = dates.split_days[k];
      if (d.empty()) continue;
      held += std::string(held.empty() ? "" : ", ") + kSplits[k] + " " + to_string(date_from_days(d.front(), calendar)) +
              ".." + to_string(date_from_days(d.back(), calendar));
    }
    if (!held.empty()) summary.splits += "; days held: " + held;
  }
  summary.not_common = dates.not_common.size();
  summary.outside_splits = dates.outside_splits.size();
  summary.dropped_dates = summary.not_common + summary.outside_splits;
  // Blocks are whole HDF5 chunks, so no chunk is written twice (the statistics do not depend on
  // the block: RunningStats).
  const size_t rows = StoreWriter::kChunkRows;
  const size_t block = std::max<size_t>(rows, (static_cast<size_t>(pp.block_days) + rows - 1) / rows * rows);
  const size_t C = channels.size(), HW = xgrid.size(), HWy = ygrid.grid.size();
  const size_t ntrain = dates.split_days[0].size();
  if (ntrain < 2) throw InputError(fetch_dir + ": standardization needs at least 2 training days, got " + std::to_string(ntrain));

  // One block of the predictand on the output grid: read, mm/day, regridded, embedded.
  std::vector<float> src, out, obs_block;
  auto read_obs = [&](const std::vector<size_t>& idx, std::vector<float>& dst) {
    src.resize(idx.size() * obs_file.grid().size());
    obs_file.read(idx, src.data());
    if (precipitation) to_mm_per_day(src, obs_file.units(), obs_file.where());
    if (obs_regrid) obs_regrid->apply(src, idx.size(), obs_block);
    else obs_block.swap(src);
    embed(obs_block, idx.size(), ogrid, ygrid, dst);
  };

  // Pass 1: training statistics of each predictor; the land mask from the training days.
  std::vector<float> yv;
  {
    Progress progress("pass 1: training statistics and land mask", static_cast<int64_t>((C + 1) * ntrain));
    for (auto& ch : channels) {
      RunningStats stats(HW);
      for_blocks(ntrain, block, "computing the training statistics of " + ch.name, [&](size_t a, size_t b) {
        const auto idx = slice(ch.index[0], a, b);
        src.resize(idx.size() * ch.file->grid().size());
        ch.file->read(idx, src.data());
        fill_missing(*ch.file, idx, src, fill);
        ch.regrid->apply(src, idx.size(), out);
        stats.add(out.data(), idx.size());
        progress.advance(static_cast<int64_t>(idx.size()));
      });
      ch.stats = stats.finish(per_field, ch.file->where());
    }
    ObservedDays observed(HWy);
    for_blocks(ntrain, block, "computing the land mask", [&](size_t a, size_t b) {
      const auto idx = slice(obs_index[0], a, b);
      read_obs(idx, yv);
      observed.add(yv);
      progress.advance(static_cast<int64_t>(idx.size()));
    });
    progress.done();
    std::vector<uint8_t> mask = observed.mask(pp.min_valid_fraction);
    size_t land = 0;
    for (auto m : mask) land += m;
    if (land == 0)
      throw InputError(obs_file.where() + ": no grid box is observed on " + std::to_string(pp.min_valid_fraction * 100) +
                       "% of the training days (preprocess.min_valid_fraction)");
    summary.land_share = static_cast<double>(land) / static_cast<double>(ogrid.size());

    StoreMeta meta;
    meta.mask = std::move(mask);
    meta.channels.clear();
    for (const auto& ch : channels) {
      meta.channels.push_back(ch.name);
      meta.channel_units.push_back(ch.file->units());
      meta.mean.insert(meta.mean.end(), ch.stats.mean.begin(), ch.stats.mean.end());
      meta.sd.insert(meta.sd.end(), ch.stats.sd.begin(), ch.stats.sd.end());
    }
    meta.predictor_lon = xgrid.lon;
    meta.predictor_lat = xgrid.lat;
    meta.predictand_lon = ygrid.grid.lon;
    meta.predictand_lat = ygrid.grid.lat;
    meta.wet_threshold = pp.wet_threshold;
    meta.config_text = cfg.record("preprocess");  // the file and its --set overrides
    meta.split_years = pp.split_years_text();
    for (const auto& p : manifest.predictors) meta.sources += p.source + " ";
    meta.sources += manifest.predictand.source;
    DataTerms terms;
    for (const auto& ch : channels) terms.add(ch.name, *ch.file);
    terms.add(predictand, obs_file);
    meta.source_references = terms.references();
    meta.source_license = terms.license();
    meta.standardize = pp.standardize;
    meta.regrid = regrid_attr;
    meta.fill = pp.fill;
    meta.min_valid_fraction = pp.min_valid_fraction;
    meta.dropped_dates = static_cast<int64_t>(summary.dropped_dates);
    meta.predictand = predictand;
    meta.predictand_units = precipitation ? "mm/day" : obs_file.units();
    meta.calendar = cf_name(calendar);
    meta.obs_row0 = ygrid.row0;
    meta.obs_col0 = ygrid.col0;
    meta.obs_rows = ogrid.nlat();
    meta.obs_cols = ogrid.nlon();
    meta.obs_lat = ogrid.lat;
    meta.obs_lon = ogrid.lon;

    // Pass 2: standardized samples, block by block, into the chunked datasets.
    AtomicFile file(store_path);
    StoreWriter writer(file.temp_path(), meta, pp.compression);
    Progress progress2("pass 2: writing samples", static_cast<int64_t>(dates.total()));
    std::vector<float> x, y;
    size_t wet = 0, train_valid = 0;
    size_t split_valid[3] = {0, 0, 0};  // finite targets per split
    double train_sum = 0;  // of the observed amounts over the modelled boxes' training days
    double train_largest = 0;  // and their largest
    for (int s = 0; s < 3; ++s) {
      const size_t n = dates.split_days[s].size();
      writer.create_split(kSplits[s], n);
      std::vector<size_t> filled(C, 0);  // this split's predictor-grid values left to the training mean
      std::vector<int64_t> unobserved;     // and its days without an observed modelled box
      for_blocks(n, block, std::string("writing the ") + kSplits[s] + " split", [&](size_t a, size_t b) {
        const size_t nb = b - a;
        x.resize(nb * C * HW);
        for (size_t c = 0; c < C; ++c) {
          Channel& ch = channels[c];
          const auto idx = slice(ch.index[s], a, b);
          src.resize(nb * ch.file->grid().size());
          ch.file->read(idx, src.data());
          summary.filled += fill_missing(*ch.file, idx, src, fill);
          ch.regrid->apply(src, nb, out);
          apply_standardization(ch.stats, out);
          for (size_t t = 0; t < nb; ++t) {
            float* dst = &x[(t * C + c) * HW];
            std::copy(out.begin() + t * HW, out.begin() + (t + 1) * HW, dst);
            // climatology fill: a box still missing takes the training mean, 0 once standardized.
            for (size_t k = 0; k < HW; ++k) {
              // (Only NaN: an infinity, a departure over a zero sd, is refused just below.)
              if (std::isnan(dst[k])) dst[k] = 0.0f, ++filled[c];
              // Every stage that reads the store refuses such a value (io/store_checks.h); say why
              // here, where rebuilding would not help: a box almost constant over the training
              // days, so a small departure is thousands of its standard deviations.
              if (std::fabs(dst[k]) > kImpossibleStandardized)
                throw InputError(fmt::format(
                    "{} on {} at lat {:g}, lon {:g}: {:g} standard deviations from its training mean {:g} (sd {:g}), "
                    "more than {:g}: the field hardly varies there over the training days; standardize per field "
                    "(preprocess.standardize: field) or leave it out (nothing written)",
                    ch.file->where(), to_string(date_from_days(dates.split_days[s][a + t], calendar)),
                    xgrid.lat[k / xgrid.lon.size()], xgrid.lon[k % xgrid.lon.size()], dst[k], ch.stats.mean[k],
                    ch.stats.sd[k], kImpossibleStandardized));
            }
          }
        }
        read_obs(slice(obs_index[s], a, b), yv);
        y = training_target(yv, meta.mask, precipitation, pp.wet_threshold);
        mask_observation(yv, meta.mask);
        for (size_t t = 0; t < nb; ++t) {
          const size_t valid = size_t(std::count_if(y.begin() + t * HWy, y.begin() + (t + 1) * HWy,
                                                    [](float v) { return std::isfinite(v); }));
          split_valid[s] += valid;
          if (!valid) unobserved.push_back(dates.split_days[s][a + t]);
        }
        if (s == 0) {
          for (float v : y)
            if (std::isfinite(v)) ++train_valid, wet += v > 0;
          for (float v : yv)
            if (std::isfinite(v)) train_sum += v, train_largest = std::max(train_largest, double(v));
        }
        writer.write_rows(kSplits[s], a, nb, x.data(), y.data(), yv.data(), &dates.split_days[s][a]);
        progress2.advance(static_cast<int64_t>(nb));
      });
      // Counted on the predictor grid, after regridding: a land-only field's sea that no box
      // reaches, or that conservative regridding leaves out, is no fill.
      for (size_t c = 0; c < C && n > 0; ++c) {
        if (!filled[c]) continue;
        const double share = double(filled[c]) / double(n * HW);
        if (share > kMostFilled)
          throw InputError(fmt::format(
              "{}: {:.1f} % of its values on the predictor grid in the {} split ({} to {}) are missing and take the "
              "training mean (preprocess.fill: {}): more than {:.0f} %, the {} split's {} would be the fill, not the "
              "weather; fetch the field again or from another source, or choose other preprocess.{}_years (nothing "
              "written)",
              channels[c].file->where(), 100 * share, kSplits[s],
              to_string(date_from_days(dates.split_days[s].front(), calendar)),
              to_string(date_from_days(dates.split_days[s].back(), calendar)), pp.fill, 100 * kMostFilled, kSplits[s],
              channels[c].name, kSplits[s]));
        spdlog::info("{}: {} of its values on the predictor grid in the {} split take the training mean ({:.2g} %, "
                     "preprocess.fill: climatology)",
                     channels[c].file->where(), filled[c], kSplits[s], 100 * share);
      }
      // A split of days none of whose modelled boxes was observed would be scored as loss 0 (the
      // validation split choosing the first epoch's model as the best) or not at all (test).
      if (n > 0 && split_valid[s] == 0)
        throw InputError(obs_file.where() + ": no observed value on the modelled boxes in the " + kSplits[s] +
                         " split (" + to_string(date_from_days(dates.split_days[s].front(), calendar)) + " to " +
                         to_string(date_from_days(dates.split_days[s].back(), calendar)) +
                         "): every day there is missing; choose other preprocess." + kSplits[s] + "_years");
      // Such a day is a sample with nothing to learn or score: the loss and the scores skip its
      // boxes, but it counts in the split (and in its batches). Said, with the first dates.
      if (!unobserved.empty()) {
        std::string first;
        for (size_t i = 0; i < std::min<size_t>(unobserved.size(), 3); ++i)
          first += (i ? ", " : "") + to_string(date_from_days(unobserved[i], calendar));
        spdlog::warn("{}: {} day{} of the {} split {} no observed value on any modelled box ({}{}): kept, they "
                     "count in the split but add nothing to its loss or scores",
                     obs_file.where(), unobserved.size(), unobserved.size() == 1 ? "" : "s", kSplits[s],
                     unobserved.size() == 1 ? "has" : "have", first, unobserved.size() > 3 ? ", ..." : "");
      }
    }
    progress2.done();
    if (precipitation && train_valid)
      check_precipitation_climate(double(wet) / double(train_valid), train_sum / double(train_valid), train_largest, cfg,
                                  obs_file.where());
    writer.close();
    file.commit();
    summary.wet_day_share = precipitation && train_valid ? static_cast<double>(wet) / train_valid : 0;
  }
  summary.precipitation = precipitation;
  if (summary.filled > 0)
    spdlog::warn("{} missing predictor values were filled (preprocess.fill: {})", summary.filled, pp.fill);
  summary.train = dates.split_days[0].size();
  summary.validation = dates.split_days[1].size();
  summary.test = dates.split_days[2].size();
  return summary;
}

}  // namespace ds
