#include "io/store_identity.h"

#include <algorithm>
#include <functional>
#include <sstream>

#include "io/sha256.h"

namespace ds {

std::string join_commas(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string p; std::getline(ss, p, ',');) out.push_back(p);
  return out;
}

std::string statistics_hash(const StoreMeta& meta) {
  Sha256 h;
  h.update(meta.mean).update(meta.sd);
  return h.hex();
}

std::string store_identity(const StoreMeta& meta) {
  Sha256 h;
  h.update(std::string("downscale store identity 1"));
  h.update(join_commas(meta.channels));
  h.update(meta.predictor_lon).update(meta.predictor_lat).update(meta.predictand_lon).update(meta.predictand_lat);
  h.update(meta.mean).update(meta.sd).update(meta.mask);
  h.update(meta.predictand).update(meta.predictand_units).update(meta.calendar);
  const int window[4] = {meta.obs_row0, meta.obs_col0, meta.obs_rows, meta.obs_cols};
  h.update(window, sizeof window);
  return h.hex();
}

std::string identity_parts(const StoreMeta& meta) {
  auto part = [](const std::string& name, const std::function<void(Sha256&)>& add) {
    Sha256 h;
    add(h);
    return name + "=" + h.hex().substr(0, 16);
  };
  const int window[4] = {meta.obs_row0, meta.obs_col0, meta.obs_rows, meta.obs_cols};
  return join_commas({
      part("channels", [&](Sha256& h) { h.update(join_commas(meta.channels)); }),
      part("grids", [&](Sha256& h) {
        h.update(meta.predictor_lon).update(meta.predictor_lat).update(meta.predictand_lon).update(meta.predictand_lat);
      }),
      part("statistics", [&](Sha256& h) { h.update(meta.mean).update(meta.sd); }),
      part("mask", [&](Sha256& h) { h.update(meta.mask); }),
      part("predictand and units", [&](Sha256& h) { h.update(meta.predictand).update(meta.predictand_units); }),
      part("calendar", [&](Sha256& h) { h.update(meta.calendar); }),
      part("observation window", [&](Sha256& h) { h.update(window, sizeof window); }),
  });
}

std::vector<std::string> changed_identity_parts(const std::string& recorded, const std::string& now) {
  std::vector<std::string> changed;
  const auto was = split_commas(recorded), is = split_commas(now);
  for (const std::string& item : is) {
    if (std::find(was.begin(), was.end(), item) != was.end()) continue;
    changed.push_back(item.substr(0, item.find('=')));
  }
  return changed;
}

StoreProvenance provenance_of(const StoreMeta& meta) {
  StoreProvenance p;
  p.identity = store_identity(meta);
  p.channels = meta.channels;
  p.grid[0] = meta.H(), p.grid[1] = meta.W(), p.grid[2] = meta.Hy(), p.grid[3] = meta.Wy();
  p.statistics = statistics_hash(meta);
  return p;
}

StoreProvenance provenance_of(const StoreReader& store) {
  StoreProvenance p = provenance_of(store.meta());
  p.train_hash = store.split_hash("train");
  p.validation_hash = store.split_hash("validation");
  return p;
}

std::string StoreProvenance::grid_text() const {
  return std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " -> " + std::to_string(grid[2]) + " x " +
         std::to_string(grid[3]);
}

std::string provenance_difference(const StoreProvenance& a, const StoreProvenance& b) {
  if (a.identity == b.identity) return "";
  if (a.channels != b.channels) {
    auto sa = a.channels, sb = b.channels;
    std::sort(sa.begin(), sa.end());
    std::sort(sb.begin(), sb.end());
    if (sa == sb) {
      size_t i = 0;
      while (a.channels[i] == b.channels[i]) ++i;
      return "the same " + std::to_string(a.channels.size()) + " channels in another order (channel " +
             std::to_string(i + 1) + " is " + a.channels[i] + " vs " + b.channels[i] + ")";
    }
    return "other channels (" + join_commas(a.channels) + " vs " + join_commas(b.channels) + ")";
  }
  if (!std::equal(a.grid, a.grid + 4, b.grid)) return "other grid sizes (" + a.grid_text() + " vs " + b.grid_text() + ")";
  if (a.statistics != b.statistics)
    return "other standardization statistics (/stats/mean, /stats/sd): preprocess was run again with another training "
           "period, source, regrid method or fill";
  return "other grid coordinates, land mask, predictand, units or calendar";
}

}  // namespace ds
