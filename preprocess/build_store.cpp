#include "preprocess/build_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/subset.h"
#include "io/training_store.h"
#include "preprocess/grid.h"
#include "preprocess/regrid.h"
#include "preprocess/standardize.h"
#include "preprocess/target.h"

namespace ds {

namespace {

// Keeps only the time steps whose day is in `keep` (sorted), in order.
std::vector<float> select_days(const Field& f, const std::vector<int64_t>& keep) {
  const size_t fs = f.field_size();
  std::vector<float> out;
  out.reserve(keep.size() * fs);
  size_t k = 0;
  for (size_t t = 0; t < f.days.size() && k < keep.size(); ++t) {
    if (f.days[t] != keep[k]) continue;
    out.insert(out.end(), f.values.begin() + t * fs, f.values.begin() + (t + 1) * fs);
    ++k;
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

StoreSummary build_store(const Config& cfg, const std::string& fetch_dir, const std::string& store_path) {
  const FetchManifest manifest = FetchManifest::read(fetch_dir + "/manifest.json");
  if (manifest.predictors.empty()) throw InputError(fetch_dir + "/manifest.json: no predictors");
  const Grid xgrid = Grid::from_spec(cfg.preprocess.predictor_grid);
  const Grid ygrid = Grid::from_spec(cfg.preprocess.predictand_grid);

  // Both models end in two x2 upsamplings and 'valid' 4x4 heads, so the output grid must be
  // exactly (4H-3) x (4W-3) of the input grid.
  const int want_h = 4 * xgrid.nlat() - 3, want_w = 4 * xgrid.nlon() - 3;
  if (ygrid.nlat() != want_h || ygrid.nlon() != want_w)
    throw UsageError(cfg.file + ": preprocess.predictand_grid is " + std::to_string(ygrid.nlat()) + " x " +
                     std::to_string(ygrid.nlon()) + " (lat x lon) but the model maps the predictor grid " +
                     std::to_string(xgrid.nlat()) + " x " + std::to_string(xgrid.nlon()) + " to " +
                     std::to_string(want_h) + " x " + std::to_string(want_w));

  // Read every field; the common dates are those present in all of them.
  std::vector<Field> fields;
  for (const auto& p : manifest.predictors) {
    spdlog::info("reading {} from {}", p.name, manifest.path_of(p));
    fields.push_back(read_field(manifest.path_of(p), p.variable));
  }
  spdlog::info("reading {} from {}", manifest.predictand.name, manifest.path_of(manifest.predictand));
  Field pr = read_field(manifest.path_of(manifest.predictand), manifest.predictand.variable);

  std::set<int64_t> all_days(pr.days.begin(), pr.days.end());
  std::vector<int64_t> common(pr.days.begin(), pr.days.end());
  for (const auto& f : fields) {
    all_days.insert(f.days.begin(), f.days.end());
    std::vector<int64_t> next;
    std::set_intersection(common.begin(), common.end(), f.days.begin(), f.days.end(), std::back_inserter(next));
    common.swap(next);
  }
  // Keep only dates in a split: the config decides which years are used at all.
  const auto& pp = cfg.preprocess;
  auto split_of = [&](int64_t day) -> int {
    const int y = civil_from_days(day).year;
    if (pp.train_years.contains(y)) return 0;
    if (pp.validation_years.contains(y)) return 1;
    if (pp.test_years.contains(y)) return 2;
    return -1;
  };
  common.erase(std::remove_if(common.begin(), common.end(), [&](int64_t d) { return split_of(d) < 0; }), common.end());
  StoreSummary summary;
  summary.dropped_dates = all_days.size() - common.size();
  if (summary.dropped_dates > 0)
    spdlog::info("{} dates not common to all variables or outside the split years are dropped", summary.dropped_dates);
  const size_t N = common.size();
  if (N == 0) throw InputError(fetch_dir + ": no dates common to all variables within the split years");
  std::vector<bool> is_train(N);
  for (size_t t = 0; t < N; ++t) is_train[t] = split_of(common[t]) == 0;

  // Predictors: check, regrid, standardize, and interleave into (N, C, H, W).
  const size_t C = fields.size(), HW = xgrid.size();
  std::vector<float> x(N * C * HW);
  std::vector<float> mean(C * HW), sd(C * HW);
  for (size_t c = 0; c < C; ++c) {
    const Field& f = fields[c];
    const std::string where = manifest.path_of(manifest.predictors[c]) + ": variable '" + f.variable + "'";
    for (size_t t = 0; t < f.days.size(); ++t)
      for (size_t k = 0; k < f.field_size(); ++k)
        if (!std::isfinite(f.values[t * f.field_size() + k]))
          throw InputError(where + ": missing value on " + to_string(civil_from_days(f.days[t])));
    const Grid src = Grid::from_coords(f.lon, f.lat, where);
    const auto w = bilinear_weights(src, xgrid, where);
    auto regridded = apply_weights(w, select_days(f, common), N);
    const Standardization s = fit_standardization(regridded, HW, is_train);
    apply_standardization(s, regridded);
    std::copy(s.mean.begin(), s.mean.end(), mean.begin() + c * HW);
    std::copy(s.sd.begin(), s.sd.end(), sd.begin() + c * HW);
    for (size_t t = 0; t < N; ++t)
      std::copy(regridded.begin() + t * HW, regridded.begin() + (t + 1) * HW, x.begin() + (t * C + c) * HW);
    fields[c].values = {};  // free as we go: memory peaks at one field plus x
  }

  // Predictand: mm/day on the output grid, land mask, wet-day target.
  const std::string pr_where = manifest.path_of(manifest.predictand) + ": variable '" + pr.variable + "'";
  to_mm_per_day(pr.values, pr.units, pr_where);
  const auto pr_w = bilinear_weights(Grid::from_coords(pr.lon, pr.lat, pr_where), ygrid, pr_where);
  const std::vector<float> prv = apply_weights(pr_w, select_days(pr, common), N);
  const size_t HWy = ygrid.size();
  const auto mask = land_mask(prv, HWy);
  const auto y = wet_day_target(prv, mask, pp.wet_threshold);
  size_t land = 0, wet = 0, train_land_days = 0;
  for (auto m : mask) land += m;
  if (land == 0) throw InputError(pr_where + ": no land point (every grid box has missing values) in the output grid");
  for (size_t t = 0; t < N; ++t)
    if (is_train[t])
      for (size_t k = 0; k < HWy; ++k)
        if (mask[k]) ++train_land_days, wet += y[t * HWy + k] > 0;
  summary.land_share = static_cast<double>(land) / HWy;
  summary.wet_day_share = train_land_days ? static_cast<double>(wet) / train_land_days : 0;

  StoreMeta meta;
  for (const auto& p : manifest.predictors) meta.channels.push_back(p.name);
  meta.predictor_lon = xgrid.lon;
  meta.predictor_lat = xgrid.lat;
  meta.predictand_lon = ygrid.lon;
  meta.predictand_lat = ygrid.lat;
  meta.mask = mask;
  meta.mean = std::move(mean);
  meta.sd = std::move(sd);
  meta.wet_threshold = pp.wet_threshold;
  meta.config_text = read_text(cfg.file);
  for (const auto& p : manifest.predictors) meta.sources += p.source + " ";
  meta.sources += manifest.predictand.source;

  AtomicFile out(store_path);
  StoreWriter writer(out.temp_path(), meta);
  for (int s = 0; s < 3; ++s) {
    std::vector<size_t> idx;
    for (size_t t = 0; t < N; ++t)
      if (split_of(common[t]) == s) idx.push_back(t);
    std::vector<float> xs, ys, ps;
    std::vector<int64_t> ts;
    for (size_t t : idx) {
      xs.insert(xs.end(), x.begin() + t * C * HW, x.begin() + (t + 1) * C * HW);
      ys.insert(ys.end(), y.begin() + t * HWy, y.begin() + (t + 1) * HWy);
      ps.insert(ps.end(), prv.begin() + t * HWy, prv.begin() + (t + 1) * HWy);
      ts.push_back(common[t]);
    }
    writer.write_split(kSplits[s], xs, ys, ps, ts);
    (s == 0 ? summary.train : s == 1 ? summary.validation : summary.test) = idx.size();
  }
  writer.close();
  out.commit();
  return summary;
}

}  // namespace ds
