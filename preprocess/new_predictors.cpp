#include "preprocess/new_predictors.h"

#include <tuple>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/netcdf_file.h"
#include "io/store_checks.h"
#include "preprocess/fetched_field.h"
#include "preprocess/fill.h"
#include "preprocess/sample_dates.h"
#include "preprocess/standardize.h"

namespace ds {

struct NewPredictors::Channel {
  std::unique_ptr<FetchedField> file;
  CoverageRegrid regrid;
  std::vector<size_t> index;  // the file's time index of each common day
  Standardization stats;
  double scale = 1, offset = 0;  // the file's units to the training data's
};

namespace {

// The method the store used for a channel: its regrid attribute reads "z@500:bilinear,...".
RegridMethod store_method(const StoreMeta& meta, const std::string& name) {
  for (const auto& [field, method] : meta.regrid_methods())
    if (field == name) return parse_regrid_method(method, "store attribute regrid");
  return RegridMethod::bilinear;  // stores written before the attribute existed used bilinear
}

// The name of the file's time calendar, read from the file itself (a GCM run is often noleap or
// 360_day, and its day numbers count that calendar's days).
std::string file_calendar(const std::string& path) {
  const NcFile nc = NcFile::open(path);
  return cf_name(parse_calendar(nc.att_text(nc.var_id("time"), "calendar"), path + ": time"));
}

// Whether day numbers of the two calendars (CF names) mean the same dates: equal, or standard
// and proleptic_gregorian, which differ only before 1582 (a model's historical and scenario
// files are published under either name).
bool same_days(const std::string& a, const std::string& b) {
  return same_days_after_1582(parse_calendar(a, "calendar"), parse_calendar(b, "calendar"));
}

}  // namespace

NewPredictors::NewPredictors(const std::string& fetch_dir, const StoreMeta& meta, const NewPredictorOptions& opt)
    : meta_(meta), fill_(static_cast<int>(parse_fill_policy(opt.fill.empty() ? meta.fill : opt.fill))) {
  const FetchManifest manifest = FetchManifest::read(fetch_dir + "/manifest.json");
  season_ = manifest.season;
  const Grid xgrid = Grid::from_coords(meta.predictor_lon, meta.predictor_lat, "store predictor grid");
  const size_t HW = xgrid.size();
  std::string first_file;
  std::vector<std::string> partial_fields;  // channels whose grid covers some predictor-grid cells in part
  std::string partial_line;                // the first of them, with its figures
  std::vector<std::string> converted;      // "psl from hPa to Pa"
  for (size_t c = 0; c < meta.channels.size(); ++c) {
    const std::string& name = meta.channels[c];
    const auto it = std::find_if(manifest.predictors.begin(), manifest.predictors.end(),
                                 [&](const FetchedFile& f) { return f.name == name; });
    if (it == manifest.predictors.end())
      throw InputError(fetch_dir + "/manifest.json: no predictor " + name + " (the model was trained on it)");
    Channel ch;
    const std::string path = manifest.path_of(*it);
    // Every channel on one calendar: a day number means the same date in all of them.
    const std::string cal = file_calendar(path);
    if (c == 0) calendar_ = cal, first_file = path;
    else if (!same_days(cal, calendar_))
      throw InputError(path + ": time calendar " + cal + " differs from " + calendar_ + " of " + first_file);
    ch.file = std::make_unique<FetchedField>(path, it->variable);
    ch.file->check_level(name);
    ch.file->check_as_fetched(*it, fetch_dir + "/manifest.json", manifest.season);
    if (ch.file->days().empty()) throw InputError(ch.file->where() + ": no time step (predictor " + name + ")");
    ch.file->set_valid_range(it->valid_min, it->valid_max, it->units);
    // The training data's units (older stores do not record them: not checked).
    const std::string want = c < meta.channel_units.size() ? meta.channel_units[c] : "";
    const std::string& have = ch.file->units();
    if (!want.empty() && have != want) {
      const std::string where = ch.file->where() + " (predictor " + name + ")";
      if (!opt.convert_units)
        throw InputError(where + ": in '" + have + "', the training data in '" + want + "'");
      std::tie(ch.scale, ch.offset) = opt.convert_units(have, want, where);
      if (ch.scale != 1 || ch.offset != 0) converted.push_back(fmt::format("{} from {} to {}", name, have, want));
    }
    ch.regrid = regrid_covering(store_method(meta, name), ch.file->grid(), xgrid, ch.file->where() + " (predictor " + name + ")");
    // Said once after the loop, with the first field's figures and every field it applies to
    // (a run's fields share a grid): edge cells computed from part of their area differ from
    // the training data's, which covered them.
    if (ch.regrid.partial) {
      if (partial_fields.empty())
        partial_line = fmt::format("{}: {} of {} predictor-grid cells are only partly covered by the source grid {} "
                                   "(the least {:.0f} %)",
                                   path, ch.regrid.partial, HW, ch.file->grid().describe(), 100 * ch.regrid.least_covered);
      partial_fields.push_back(name);
    }
    ch.stats.mean.assign(meta.mean.begin() + c * HW, meta.mean.begin() + (c + 1) * HW);
    ch.stats.sd.assign(meta.sd.begin() + c * HW, meta.sd.begin() + (c + 1) * HW);
    channels_.push_back(std::move(ch));
  }
  if (!converted.empty())
    spdlog::info("{}: {} converted to the training data's units ({})", fetch_dir, opt.role,
                 fmt::format("{}", fmt::join(converted, ", ")));
  if (!partial_fields.empty())
    spdlog::info("{}, in {} of the {} predictor fields ({}): their values come from the covered part (nearest: from "
                 "the source cell at the edge); fetch cuts one source cell beyond the predictor grid's cells where the "
                 "source has them, so the source stops short of them here (or was fetched for another "
                 "preprocess.predictor_grid: fetch again)",
                 partial_line, partial_fields.size(), channels_.size(), fmt::format("{}", fmt::join(partial_fields, ", ")));
  // Common days, then each channel's index of them. Days not in every file are dropped and said,
  // as preprocess says them, with the files that lack them: one file's time shifted by a year
  // (another reference date written into its units) paired each day with another winter's field.
  std::vector<const std::vector<int64_t>*> channel_days;
  for (const auto& ch : channels_) channel_days.push_back(&ch.file->days());
  // No split has years here, so every common day lands in outside_splits: those are the days.
  SplitYears no_splits;
  no_splits.calendar = parse_calendar(calendar_, fetch_dir);
  const SampleDates common = plan_sample_dates(no_splits, meta.channels, channel_days);
  days_ = common.outside_splits;
  if (days_.empty())
    throw InputError(fetch_dir + ": the predictors have no day in common (" +
                     fmt::format("{}", fmt::join(common.missing_from, "; ")) + " of the days any of them holds)");
  if (!common.not_common.empty())
    spdlog::warn("{}: in {}, {}: check that their files hold the same days (a time axis whose units or calendar "
                 "were changed after the fetch pairs each day with another day's fields)",
                 fetch_dir, opt.role, common.report().front());
  for (auto& ch : channels_) {
    const auto& d = ch.file->days();
    for (int64_t day : days_) ch.index.push_back(std::lower_bound(d.begin(), d.end(), day) - d.begin());
  }
  description_ = "training: standardized with the training store's mean and standard deviation (" + meta.standardize + ")";
  if (opt.standardize == "training") return;
  if (opt.standardize != "own") throw UsageError("predict.standardize: '" + opt.standardize + "' is not training or own");

  // A scenario takes its climatology from its model's historical run: the same channels, regridded
  // the same way, over the reference years of that folder.
  if (!opt.reference_dir.empty()) {
    const NewPredictors reference(opt.reference_dir, meta,
                                  {"own", opt.reference_years, "", opt.fill,
                                   "the reference predictors (predict.reference_predictors)", opt.convert_units});
    if (!same_days(reference.calendar(), calendar_))
      throw InputError(opt.reference_dir + ": predict.reference_predictors are on the " + reference.calendar() +
                       " calendar but " + fetch_dir + " on the " + calendar_ + " calendar (not one model's runs)");
    // One model's historical and scenario runs share its grid; another grid is another model
    // (or a reanalysis), whose climatology would carry its own biases into these predictors.
    for (size_t c = 0; c < channels_.size(); ++c) {
      const Grid &a = channels_[c].file->grid(), &b = reference.channels_[c].file->grid();
      auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
        if (x.size() != y.size()) return false;
        for (size_t i = 0; i < x.size(); ++i)
          if (std::fabs(x[i] - y[i]) > 1e-6) return false;  // float and double copies of one axis
        return true;
      };
      if (!same(a.lon, b.lon) || !same(a.lat, b.lat)) {
        spdlog::warn("{}: predictor {} is on grid {} but its reference predictors ({}) on {}: the climatology of "
                     "another model or of a different fetch box standardizes these predictors (a scenario takes "
                     "its own model's historical run, fetched over the same box)",
                     fetch_dir, meta.channels[c], a.describe(), opt.reference_dir, b.describe());
        break;
      }
    }
    // The climatology of other months (a historical run fetched for JJA standardizing a DJF
    // scenario) takes the seasonal cycle for the climate change, exit 0 and degrees off.
    const Calendar cal = parse_calendar(calendar_, fetch_dir);
    std::vector<int> mine = months_of(days_, cal), theirs = months_of(reference.days_, cal);
    for (auto* m : {&mine, &theirs}) {
      std::sort(m->begin(), m->end());
      m->erase(std::unique(m->begin(), m->end()), m->end());
    }
    std::vector<int> lacking;
    std::set_difference(mine.begin(), mine.end(), theirs.begin(), theirs.end(), std::back_inserter(lacking));
    if (!lacking.empty() || (!season_.empty() && !reference.season_.empty() &&
                             std::set<int>(season_.begin(), season_.end()) !=
                                 std::set<int>(reference.season_.begin(), reference.season_.end())))
      throw InputError(fmt::format(
          "{}: predict.reference_predictors hold months {} (fetch.season {}) but {} months {} (fetch.season {}): a "
          "climatology of other months would standardize the seasonal cycle into these predictors; fetch the "
          "reference run for the same season",
          opt.reference_dir, fmt::join(theirs, ","), fmt::join(reference.season_, ","), fetch_dir, fmt::join(mine, ","),
          fmt::join(season_, ",")));
    for (size_t c = 0; c < channels_.size(); ++c) channels_[c].stats = reference.channels_[c].stats;
    description_ = "own: each predictor standardized with the mean and standard deviation (" + meta.standardize + ") of " +
                   opt.reference_dir + " over " + reference.reference_years_text(opt.reference_years);
    return;
  }
  // Own climatology: each channel's statistics over the reference years of these predictors,
  // computed on the model grid after regridding and filling, as the store's were.
  const YearRange& ref = opt.reference_years;
  const SplitYears rule = season_rule();
  std::vector<bool> in_ref(days_.size());
  std::vector<bool> year_seen(ref.count(), false);
  std::vector<int> held_years;  // the season-years the predictors hold, for the message below
  for (size_t i = 0; i < days_.size(); ++i) {
    const int y = rule.year_of(days_[i]);
    if (held_years.empty() || held_years.back() != y) held_years.push_back(y);
    in_ref[i] = ref.contains(y);
    if (in_ref[i]) year_seen[y - ref.first] = true;
  }
  // The missing years as runs (1983..2002, not twenty numbers), and the years the predictors do
  // hold, also as runs (a gap inside them shows), so that the message says what to put in
  // reference_years.
  const auto runs_of = [](const std::vector<int>& years) {  // ascending, distinct
    std::string out;
    for (size_t i = 0; i < years.size(); ++i) {
      size_t j = i;
      while (j + 1 < years.size() && years[j + 1] == years[j] + 1) ++j;
      out += (out.empty() ? "" : ", ") + std::to_string(years[i]) + (j > i ? ".." + std::to_string(years[j]) : "");
      i = j;
    }
    return out;
  };
  std::vector<int> missing_years;
  for (int y = ref.first; y <= ref.last; ++y)
    if (!year_seen[y - ref.first]) missing_years.push_back(y);
  std::sort(held_years.begin(), held_years.end());
  held_years.erase(std::unique(held_years.begin(), held_years.end()), held_years.end());
  if (!missing_years.empty()) {
    const std::string held = held_years.empty() ? "no day"
                                                : "days of " + runs_of(held_years) +
                                                      (rule.season_years() ? " as season-years" : "");
    // No reference year at all: most likely a scenario, whose climatology comes from its model's
    // historical run; some of them: reference years reaching past the run, or across a gap in it.
    const bool reference = opt.role != NewPredictorOptions{}.role;
    const bool none = std::find(year_seen.begin(), year_seen.end(), true) == year_seen.end();
    throw InputError(fetch_dir + ": predict.reference_years [" + std::to_string(ref.first) + ", " + std::to_string(ref.last) +
                     "] for predict.standardize: own, but " + opt.role + " hold no day of " + runs_of(missing_years) +
                     " (they hold " + held +
                     (!none ? "; set predict.reference_years to years they hold)"
                      : reference ? ")"
                                  : "; a scenario takes its climatology from its model's historical run: "
                                    "predict.reference_predictors)"));
  }
  const bool per_field = meta.standardize == "field";
  constexpr size_t kBlock = 128;
  std::vector<float> block, picked;
  for (size_t c = 0; c < channels_.size(); ++c) {
    RunningStats stats(HW);
    for (size_t a = 0; a < days_.size(); a += kBlock) {
      const size_t n = std::min(kBlock, days_.size() - a);
      read_raw(c, a, n, block);
      picked.clear();
      for (size_t t = 0; t < n; ++t)
        if (in_ref[a + t]) picked.insert(picked.end(), block.begin() + t * HW, block.begin() + (t + 1) * HW);
      if (!picked.empty()) stats.add(picked.data(), picked.size() / HW);
    }
    channels_[c].stats = stats.finish(per_field, fetch_dir + ": predictor " + meta.channels[c] + " over predict.reference_years");
  }
  description_ = "own: each predictor standardized with its own mean and standard deviation (" + meta.standardize +
                 ") over " + reference_years_text(ref) + " of these predictors";
}

NewPredictors::~NewPredictors() = default;

SplitYears NewPredictors::season_rule() const {
  SplitYears rule;
  rule.season = season_;
  rule.calendar = parse_calendar(calendar_, "new predictors");
  return rule;
}

std::string NewPredictors::reference_years_text(const YearRange& years) const {
  const SplitYears rule = season_rule();
  const std::string text = std::to_string(years.first) + "-" + std::to_string(years.last);
  return rule.season_years() ? text + " (season-years: " + rule.season_year_example(years.first) + ")" : text;
}

void NewPredictors::read_raw(size_t c, size_t first, size_t n, std::vector<float>& out) const {
  const Channel& ch = channels_[c];
  const std::vector<size_t> idx(ch.index.begin() + first, ch.index.begin() + first + n);
  const size_t fs = ch.file->grid().size();
  std::vector<float> src(n * fs);
  ch.file->read(idx, src.data());
  fill_missing(*ch.file, idx, src, static_cast<FillPolicy>(fill_), "predict.fill");
  if (ch.scale != 1 || ch.offset != 0)
    for (float& v : src) v = static_cast<float>(v * ch.scale + ch.offset);  // NaN stays NaN
  apply_weights(ch.regrid.weights, src, n, out, ch.regrid.renormalize);
}

DataTerms NewPredictors::terms() const {
  DataTerms t;
  for (size_t c = 0; c < channels_.size(); ++c) t.add(meta_.channels[c], *channels_[c].file);
  return t;
}

void NewPredictors::read(size_t first, size_t n, float* x) const {
  const size_t C = channels_.size(), HW = meta_.predictor_lon.size() * meta_.predictor_lat.size();
  std::vector<float> out;
  z_sum_.resize(C), z_count_.resize(C), filled_.resize(C), changes_.resize(C);
  first_z_.resize(C * HW, NAN);
  box_sum_.resize(C * HW), box_count_.resize(C * HW);
  // Days read before (the device check reads the first batch, then the pass reads every day from
  // the first) enter the departure and outlier statistics once.
  const size_t counted_until = days_read_;
  days_read_ = std::max(days_read_, first + n);
  for (size_t c = 0; c < C; ++c) {
    read_raw(c, first, n, out);
    for (size_t t = 0; t < n; ++t) {
      if (first + t < counted_until) continue;
      for (size_t k = 0; k < HW; ++k)
        if (std::isfinite(out[t * HW + k])) box_sum_[c * HW + k] += out[t * HW + k], ++box_count_[c * HW + k];
    }
    apply_standardization(channels_[c].stats, out);
    for (size_t t = 0; t < n; ++t)
      for (size_t k = 0; k < HW; ++k) {
        const float v = out[t * HW + k];
        // Left missing only by the climatology policy: the training mean, 0 once standardized.
        x[(t * C + c) * HW + k] = std::isfinite(v) ? v : 0.0f;
        if (std::fabs(v) > kImpossibleStandardized) impossible(c, first + t, k, v);
        if (std::isfinite(v)) {
          float& first_z = first_z_[c * HW + k];
          if (std::isnan(first_z)) first_z = v;
          else if (v != first_z) changes_[c] = 1;
        }
        if (first + t < counted_until) continue;
        // What the network reads as the training mean: a box the source left missing after
        // regridding (a land-only field's sea counts only where no source cell reaches it).
        if (!std::isfinite(v)) ++filled_[c];
        if (std::isfinite(v)) z_sum_[c] += v, ++z_count_[c];
        if (std::fabs(v) > kFarOutside) {
          ++outliers_.count;
          if (std::fabs(v) > std::fabs(outliers_.worst)) outliers_ = {outliers_.count, v, c, k, days_[first + t]};
        }
      }
  }
}

void NewPredictors::impossible(size_t c, size_t day, size_t point, float z) const {
  const Channel& ch = channels_[c];
  const size_t W = meta_.predictor_lon.size();
  throw InputError(fmt::format(
      "{}: {} on {} at lat {:g}, lon {:g} is {:g} standard deviations from the mean it is standardized with "
      "(more than {:g}, which no weather is): the file holds another variable, level or unit than the store's {}; "
      "nothing written",
      ch.file->path(), ch.file->variable(), to_string(date_from_days(days_[day], parse_calendar(calendar_, "new predictors"))),
      meta_.predictor_lat[point / W], meta_.predictor_lon[point % W], z, kImpossibleStandardized, meta_.channels.at(c)));
}

NewPredictors::PatternMatch NewPredictors::pattern_match(size_t c) const {
  PatternMatch m;
  m.days = days_read_;
  const size_t HW = meta_.predictor_lon.size() * meta_.predictor_lat.size();
  if (c >= channels_.size() || meta_.mean.size() != channels_.size() * HW || meta_.sd.size() != meta_.mean.size() ||
      box_sum_.size() != meta_.mean.size())
    return m;
  const float* mean = meta_.mean.data() + c * HW;
  const float* sd = meta_.sd.data() + c * HW;
  const auto average = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  };
  // Strength: how far the training climatology's map stands above its own days' weather.
  const std::vector<double> map(mean, mean + HW);
  const double map_mean = average(map);
  double spread = 0;
  for (double x : map) spread += (x - map_mean) * (x - map_mean);
  const double sd_bar = average(std::vector<double>(sd, sd + HW));
  m.strength = sd_bar > 0 ? std::sqrt(spread / double(HW)) / sd_bar : 0.0;
  // Pearson over the boxes read (a box left to the training mean every day has no mean of its own).
  std::vector<double> mine, trained;
  for (size_t k = 0; k < HW; ++k)
    if (box_count_[c * HW + k]) mine.push_back(box_sum_[c * HW + k] / box_count_[c * HW + k]), trained.push_back(map[k]);
  m.boxes = mine.size();
  if (m.boxes < 3) return m;
  const double a = average(mine), b = average(trained);
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < m.boxes; ++i)
    ab += (mine[i] - a) * (trained[i] - b), aa += (mine[i] - a) * (mine[i] - a), bb += (trained[i] - b) * (trained[i] - b);
  if (aa > 0 && bb > 0) m.correlation = ab / std::sqrt(aa * bb);
  return m;
}

void NewPredictors::check_departures() const {
  warn_departures();
  refuse_impossible();
}

void NewPredictors::warn_departures() const {
  for (size_t c = 0; c < filled_.size(); ++c)
    if (filled_[c])
      spdlog::info("predictor {}: {} of its values on the predictor grid in the {} days read were missing and take "
                   "the training mean ({:.2g} %, predict.fill: climatology)",
                   meta_.channels.at(c), filled_[c], days_read_,
                   100.0 * double(filled_[c]) / double(days_read_ * meta_.predictor_lon.size() * meta_.predictor_lat.size()));
  for (size_t c = 0; c < z_sum_.size(); ++c) {
    if (!z_count_[c]) continue;
    const double mean = z_sum_[c] / static_cast<double>(z_count_[c]);
    if (std::fabs(mean) > kFarMean)
      spdlog::warn("predictor {} averages {:+.1f} standard deviations from the mean it is standardized with over "
                   "the {} days read (more than {:g}): check that its file holds that variable at that level, "
                   "in the units it says, and that its months are the training's; a climate this far from the "
                   "training period's is outside what the model learned",
                   meta_.channels.at(c), mean, days_read_, kFarMean);
  }
  for (size_t c = 0; c < channels_.size(); ++c) {
    const PatternMatch m = pattern_match(c);
    if (m.judged() && m.correlation >= kPatternRefused && m.correlation < kPatternWarned)
      spdlog::warn("predictor {}'s mean map over the {} days read correlates only {:+.2f} with the training mean's "
                   "over {} boxes (below {:g}, where the training map stands {:.1f} daily sd strong): check that its "
                   "file holds that variable at that level, not flipped north-south or east-west",
                   meta_.channels.at(c), days_read_, m.correlation, m.boxes, kPatternWarned, m.strength);
  }
  if (!outliers_.count) return;
  const size_t W = meta_.predictor_lon.size();
  spdlog::warn("{} standardized predictor values sit more than {:g} standard deviations from the training mean; the "
               "worst is {:g} for {} on {} at lat {:g}, lon {:g} (a climate far from the training period's, or a "
               "wrong unit the plausible ranges let through)",
               outliers_.count, kFarOutside, outliers_.worst, meta_.channels.at(outliers_.channel),
               to_string(date_from_days(outliers_.day, parse_calendar(calendar_, "new predictors"))),
               meta_.predictor_lat[outliers_.point / W], meta_.predictor_lon[outliers_.point % W]);
}

void NewPredictors::refuse_impossible() const {
  const size_t HW = meta_.predictor_lon.size() * meta_.predictor_lat.size();
  for (size_t c = 0; c < z_sum_.size(); ++c) {
    const Channel& ch = channels_[c];
    const double mean = z_count_[c] ? z_sum_[c] / static_cast<double>(z_count_[c]) : 0.0;
    // The field's own mean against the mean it is standardized with (over the boxes).
    double standard_mean = 0;
    for (float m : ch.stats.mean) standard_mean += m;
    standard_mean /= double(std::max<size_t>(1, ch.stats.mean.size()));
    // The mean of every finite value read, from the per-box sums.
    double raw_sum = 0;
    size_t raw_count = 0;
    for (size_t k = c * HW; k < (c + 1) * HW && k < box_sum_.size(); ++k) raw_sum += box_sum_[k], raw_count += box_count_[k];
    const double raw_mean = raw_count ? raw_sum / double(raw_count) : standard_mean;
    const double shift = std::fabs(raw_mean - standard_mean) / std::max(std::fabs(standard_mean), 1e-30);
    if (std::fabs(mean) > kImpossibleMean && shift > kImpossibleShift)
      throw InputError(fmt::format(
          "{}: predictor {} averages {:+.1f} standard deviations from the mean it is standardized with over the {} "
          "days read (more than {:g}), its mean {:g} against {:g} ({:.0f} % off, more than {:.0f}): no climate is so "
          "far; the file holds another unit, variable or level than the store's {} (a variable without a plausible "
          "range lets a wrong unit through); nothing written",
          ch.file->where(), meta_.channels.at(c), mean, days_read_, kImpossibleMean, raw_mean, standard_mean, 100 * shift,
          100 * kImpossibleShift, meta_.channels.at(c)));
    if (days_read_ >= 2 && !changes_[c])
      throw InputError(fmt::format("{}: predictor {} is the same on each of the {} days read at every grid box: a "
                                   "field that never changes carries no weather (a constant or a fill value written "
                                   "in its place?); nothing written",
                                   ch.file->where(), meta_.channels.at(c), days_read_));
    const double share = days_read_ ? double(filled_[c]) / double(days_read_ * HW) : 0.0;
    if (share > kMostFilled)
      throw InputError(fmt::format(
          "{}: {:.1f} % of predictor {}'s values on the predictor grid in the {} days read are missing and take the "
          "training mean (predict.fill: climatology): "
          "more than {:.0f} %, the prediction would be of the fill; fetch the field again or from another source; "
          "nothing written",
          ch.file->where(), 100 * share, meta_.channels.at(c), days_read_, 100 * kMostFilled));
    // Last of the channel's refusals: an impossible mean, a constant or a mostly filled field is
    // said better by its own.
    const PatternMatch m = pattern_match(c);
    if (m.judged() && m.correlation < kPatternRefused)
      throw InputError(fmt::format(
          "{}: predictor {}'s mean map over the {} days read correlates {:+.2f} with the training mean's over {} "
          "boxes (below {:g}), where the training map varies across the domain by {:.1f} daily standard deviations, "
          "more than a model's biases move it: a field flipped north-south or east-west, or another variable under "
          "the store's {}; nothing written",
          ch.file->where(), meta_.channels.at(c), days_read_, m.correlation, m.boxes, kPatternRefused, m.strength,
          meta_.channels.at(c)));
  }
}

}  // namespace ds
