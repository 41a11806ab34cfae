#include "train/store_settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <sstream>

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

// The store's grid against the config's `key`, when the config gives it.
void compare_grid(const Config& cfg, const std::string& key, const GridSpec& g, const std::vector<double>& lon,
                  const std::vector<double>& lat, std::vector<std::string>& out) {
  if (!cfg.gives(key) || lon.empty() || lat.empty()) return;
  if (same_axis(lon, g.lon_first, g.lon_last, g.nlon()) && same_axis(lat, g.lat_first, g.lat_last, g.nlat())) return;
  out.push_back(fmt::format("{}: lon {}, lat {} (the config now gives lon {}, lat {}, from {})", key, axis_text(lon),
                            axis_text(lat), axis_text(g.lon_first, g.lon_last, g.nlon()),
                            axis_text(g.lat_first, g.lat_last, g.nlat()), cfg.origin(key)));
}

void compare_text(const Config& cfg, const std::string& key, const std::string& built, const std::string& now,
                  std::vector<std::string>& out) {
  if (!cfg.gives(key) || built.empty() || built == now) return;
  out.push_back(fmt::format("{} {} (the config now gives {}, from {})", key, built, now, cfg.origin(key)));
}

// preprocess.regrid as the store records it ("z@500:bilinear,...,pr:none") against the methods
// the config's preprocess.regrid gives the same fields now.
void compare_regrid(const Config& cfg, const StoreMeta& meta, std::vector<std::string>& out) {
  if (!cfg.gives("preprocess.regrid") || meta.regrid.empty()) return;
  std::vector<std::string> differ;
  std::stringstream ss(meta.regrid);
  for (std::string entry; std::getline(ss, entry, ',');) {
    const auto colon = entry.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = entry.substr(0, colon), built = entry.substr(colon + 1);
    if (built == "none") continue;  // the predictand as fetched: preprocess.predictand_grid says that
    const std::string key = cfg.preprocess.regrid_key(name, name.substr(0, name.find('@')));
    const std::string now = key.empty() ? "bilinear" : cfg.preprocess.regrid.at(key);
    if (now != built) differ.push_back(fmt::format("{} {} (now {})", name, built, now));
  }
  if (!differ.empty())
    out.push_back(fmt::format("preprocess.regrid: {} (from {})", fmt::join(differ, ", "), cfg.origin("preprocess.regrid")));
}

}  // namespace

std::vector<std::string> store_setting_changes(const Config& cfg, const StoreReader& store) {
  const StoreMeta& meta = store.meta();
  std::vector<std::string> out;
  // The split years as a whole: a config gives all three or means the store's.
  const std::string years_built = meta.split_years, years_now = cfg.preprocess.split_years_text();
  if (!years_built.empty() && !years_now.empty() && years_built != years_now)
    out.push_back(fmt::format("the split years {} (the config now gives {})", years_built, years_now));
  if (cfg.gives("fetch.predictors.fields")) {
    std::vector<std::string> fields;
    for (const auto& f : cfg.fetch.predictors) fields.push_back(f.name());
    if (fields != meta.channels)
      out.push_back(fmt::format("the predictors {} (the config's fetch.predictors.fields now gives {}, from {})",
                                fmt::join(meta.channels, ","), fmt::join(fields, ","),
                                cfg.origin("fetch.predictors.fields")));
  }
  if (meta.is_precipitation() && cfg.gives("preprocess.wet_threshold") &&
      std::abs(meta.wet_threshold - cfg.preprocess.wet_threshold) > 1e-9)
    out.push_back(fmt::format("preprocess.wet_threshold {:g} mm/day (the config now gives {:g}, from {})",
                              meta.wet_threshold, cfg.preprocess.wet_threshold, cfg.origin("preprocess.wet_threshold")));
  compare_text(cfg, "preprocess.standardize", meta.standardize, cfg.preprocess.standardize, out);
  compare_text(cfg, "preprocess.fill", meta.fill, cfg.preprocess.fill, out);
  compare_grid(cfg, "preprocess.predictor_grid", cfg.preprocess.predictor_grid, meta.predictor_lon, meta.predictor_lat, out);
  compare_grid(cfg, "preprocess.predictand_grid", cfg.preprocess.predictand_grid, meta.obs_lon, meta.obs_lat, out);
  compare_regrid(cfg, meta, out);
  return out;
}

std::string store_settings_change(const Config& cfg, const StoreReader& store) {
  const std::vector<std::string> changes = store_setting_changes(cfg, store);
  if (changes.empty()) return "";
  return fmt::format("{} was built with {}: this stage uses the store's; for the config's, run `downscale preprocess` "
                     "again and the stages after it",
                     store.path(), fmt::join(changes, "; "));
}

}  // namespace ds
