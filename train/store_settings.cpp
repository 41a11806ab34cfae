#include "train/store_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace ds {
namespace {

// "-10..5 (16 values)": a grid axis as the store holds it and as a GridSpec gives it.
std::string axis_text(double first, double last, size_t n) {
  return fmt::format("{:g}..{:g} ({} values)", std::min(first, last), std::max(first, last), n);
}

std::string axis_text(const std::vector<double>& v) {
  if (v.empty()) return "none";
  return axis_text(v.front(), v.back(), v.size());
}

// The store's axis equals the spec's when it has as many centres, spanning the same range (the
// store may hold latitudes in either order); 1e-6 degrees: the centres are computed from the
// spec's first, last and step, and written as doubles.
bool same_axis(const std::vector<double>& v, double first, double last, int n) {
  if (v.empty() || static_cast<int>(v.size()) != n) return false;
  const double lo = std::min(v.front(), v.back()), hi = std::max(v.front(), v.back());
  return std::abs(lo - std::min(first, last)) < 1e-6 && std::abs(hi - std::max(first, last)) < 1e-6;
}

class Comparison {
 public:
  Comparison(const Config& cfg, const StoreMeta& meta)
      : cfg_(cfg), meta_(meta), whole_(cfg.gives("preprocess")) {}

  // Whether `key` is compared: given, or a default of a config that describes the store.
  bool compared(const std::string& key) const { return whole_ || cfg_.gives(key); }

  // Where the config's value of `key` came from.
  std::string source(const std::string& key) const {
    return cfg_.gives(key) ? "from " + cfg_.origin(key) : "the default: " + cfg_.file + " does not set it";
  }

  void add(std::string text, bool needs_fetch = false) { out_.push_back({std::move(text), needs_fetch}); }

  void split_years() {
    const std::string built = meta_.split_years, now = cfg_.preprocess.split_years_text();
    if (built.empty() || now.empty() || built == now) return;
    // The --set of one of the three years if any, else the file.
    std::string from = cfg_.origin("preprocess.train_years");
    for (const char* k : {"preprocess.train_years", "preprocess.validation_years", "preprocess.test_years"})
      if (cfg_.origin(k) != cfg_.file) from = cfg_.origin(k);
    add(fmt::format("the split years {} (the config now gives {}, from {})", built, now, from));
  }

  // The predictors as a set: preprocess builds the channels in the fetch manifest's order, and
  // the store's order is the model's whatever the config lists.
  void fields() {
    if (!cfg_.gives("fetch.predictors.fields") || meta_.channels.empty()) return;
    std::vector<std::string> now;
    for (const auto& f : cfg_.fetch.predictors) now.push_back(f.name());
    if (std::set<std::string>(now.begin(), now.end()) == std::set<std::string>(meta_.channels.begin(), meta_.channels.end()))
      return;
    add(fmt::format("the predictors {} (the config's fetch.predictors.fields now gives {}, from {})",
                    fmt::join(meta_.channels, ","), fmt::join(now, ","), cfg_.origin("fetch.predictors.fields")),
        true);
  }

  // A number the store records against the config's (`built` NaN: an older store without it).
  void number(const std::string& key, double built, double now, const char* unit = "") {
    if (!std::isfinite(built) || !compared(key) || std::abs(built - now) <= 1e-9) return;
    add(fmt::format("{} {:g}{} (the config now gives {:g}, {})", key, built, unit, now, source(key)));
  }

  void text(const std::string& key, const std::string& built, const std::string& now) {
    if (!compared(key) || built.empty() || built == now) return;
    add(fmt::format("{} {} (the config now gives {}, {})", key, built, now, source(key)));
  }

  void grid(const std::string& key, const GridSpec& g, const std::vector<double>& lon, const std::vector<double>& lat) {
    if (lon.empty() || lat.empty()) return;
    if (same_axis(lon, g.lon_first, g.lon_last, g.nlon()) && same_axis(lat, g.lat_first, g.lat_last, g.nlat())) return;
    add(fmt::format("{}: lon {}, lat {} (the config now gives lon {}, lat {}, from {})", key, axis_text(lon),
                    axis_text(lat), axis_text(g.lon_first, g.lon_last, g.nlon()),
                    axis_text(g.lat_first, g.lat_last, g.nlat()), cfg_.origin(key)));
  }

  void grids() {
    if (cfg_.gives("preprocess.predictor_grid"))
      grid("preprocess.predictor_grid", cfg_.preprocess.predictor_grid, meta_.predictor_lon, meta_.predictor_lat);
    if (cfg_.preprocess.has_predictand_grid) {
      grid("preprocess.predictand_grid", cfg_.preprocess.predictand_grid, meta_.obs_lon, meta_.obs_lat);
    } else if (const std::string built = regrid_of(meta_.predictand); whole_ && !built.empty() && built != "none") {
      add(fmt::format("preprocess.predictand_grid: lon {}, lat {} (the config now gives none, the observations' "
                      "grid as fetched: {} does not set it)",
                      axis_text(meta_.obs_lon), axis_text(meta_.obs_lat), cfg_.file));
    }
  }

  // preprocess.regrid as the store records it ("z@500:bilinear,...,pr:none") against the
  // methods the config's preprocess.regrid gives the same fields now (the predictand's only when
  // the config regrids it: grids() says the rest).
  void regrid() {
    if (!compared("preprocess.regrid") || meta_.regrid.empty()) return;
    std::vector<std::string> differ;
    for (const auto& [name, built] : meta_.regrid_methods()) {
      if (name == meta_.predictand && (built == "none" || !cfg_.preprocess.has_predictand_grid)) continue;
      const std::string key = cfg_.preprocess.regrid_key(name, name.substr(0, name.find('@')));
      const std::string now = key.empty() ? "bilinear" : cfg_.preprocess.regrid.at(key);
      if (now == built) continue;
      const std::string from = key.empty() ? source("preprocess.regrid") : "from " + cfg_.origin("preprocess.regrid." + key);
      differ.push_back(fmt::format("{} {} (now {}, {})", name, built, now, from));
    }
    if (!differ.empty()) add(fmt::format("preprocess.regrid: {}", fmt::join(differ, "; ")));
  }

  std::vector<StoreSettingChange> result() && { return std::move(out_); }

 private:
  // The store's regrid method of one field ("" when it records none).
  std::string regrid_of(const std::string& name) const {
    for (const auto& [field, method] : meta_.regrid_methods())
      if (field == name) return method;
    return "";
  }

  const Config& cfg_;
  const StoreMeta& meta_;
  const bool whole_;
  std::vector<StoreSettingChange> out_;
};

}  // namespace

std::vector<StoreSettingChange> store_setting_changes(const Config& cfg, const StoreReader& store) {
  const StoreMeta& meta = store.meta();
  Comparison c(cfg, meta);
  c.split_years();
  c.fields();
  if (meta.is_precipitation())
    c.number("preprocess.wet_threshold", meta.wet_threshold, cfg.preprocess.wet_threshold, " mm/day");
  c.text("preprocess.standardize", meta.standardize, cfg.preprocess.standardize);
  c.text("preprocess.fill", meta.fill, cfg.preprocess.fill);
  c.number("preprocess.min_valid_fraction", meta.min_valid_fraction, cfg.preprocess.min_valid_fraction);
  c.grids();
  c.regrid();
  return std::move(c).result();
}

std::string store_settings_change(const Config& cfg, const StoreReader& store) {
  const std::vector<StoreSettingChange> changes = store_setting_changes(cfg, store);
  if (changes.empty()) return "";
  std::vector<std::string> texts;
  bool fetch = false;
  for (const auto& c : changes) texts.push_back(c.text), fetch = fetch || c.needs_fetch;
  return fmt::format("{} was built with {}: this stage uses the store's; for the config's, run {} again and the "
                     "stages after it",
                     store.path(), fmt::join(texts, "; "),
                     fetch ? "`downscale fetch` (for the other predictors), then `downscale preprocess`,"
                           : "`downscale preprocess`");
}

}  // namespace ds
