#include "preprocess/new_predictors.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "io/error.h"
#include "io/fetch_manifest.h"
#include "preprocess/fetched_field.h"
#include "preprocess/fill.h"
#include "preprocess/regrid.h"
#include "preprocess/standardize.h"

namespace ds {

struct NewPredictors::Channel {
  std::unique_ptr<FetchedField> file;
  std::unique_ptr<Regridder> regrid;
  std::vector<size_t> index;  // the file's time index of each common day
  Standardization stats;
};

namespace {

// The method the store used for a channel: its regrid attribute reads "z@500:bilinear,...".
RegridMethod store_method(const StoreMeta& meta, const std::string& name) {
  std::stringstream ss(meta.regrid);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto colon = item.rfind(':');
    if (colon != std::string::npos && item.substr(0, colon) == name)
      return parse_regrid_method(item.substr(colon + 1), "store attribute regrid");
  }
  return RegridMethod::bilinear;  // stores written before the attribute existed used bilinear
}

}  // namespace

NewPredictors::NewPredictors(const std::string& fetch_dir, const StoreMeta& meta)
    : meta_(meta), fill_(static_cast<int>(parse_fill_policy(meta.fill))) {
  const FetchManifest manifest = FetchManifest::read(fetch_dir + "/manifest.json");
  const Grid xgrid = Grid::from_coords(meta.predictor_lon, meta.predictor_lat, "store predictor grid");
  const size_t HW = xgrid.size();
  for (size_t c = 0; c < meta.channels.size(); ++c) {
    const std::string& name = meta.channels[c];
    const auto it = std::find_if(manifest.predictors.begin(), manifest.predictors.end(),
                                 [&](const FetchedFile& f) { return f.name == name; });
    if (it == manifest.predictors.end())
      throw InputError(fetch_dir + "/manifest.json: no predictor " + name + " (the model was trained on it)");
    Channel ch;
    ch.file = std::make_unique<FetchedField>(manifest.path_of(*it), it->variable);
    ch.regrid = std::make_unique<Regridder>(store_method(meta, name), ch.file->grid(), xgrid, ch.file->where());
    ch.stats.mean.assign(meta.mean.begin() + c * HW, meta.mean.begin() + (c + 1) * HW);
    ch.stats.sd.assign(meta.sd.begin() + c * HW, meta.sd.begin() + (c + 1) * HW);
    channels_.push_back(std::move(ch));
  }
  // Common days, then each channel's index of them.
  days_ = channels_.front().file->days();
  for (const auto& ch : channels_) {
    std::vector<int64_t> next;
    const auto& d = ch.file->days();
    std::set_intersection(days_.begin(), days_.end(), d.begin(), d.end(), std::back_inserter(next));
    days_.swap(next);
  }
  if (days_.empty()) throw InputError(fetch_dir + ": the predictors have no day in common");
  for (auto& ch : channels_) {
    const auto& d = ch.file->days();
    for (int64_t day : days_) ch.index.push_back(std::lower_bound(d.begin(), d.end(), day) - d.begin());
  }
}

NewPredictors::~NewPredictors() = default;

void NewPredictors::read(size_t first, size_t n, float* x) const {
  const size_t C = channels_.size(), HW = meta_.predictor_lon.size() * meta_.predictor_lat.size();
  std::vector<float> src, out;
  for (size_t c = 0; c < C; ++c) {
    const Channel& ch = channels_[c];
    const std::vector<size_t> idx(ch.index.begin() + first, ch.index.begin() + first + n);
    src.resize(n * ch.file->grid().size());
    ch.file->read(idx, src.data());
    fill_missing(*ch.file, idx, src, static_cast<FillPolicy>(fill_));
    ch.regrid->apply(src, n, out);
    apply_standardization(ch.stats, out);
    for (size_t t = 0; t < n; ++t)
      for (size_t k = 0; k < HW; ++k) {
        const float v = out[t * HW + k];
        // Left missing only by the climatology policy: the training mean, 0 once standardized.
        x[(t * C + c) * HW + k] = std::isfinite(v) ? v : 0.0f;
      }
  }
}

}  // namespace ds
