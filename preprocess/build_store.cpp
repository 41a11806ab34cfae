#include "preprocess/build_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/log.h"
#include "io/training_store.h"
#include "preprocess/fetched_field.h"
#include "preprocess/fill.h"
#include "preprocess/grid.h"
#include "preprocess/regrid.h"
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

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The method for a field: preprocess.regrid.<name>, else .<var>, else .default, else bilinear.
class RegridChoice {
 public:
  explicit RegridChoice(const Config& cfg) : cfg_(cfg) {}
  RegridMethod of(const std::string& name, const std::string& var) {
    for (const std::string& key : {name, var, std::string("default")}) {
      auto it = cfg_.preprocess.regrid.find(key);
      if (it == cfg_.preprocess.regrid.end()) continue;
      used_.insert(key);
      return parse_regrid_method(it->second, cfg_.file + ": preprocess.regrid." + key);
    }
    return RegridMethod::bilinear;
  }
  // A key naming no field is a typo the user should hear about.
  void check_all_used(const std::string& fields) const {
    for (const auto& [key, method] : cfg_.preprocess.regrid)
      if (key != "default" && !used_.count(key))
        throw UsageError(cfg_.file + ": key 'preprocess.regrid." + key + "' names no field in the fetch manifest (" + fields + ")");
  }

 private:
  const Config& cfg_;
  std::set<std::string> used_;
};

// Blocks of at most `block` consecutive entries of [0, n).
template <class F>
void for_blocks(size_t n, size_t block, F f) {
  for (size_t a = 0; a < n; a += block) f(a, std::min(n, a + block));
}

std::vector<size_t> slice(const std::vector<size_t>& v, size_t a, size_t b) { return {v.begin() + a, v.begin() + b}; }

}  // namespace

StoreSummary build_store(const Config& cfg, const std::string& fetch_dir, const std::string& store_path) {
  const auto& pp = cfg.preprocess;
  const FetchManifest manifest = FetchManifest::read(fetch_dir + "/manifest.json");
  if (manifest.predictors.empty()) throw InputError(fetch_dir + "/manifest.json: no predictors");
  const Grid xgrid = Grid::from_spec(pp.predictor_grid);
  const Grid ygrid = Grid::from_spec(pp.predictand_grid);

  // Both models end in two x2 upsamplings and 'valid' 4x4 heads, so the output grid must be
  // exactly (4H-3) x (4W-3) of the input grid.
  const int want_h = 4 * xgrid.nlat() - 3, want_w = 4 * xgrid.nlon() - 3;
  if (ygrid.nlat() != want_h || ygrid.nlon() != want_w)
    throw UsageError(cfg.file + ": preprocess.predictand_grid is " + std::to_string(ygrid.nlat()) + " x " +
                     std::to_string(ygrid.nlon()) + " (lat x lon) but the model maps the predictor grid " +
                     std::to_string(xgrid.nlat()) + " x " + std::to_string(xgrid.nlon()) + " to " +
                     std::to_string(want_h) + " x " + std::to_string(want_w));
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
    units.push_back({ch.name, ch.var, ch.file->units(), ch.file->where()});
    field_names += (field_names.empty() ? "" : ", ") + ch.name;
    channels.push_back(std::move(ch));
  }
  check_predictor_units(units, pp.units);
  FetchedField pr_file(manifest.path_of(manifest.predictand), manifest.predictand.variable);
  {
    std::vector<float> none;
    to_mm_per_day(none, pr_file.units(), pr_file.where());  // checks the units before any work
  }
  field_names += ", " + manifest.predictand.name;
  for (auto& ch : channels) {
    const RegridMethod m = choice.of(ch.name, ch.var);
    ch.regrid = std::make_unique<Regridder>(m, ch.file->grid(), xgrid, ch.file->where());
    regrid_attr += ch.name + ":" + to_string(m) + ",";
  }
  const RegridMethod pr_method = choice.of(manifest.predictand.name, manifest.predictand.variable);
  const Regridder pr_regrid(pr_method, pr_file.grid(), ygrid, pr_file.where());
  regrid_attr += manifest.predictand.name + ":" + to_string(pr_method);
  choice.check_all_used(field_names);

  // Samples: the dates in every file and in a split.
  std::vector<std::string> names;
  std::vector<const std::vector<int64_t>*> days;
  for (const auto& ch : channels) names.push_back(ch.name), days.push_back(&ch.file->days());
  names.push_back(manifest.predictand.name), days.push_back(&pr_file.days());
  const SampleDates dates = plan_sample_dates(pp, names, days);
  for (const auto& line : dates.report()) spdlog::info("{}", line);
  if (dates.total() == 0) throw InputError(fetch_dir + ": no dates common to all variables within the split years");
  std::vector<size_t> pr_index[3];
  for (int s = 0; s < 3; ++s) {
    for (auto& ch : channels) ch.index[s] = indices_of(ch.file->days(), dates.split_days[s]);
    pr_index[s] = indices_of(pr_file.days(), dates.split_days[s]);
  }

  StoreSummary summary;
  summary.not_common = dates.not_common.size();
  summary.outside_splits = dates.outside_splits.size();
  summary.dropped_dates = summary.not_common + summary.outside_splits;
  // Blocks are whole HDF5 chunks, so no chunk is written twice.
  const size_t rows = StoreWriter::kChunkRows;
  const size_t block = std::max<size_t>(rows, (static_cast<size_t>(pp.block_days) + rows - 1) / rows * rows);
  const size_t C = channels.size(), HW = xgrid.size(), HWy = ygrid.size();
  const size_t ntrain = dates.split_days[0].size();
  if (ntrain < 2) throw InputError(fetch_dir + ": standardization needs at least 2 training days, got " + std::to_string(ntrain));

  // Pass 1: training statistics of each predictor; the land mask from every day of precipitation.
  std::vector<float> src, out;
  {
    Progress progress("pass 1: training statistics and land mask", static_cast<int64_t>(C * ntrain + dates.total()));
    for (auto& ch : channels) {
      RunningStats stats(HW);
      for_blocks(ntrain, block, [&](size_t a, size_t b) {
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
    std::vector<uint8_t> mask(HWy, 1);
    for (int s = 0; s < 3; ++s)
      for_blocks(pr_index[s].size(), block, [&](size_t a, size_t b) {
        const auto idx = slice(pr_index[s], a, b);
        src.resize(idx.size() * pr_file.grid().size());
        pr_file.read(idx, src.data());
        pr_regrid.apply(src, idx.size(), out);
        const auto m = land_mask(out, HWy);
        for (size_t k = 0; k < HWy; ++k) mask[k] &= m[k];
        progress.advance(static_cast<int64_t>(idx.size()));
      });
    progress.done();
    size_t land = 0;
    for (auto m : mask) land += m;
    if (land == 0) throw InputError(pr_file.where() + ": no land point (every grid box has missing values) in the output grid");
    summary.land_share = static_cast<double>(land) / HWy;

    StoreMeta meta;
    meta.mask = std::move(mask);
    meta.channels.clear();
    for (const auto& ch : channels) {
      meta.channels.push_back(ch.name);
      meta.mean.insert(meta.mean.end(), ch.stats.mean.begin(), ch.stats.mean.end());
      meta.sd.insert(meta.sd.end(), ch.stats.sd.begin(), ch.stats.sd.end());
    }
    meta.predictor_lon = xgrid.lon;
    meta.predictor_lat = xgrid.lat;
    meta.predictand_lon = ygrid.lon;
    meta.predictand_lat = ygrid.lat;
    meta.wet_threshold = pp.wet_threshold;
    meta.config_text = read_text(cfg.file);
    for (const auto& p : manifest.predictors) meta.sources += p.source + " ";
    meta.sources += manifest.predictand.source;
    meta.standardize = pp.standardize;
    meta.regrid = regrid_attr;
    meta.fill = pp.fill;
    meta.dropped_dates = static_cast<int64_t>(summary.dropped_dates);
    meta.predictand = manifest.predictand.variable;
    meta.predictand_units = "mm/day";  // to_mm_per_day below
    meta.calendar = "standard";
    meta.set_window_to_output_grid();

    // Pass 2: standardized samples, block by block, into the chunked datasets.
    AtomicFile file(store_path);
    StoreWriter writer(file.temp_path(), meta, pp.compression);
    Progress progress2("pass 2: writing samples", static_cast<int64_t>(dates.total()));
    std::vector<float> x, y, prv;
    size_t wet = 0, train_land_days = 0;
    for (int s = 0; s < 3; ++s) {
      const size_t n = dates.split_days[s].size();
      writer.create_split(kSplits[s], n);
      for_blocks(n, block, [&](size_t a, size_t b) {
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
            for (size_t k = 0; k < HW; ++k)
              if (!std::isfinite(dst[k])) dst[k] = 0.0f;
          }
        }
        const auto idx = slice(pr_index[s], a, b);
        src.resize(nb * pr_file.grid().size());
        pr_file.read(idx, src.data());
        to_mm_per_day(src, pr_file.units(), pr_file.where());
        pr_regrid.apply(src, nb, prv);
        y = wet_day_target(prv, meta.mask, pp.wet_threshold);
        for (size_t k = 0; k < prv.size(); ++k)
          if (!meta.mask[k % HWy]) prv[k] = std::numeric_limits<float>::quiet_NaN();
        if (s == 0)
          for (size_t t = 0; t < nb; ++t)
            for (size_t k = 0; k < HWy; ++k)
              if (meta.mask[k]) ++train_land_days, wet += y[t * HWy + k] > 0;
        writer.write_rows(kSplits[s], a, nb, x.data(), y.data(), prv.data(), &dates.split_days[s][a]);
        progress2.advance(static_cast<int64_t>(nb));
      });
    }
    progress2.done();
    writer.close();
    file.commit();
    summary.wet_day_share = train_land_days ? static_cast<double>(wet) / train_land_days : 0;
  }
  if (summary.filled > 0)
    spdlog::warn("{} missing predictor values were filled (preprocess.fill: {})", summary.filled, pp.fill);
  summary.train = dates.split_days[0].size();
  summary.validation = dates.split_days[1].size();
  summary.test = dates.split_days[2].size();
  return summary;
}

}  // namespace ds
