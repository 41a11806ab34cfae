#include "io/training_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/sha256.h"
#include "io/store_checks.h"
#include "io/store_identity.h"
#include "io/version.h"

namespace ds {

namespace {
std::string dims_text(const std::vector<hsize_t>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) s += (i ? " x " : "") + std::to_string(d[i]);
  return s.empty() ? "a scalar" : s;
}
// Chunks of one sample (StoreWriter::kChunkRows): every chunk carries a Fletcher-32 checksum,
// which HDF5 can only check over a whole chunk, so a shuffled batch read (train.data_on_device
// false) reads and checks its own samples alone (8-sample chunks made it read 8 times the bytes
// for North America's 127 kB samples); a sample is big enough to amortize HDF5's per-chunk cost.
constexpr hsize_t kChunkRows = StoreWriter::kChunkRows;
constexpr hsize_t kTimeChunkRows = 1024;  // 8 KiB of int64 per chunk
// The root attributes the readers act on beyond the identity (which names what it covers) and the
// content hash: the predictors' units (predict converts new predictors by them), the regridding,
// filling and standardization recorded for predict to repeat, the wet threshold, the calendar...
// Their SHA-256 is `metadata_sha256`: a store edited after preprocess (channel_units' Pa made hPa
// predicted a GCM run 79 degC off, exit 0) is refused. The software version stays out.
std::string metadata_sha256(const H5File& f) {
  using T = H5File::AttrType;
  return f.root_attributes_sha256(
      {{"format", T::kString},         {"channels", T::kString},          {"channel_units", T::kString},
       {"wet_threshold", T::kDouble},  {"sd_ddof", T::kInt},              {"config", T::kString},
       {"split_years", T::kString},    {"sources", T::kString},           {"source_references", T::kString},
       {"source_license", T::kString}, {"standardize", T::kString},       {"regrid", T::kString},
       {"fill", T::kString},           {"min_valid_fraction", T::kDouble}, {"dropped_dates", T::kInt},
       {"predictand", T::kString},     {"predictand_units", T::kString},  {"calendar", T::kString},
       {"obs_window", T::kString},     {"identity", T::kString},          {"identity_parts", T::kString},
       {"obs_range", T::kString},      {"y_range", T::kString}});
}

// "lo,hi" with enough digits that a float reads back as itself.
std::string range_text(float lo, float hi) { return fmt::format("{:.9g},{:.9g}", lo, hi); }

// Widens [lo, hi] to take the finite values of v[0, n).
void widen(float& lo, float& hi, const float* v, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(v[i])) lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
}

}  // namespace

StoreWriter::StoreWriter(const std::string& path, const StoreMeta& meta, int deflate)
    : file_(H5File::create(path)), meta_(meta), deflate_(deflate) {
  // Fletcher-32 on every dataset, checked by HDF5 on every read: a store damaged on disk (a byte
  // flipped in the training split) is refused naming the dataset, where it trained and scored on
  // without a word before. content_hash identifies the data; this checks it as it is read.
  file_.checksum_datasets();
  file_.set_attr("/", "format", std::string(kStoreFormat));
  file_.set_attr("/", "channels", join_commas(meta.channels));
  if (meta.channel_units.size() == meta.channels.size()) {
    // One text, as channels: units hold no comma ("kg m-2 s-1", "m2 s-2").
    file_.set_attr("/", "channel_units", join_commas(meta.channel_units));
  }
  file_.set_attr("/", "wet_threshold", meta.wet_threshold);
  file_.set_attr("/", "sd_ddof", int64_t{1});
  file_.set_attr("/", "config", meta.config_text);
  if (!meta.split_years.empty()) file_.set_attr("/", "split_years", meta.split_years);
  file_.set_attr("/", "sources", meta.sources);
  if (!meta.source_references.empty()) file_.set_attr("/", "source_references", meta.source_references);
  if (!meta.source_license.empty()) file_.set_attr("/", "source_license", meta.source_license);
  file_.set_attr("/", "software_version", std::string("downscale " DOWNSCALE_VERSION));
  file_.set_attr("/", "standardize", meta.standardize);
  file_.set_attr("/", "regrid", meta.regrid);
  file_.set_attr("/", "fill", meta.fill);
  if (std::isfinite(meta.min_valid_fraction)) file_.set_attr("/", "min_valid_fraction", meta.min_valid_fraction);
  file_.set_attr("/", "dropped_dates", meta.dropped_dates);
  file_.set_attr("/", "predictand", meta.predictand);
  file_.set_attr("/", "predictand_units", meta.predictand_units);
  file_.set_attr("/", "calendar", meta.calendar);
  StoreMeta m = meta;
  if (m.obs_rows == 0 || m.obs_cols == 0) m.set_window_to_output_grid();
  if (m.obs_row0 < 0 || m.obs_col0 < 0 || m.obs_row0 + m.obs_rows > m.Hy() || m.obs_col0 + m.obs_cols > m.Wy() ||
      m.obs_lat.size() != size_t(m.obs_rows) || m.obs_lon.size() != size_t(m.obs_cols))
    throw Error(path + ": the observation window does not fit the output grid");
  meta_ = m;
  file_.set_attr("/", "obs_window", std::string(std::to_string(m.obs_row0) + "," + std::to_string(m.obs_col0) + "," +
                                                std::to_string(m.obs_rows) + "," + std::to_string(m.obs_cols)));
  file_.create_group("/grid");
  file_.write("/grid/predictor_lon", {meta.predictor_lon.size()}, meta.predictor_lon.data());
  file_.write("/grid/predictor_lat", {meta.predictor_lat.size()}, meta.predictor_lat.data());
  file_.write("/grid/predictand_lon", {meta.predictand_lon.size()}, meta.predictand_lon.data());
  file_.write("/grid/predictand_lat", {meta.predictand_lat.size()}, meta.predictand_lat.data());
  file_.write("/grid/obs_lon", {m.obs_lon.size()}, m.obs_lon.data());
  file_.write("/grid/obs_lat", {m.obs_lat.size()}, m.obs_lat.data());
  // Each its own dimension scale, so netCDF-4 and xarray name /grid's dimensions after them
  // instead of phony_dim_N.
  for (const char* c : {"predictor_lon", "predictor_lat", "predictand_lon", "predictand_lat", "obs_lon", "obs_lat"}) {
    const std::string path = std::string("/grid/") + c;
    const bool lat = std::string(c).find("_lat") != std::string::npos;
    file_.set_attr(path, "units", std::string(lat ? "degrees_north" : "degrees_east"));
    file_.set_attr(path, "standard_name", std::string(lat ? "latitude" : "longitude"));
    file_.set_attr(path, "axis", std::string(lat ? "Y" : "X"));
    file_.make_scale(path, c);
  }
  file_.write("/mask", {hsize_t(meta.Hy()), hsize_t(meta.Wy())}, meta.mask.data());
  file_.create_group("/stats");
  const std::vector<hsize_t> stat_dims{hsize_t(meta.C()), hsize_t(meta.H()), hsize_t(meta.W())};
  file_.write("/stats/mean", stat_dims, meta.mean.data());
  file_.write("/stats/sd", stat_dims, meta.sd.data());
  write_coordinates("/");
  write_coordinates("/stats", false);  // xarray shows a group's own coordinates only (group="stats")
  attach_root_coordinates();
  file_.set_attr("/", "identity", store_identity(meta_));
  file_.set_attr("/", "identity_parts", identity_parts(meta_));
}

// Named dimensions with coordinates for netCDF-4 and xarray (`xarray.open_dataset(store,
// group="train")`), which otherwise show phony_dim_N. Dimension scales channel (the names as
// strings), predictor_lat/lon and lat/lon (the predictand grid) in the root, for the mask and the
// statistics, and again in each split's group with its time, for x, y and obs: xarray shows a
// group's own coordinates only. The /grid datasets stay for the readers of earlier stores.
void StoreWriter::write_coordinates(const std::string& group, bool output_grid) {
  const StoreMeta& m = meta_;
  const std::string g = group == "/" ? "" : group;
  file_.write_strings(g + "/channel", m.channels);
  file_.set_attr(g + "/channel", "long_name", std::string("predictor field as var@level in hPa (a surface field: var)"));
  file_.make_scale(g + "/channel", "channel");
  const auto axis = [&](const std::string& name, const std::vector<double>& values, bool lat) {
    file_.write(g + "/" + name, {values.size()}, values.data());
    file_.set_attr(g + "/" + name, "units", std::string(lat ? "degrees_north" : "degrees_east"));
    file_.set_attr(g + "/" + name, "standard_name", std::string(lat ? "latitude" : "longitude"));
    file_.set_attr(g + "/" + name, "axis", std::string(lat ? "Y" : "X"));
    file_.make_scale(g + "/" + name, name);
  };
  axis("predictor_lat", m.predictor_lat, true);
  axis("predictor_lon", m.predictor_lon, false);
  if (output_grid) {
    axis("lat", m.predictand_lat, true);
    axis("lon", m.predictand_lon, false);
  }
}

void StoreWriter::attach_root_coordinates() {
  file_.attach_scale("/mask", "/lat", 0);
  file_.attach_scale("/mask", "/lon", 1);
  file_.set_attr("/mask", "long_name", std::string("modelled (land) grid box: 1, else 0"));
  for (const char* st : {"/stats/mean", "/stats/sd"}) {
    file_.attach_scale(st, "/stats/channel", 0);
    file_.attach_scale(st, "/stats/predictor_lat", 1);
    file_.attach_scale(st, "/stats/predictor_lon", 2);
  }
  // The statistics are in each channel's own units (Pa, K, kg kg-1): one `units` cannot say it.
  if (meta_.channel_units.size() == meta_.channels.size() && !meta_.channels.empty()) {
    file_.write_strings("/stats/channel_units", meta_.channel_units);
    file_.attach_scale("/stats/channel_units", "/stats/channel", 0);
    file_.set_attr("/stats/channel_units", "long_name", std::string("units of each channel's mean and sd, as fetched"));
  }
  file_.set_attr("/stats/mean", "long_name", std::string("training-period mean per channel and grid box"));
  file_.set_attr("/stats/sd", "long_name", std::string("training-period standard deviation (ddof 1)"));
}

// One hasher per dataset, fed in row order, so the hash does not depend on the block sizes.
struct StoreWriter::SplitHash {
  Sha256 x, y, obs, time;
  size_t next_row = 0;
};

void StoreWriter::write_split(const std::string& split, const std::vector<float>& x, const std::vector<float>& y,
                              const std::vector<float>& obs, const std::vector<int64_t>& time) {
  const hsize_t n = time.size();
  if (n == 0) return;
  const hsize_t C = meta_.C(), H = meta_.H(), W = meta_.W(), Hy = meta_.Hy(), Wy = meta_.Wy();
  if (x.size() != n * C * H * W || y.size() != n * Hy * Wy || obs.size() != n * Hy * Wy)
    throw Error(file_.path() + ": split " + split + ": array sizes do not match the store's shape");
  create_split(split, n);
  write_rows(split, 0, n, x.data(), y.data(), obs.data(), time.data());
}

void StoreWriter::create_split(const std::string& split, size_t n_samples) {
  const hsize_t n = n_samples;
  if (n == 0) return;
  const hsize_t C = meta_.C(), H = meta_.H(), W = meta_.W(), Hy = meta_.Hy(), Wy = meta_.Wy();
  const std::string g = "/" + split;
  file_.create_group(g);
  file_.create_dataset(g + "/x", H5T_NATIVE_FLOAT, {n, C, H, W}, kChunkRows, deflate_);
  file_.create_dataset(g + "/y", H5T_NATIVE_FLOAT, {n, Hy, Wy}, kChunkRows, deflate_);
  file_.create_dataset(g + "/obs", H5T_NATIVE_FLOAT, {n, Hy, Wy}, kChunkRows, deflate_);
  file_.set_attr(g + "/obs", "units", meta_.predictand_units);
  file_.create_dataset(g + "/time", H5T_NATIVE_INT64, {n}, kTimeChunkRows);
  // The values are day numbers; the reference at 12:00 stamps each day at its middle, as the
  // fetched files and the predictions are (daily means, CMIP's convention), so xarray aligns a
  // split's obs with a prediction. Readers of the store take the numbers as days, as before.
  file_.set_attr(g + "/time", "units", std::string("days since 1970-01-01 12:00:00"));
  file_.set_attr(g + "/time", "calendar", meta_.calendar);
  file_.set_attr(g + "/time", "standard_name", std::string("time"));
  file_.set_attr(g + "/time", "axis", std::string("T"));
  file_.make_scale(g + "/time", "time");
  write_coordinates(g);
  for (const char* v : {"/x", "/y", "/obs"}) file_.attach_scale(g + v, g + "/time", 0);
  file_.attach_scale(g + "/x", g + "/channel", 1);
  file_.attach_scale(g + "/x", g + "/predictor_lat", 2);
  file_.attach_scale(g + "/x", g + "/predictor_lon", 3);
  for (const char* v : {"/y", "/obs"}) {
    file_.attach_scale(g + v, g + "/lat", 1);
    file_.attach_scale(g + v, g + "/lon", 2);
  }
  file_.set_attr(g + "/x", "units", std::string("1"));
  file_.set_attr(g + "/x", "long_name", std::string("standardized predictors: (value - training mean) / training sd"));
  file_.set_attr(g + "/y", "units", meta_.predictand_units);
  file_.set_attr(g + "/y", "long_name",
                 std::string("training target (precipitation: amount above the wet threshold, 0 on dry days); "
                             "NaN where not observed"));
  file_.set_attr(g + "/obs", "long_name", std::string("observed predictand; NaN where not observed"));
  hashes_[split] = std::make_shared<SplitHash>();
}

void StoreWriter::write_rows(const std::string& split, size_t row, size_t count, const float* x, const float* y,
                             const float* obs, const int64_t* time) {
  if (count == 0) return;
  const std::string g = "/" + split;
  file_.write_rows(g + "/x", row, count, x);
  file_.write_rows(g + "/y", row, count, y);
  file_.write_rows(g + "/obs", row, count, obs);
  file_.write_rows(g + "/time", row, count, time);
  SplitHash& h = *hashes_.at(split);
  if (row != h.next_row) throw Error(file_.path() + ": split " + split + ": rows must be written in order for the content hash");
  const size_t xs = size_t(meta_.C()) * meta_.H() * meta_.W(), ys = size_t(meta_.Hy()) * meta_.Wy();
  h.x.update(x, count * xs * sizeof(float));
  h.y.update(y, count * ys * sizeof(float));
  h.obs.update(obs, count * ys * sizeof(float));
  h.time.update(time, count * sizeof(int64_t));
  h.next_row += count;
  widen(obs_lo_, obs_hi_, obs, count * ys);
  widen(y_lo_, y_hi_, y, count * ys);
}

void StoreWriter::close() {
  Sha256 all;
  for (const char* split : kSplits) {
    const auto it = hashes_.find(split);
    if (it == hashes_.end()) continue;
    SplitHash& h = *it->second;
    const std::string x = h.x.hex(), y = h.y.hex(), obs = h.obs.hex(), time = h.time.hex();
    all.update(std::string(split)).update(x).update(y).update(obs).update(time);
    Sha256 one;
    one.update(std::string(split)).update(x).update(y).update(obs).update(time);
    file_.set_attr("/" + std::string(split), "content_hash", one.hex());
  }
  hashes_.clear();
  file_.set_attr("/", "content_hash", all.hex());
  if (obs_lo_ <= obs_hi_) file_.set_attr("/", "obs_range", range_text(obs_lo_, obs_hi_));
  if (y_lo_ <= y_hi_) file_.set_attr("/", "y_range", range_text(y_lo_, y_hi_));
  file_.set_attr("/", "metadata_sha256", metadata_sha256(file_));
  file_.close();
}

namespace {
// The store is the previous stage's output: when it is absent, say which stage makes it, as the
// manifest and checkpoint readers do, rather than HDF5's "missing or not HDF5".
H5File open_store(const std::string& path) {
  if (!path_exists(path)) throw InputError(path + ": no such file (run `downscale preprocess` first)");
  return H5File::open(path);
}
}  // namespace

StoreReader::StoreReader(const std::string& path) : file_(open_store(path)) {
  if (!file_.has_attr("/", "format")) throw InputError(path + ": not a downscale training store (no format attribute)");
  const std::string format = file_.attr_string("/", "format");
  if (format == "downscale-store-1" || format == "downscale-store-2")
    throw InputError(path + ": a training store of an older format (" + format + "); rebuild it with `downscale preprocess`");
  if (format != kStoreFormat)
    throw InputError(path + ": format '" + format + "' is not a downscale training store this version reads (" +
                     kStoreFormat + ")");
  meta_.channels = split_commas(file_.attr_string("/", "channels"));
  if (file_.has_attr("/", "channel_units")) meta_.channel_units = split_commas(file_.attr_string("/", "channel_units"));
  meta_.channel_units.resize(meta_.channels.size());  // "" where not recorded
  meta_.wet_threshold = file_.attr_double("/", "wet_threshold");
  meta_.config_text = file_.attr_string("/", "config");
  if (file_.has_attr("/", "split_years")) meta_.split_years = file_.attr_string("/", "split_years");
  meta_.sources = file_.attr_string("/", "sources");
  if (file_.has_attr("/", "source_references")) meta_.source_references = file_.attr_string("/", "source_references");
  if (file_.has_attr("/", "source_license")) meta_.source_license = file_.attr_string("/", "source_license");
  if (file_.has_attr("/", "standardize")) meta_.standardize = file_.attr_string("/", "standardize");
  if (file_.has_attr("/", "regrid")) meta_.regrid = file_.attr_string("/", "regrid");
  if (file_.has_attr("/", "fill")) meta_.fill = file_.attr_string("/", "fill");
  if (file_.has_attr("/", "min_valid_fraction")) meta_.min_valid_fraction = file_.attr_double("/", "min_valid_fraction");
  if (file_.has_attr("/", "dropped_dates")) meta_.dropped_dates = file_.attr_int("/", "dropped_dates");
  meta_.predictand = file_.attr_string("/", "predictand");
  meta_.predictand_units = file_.attr_string("/", "predictand_units");
  meta_.calendar = file_.attr_string("/", "calendar");
  {
    int w[4];
    const std::string text = file_.attr_string("/", "obs_window");
    if (std::sscanf(text.c_str(), "%d,%d,%d,%d", &w[0], &w[1], &w[2], &w[3]) != 4)
      throw InputError(path + ": attribute obs_window '" + text + "' is not row0,col0,rows,cols");
    meta_.obs_row0 = w[0], meta_.obs_col0 = w[1], meta_.obs_rows = w[2], meta_.obs_cols = w[3];
  }
  const auto read_range = [&](const char* name, float& lo, float& hi) {
    if (!file_.has_attr("/", name)) return;  // a store written before 2026-12-01
    const std::string text = file_.attr_string("/", name);
    if (std::sscanf(text.c_str(), "%g,%g", &lo, &hi) != 2 || !(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi))
      throw InputError(path + ": attribute " + name + " '" + text + "' is not lo,hi (finite, lo <= hi)");
  };
  read_range("obs_range", meta_.obs_min, meta_.obs_max);
  read_range("y_range", meta_.y_min, meta_.y_max);
  auto read_vec = [&](const std::string& name, auto& v) {
    size_t n = 1;
    for (auto d : file_.dims(name)) n *= d;
    v.resize(n);
    file_.read(name, v.data());
  };
  read_vec("/grid/predictor_lon", meta_.predictor_lon);
  read_vec("/grid/predictor_lat", meta_.predictor_lat);
  read_vec("/grid/predictand_lon", meta_.predictand_lon);
  read_vec("/grid/predictand_lat", meta_.predictand_lat);
  read_vec("/grid/obs_lon", meta_.obs_lon);
  read_vec("/grid/obs_lat", meta_.obs_lat);
  read_vec("/mask", meta_.mask);
  read_vec("/stats/mean", meta_.mean);
  read_vec("/stats/sd", meta_.sd);
  if (!file_.has_attr("/", "identity") || !file_.has_attr("/", "content_hash"))
    throw InputError(path + ": the store has no identity or content_hash attribute (written incompletely?); rebuild "
                     "it with `downscale preprocess`");
  identity_ = file_.attr_string("/", "identity");
  content_hash_ = file_.attr_string("/", "content_hash");
  check_consistency();
  // After the identity's check, which names the part an edit changed; stores before 2026-11-30
  // have no checksum.
  if (file_.has_attr("/", "metadata_sha256") && file_.attr_string("/", "metadata_sha256") != metadata_sha256(file_))
    throw InputError(path + ": its attributes (channel_units, regrid, standardize, wet_threshold, calendar and the "
                     "rest) do not match their checksum metadata_sha256: the store was edited or damaged after "
                     "preprocess wrote it; rebuild it with `downscale preprocess`");
}

std::string StoreReader::split_hash(const std::string& split) const {
  const std::string g = "/" + split;
  if (file_.exists(g)) return file_.has_attr(g, "content_hash") ? file_.attr_string(g, "content_hash") : "";
  return file_.exists("/train") && file_.has_attr("/train", "content_hash") ? "none" : "";
}

// Every size the readers index with comes from the attributes and the grids: they must agree
// with the datasets' shapes, or a read would run past a buffer.
void StoreReader::check_consistency() const {
  const std::string& path = file_.path();
  const auto expect = [&](const std::string& name, std::vector<hsize_t> want, const std::string& from) {
    if (!file_.exists(name)) throw InputError(path + ": the store has no " + name);
    const auto got = file_.dims(name);
    if (got != want)
      throw InputError(path + ": " + name + " is " + dims_text(got) + " but " + from + " say " + dims_text(want) +
                       "; the store is inconsistent, rebuild it with `downscale preprocess`");
  };
  const hsize_t C = meta_.C(), H = meta_.H(), W = meta_.W(), Hy = meta_.Hy(), Wy = meta_.Wy();
  if (C == 0 || H == 0 || W == 0 || Hy == 0 || Wy == 0)
    throw InputError(path + ": the store has no channels or an empty grid; rebuild it with `downscale preprocess`");
  const std::string from = "the channels attribute (" + std::to_string(C) + ") and /grid";
  expect("/stats/mean", {C, H, W}, from);
  expect("/stats/sd", {C, H, W}, from);
  expect("/mask", {Hy, Wy}, "/grid/predictand_lat and /grid/predictand_lon");
  const auto& m = meta_;
  if (m.obs_row0 < 0 || m.obs_col0 < 0 || m.obs_rows <= 0 || m.obs_cols <= 0 || m.obs_row0 + m.obs_rows > m.Hy() ||
      m.obs_col0 + m.obs_cols > m.Wy() || m.obs_lat.size() != size_t(m.obs_rows) || m.obs_lon.size() != size_t(m.obs_cols))
    throw InputError(path + ": attribute obs_window does not fit the output grid or /grid/obs_lat, /grid/obs_lon");
  // The grids locate every score, map and prediction; the identity does not cover the observation
  // grid, which preprocess copies from the output grid's window (a NaN written into it with h5py
  // was read as a grid).
  const auto ascending = [&](const char* name, const std::vector<double>& c, bool latitude) {
    for (size_t i = 0; i < c.size(); ++i)
      if (!std::isfinite(c[i]) || (i > 0 && !(c[i] > c[i - 1])) || (latitude && std::fabs(c[i]) > 90))
        throw InputError(path + ": /grid/" + name + " is " + fmt::format("{}", c[i]) + " at index " + std::to_string(i) +
                         ", not a strictly ascending " + (latitude ? "latitude in [-90, 90]" : "finite coordinate") +
                         "; the store is corrupt, rebuild it with `downscale preprocess`");
  };
  ascending("predictor_lon", m.predictor_lon, false);
  ascending("predictor_lat", m.predictor_lat, true);
  ascending("predictand_lon", m.predictand_lon, false);
  ascending("predictand_lat", m.predictand_lat, false);  // padding may continue past a pole
  ascending("obs_lon", m.obs_lon, false);
  ascending("obs_lat", m.obs_lat, true);
  for (int i = 0; i < m.obs_rows; ++i)
    if (m.obs_lat[i] != m.predictand_lat[m.obs_row0 + i])
      throw InputError(path + ": /grid/obs_lat[" + std::to_string(i) + "] is not /grid/predictand_lat[" +
                       std::to_string(m.obs_row0 + i) + "] (obs_window); the store is corrupt, rebuild it");
  for (int j = 0; j < m.obs_cols; ++j)
    if (m.obs_lon[j] != m.predictand_lon[m.obs_col0 + j])
      throw InputError(path + ": /grid/obs_lon[" + std::to_string(j) + "] is not /grid/predictand_lon[" +
                       std::to_string(m.obs_col0 + j) + "] (obs_window); the store is corrupt, rebuild it");
  for (const char* split : kSplits) {
    const std::string g = std::string("/") + split;
    // A split's group without its time would be read as an absent split: its days dropped unsaid.
    if (file_.exists(g) && !file_.exists(g + "/time"))
      throw InputError(path + ": " + g + " has no time dataset; the store is corrupt, rebuild it with `downscale preprocess`");
    if (!file_.exists(g + "/time")) continue;
    const hsize_t n = file_.dims(g + "/time").at(0);
    expect(g + "/x", {n, C, H, W}, from + " and " + g + "/time");
    expect(g + "/y", {n, Hy, Wy}, "/grid and " + g + "/time");
    expect(g + "/obs", {n, Hy, Wy}, "/grid and " + g + "/time");
  }
  if (store_identity(meta_) != identity_) {
    // What changed, where the store records its parts (stores written before 2026-11-24 do not).
    std::string what = "its channels, grids, statistics or mask are";
    if (file_.has_attr("/", "identity_parts")) {
      const auto changed = changed_identity_parts(file_.attr_string("/", "identity_parts"), identity_parts(meta_));
      if (!changed.empty()) {
        what = "its";
        for (size_t i = 0; i < changed.size(); ++i)
          what += (i == 0 ? " " : i + 1 == changed.size() ? " and " : ", ") + changed[i];
        what += changed.size() > 1 ? " are" : " is";
      }
    }
    throw InputError(path + ": " + what + " not what its identity attribute was computed from (changed after "
                     "preprocess?); rebuild it with `downscale preprocess`");
  }
}

size_t StoreReader::count(const std::string& split) const {
  const std::string name = "/" + split + "/time";
  return file_.exists(name) ? file_.dims(name)[0] : 0;
}

void StoreReader::read_x(const std::string& s, size_t row, size_t n, float* out) const { file_.read_rows("/" + s + "/x", row, n, out); }
void StoreReader::read_y(const std::string& s, size_t row, size_t n, float* out) const {
  file_.read_rows("/" + s + "/y", row, n, out);
  check_recorded_range(*this, s, "y", row, n, out);
}
void StoreReader::read_obs(const std::string& s, size_t row, size_t n, float* out) const {
  file_.read_rows("/" + s + "/obs", row, n, out);
  check_recorded_range(*this, s, "obs", row, n, out);
}

void StoreReader::for_each_block(const std::string& split, Field field,
                                 const std::function<void(size_t, size_t, const float*)>& use,
                                 size_t block_bytes) const {
  const size_t n = count(split);
  const size_t per_day = field == Field::x ? size_t(meta_.C()) * meta_.H() * meta_.W() : size_t(meta_.Hy()) * meta_.Wy();
  const size_t rows = std::max<size_t>(1, block_bytes / (per_day * sizeof(float)));
  // One buffer for every pass (evaluate's linear baseline makes eight over the training x): a
  // fresh 64 MiB each time cost its zeroing and page faults, about 1 s of a 13 s fit. Taken for
  // the pass and put back after it; a pass started inside another's `use` finds it taken and
  // makes its own, and one that throws frees it.
  std::vector<float> values;
  values.swap(block_buffer_);
  for (size_t first = 0; first < n; first += rows) {
    const size_t r = std::min(rows, n - first);
    if (values.size() < r * per_day) values.resize(r * per_day);
    if (field == Field::x) read_x(split, first, r, values.data());
    else if (field == Field::obs) read_obs(split, first, r, values.data());
    else read_y(split, first, r, values.data());
    use(first, r, values.data());
  }
  block_buffer_.swap(values);
}

std::vector<std::pair<std::string, std::string>> StoreMeta::regrid_methods() const {
  std::vector<std::pair<std::string, std::string>> methods;
  std::stringstream ss(regrid);
  for (std::string item; std::getline(ss, item, ',');)
    if (const auto colon = item.rfind(':'); colon != std::string::npos)
      methods.emplace_back(item.substr(0, colon), item.substr(colon + 1));
  return methods;
}

void StoreMeta::set_window_to_output_grid() {
  obs_row0 = obs_col0 = 0;
  obs_rows = Hy();
  obs_cols = Wy();
  obs_lat = predictand_lat;
  obs_lon = predictand_lon;
}

std::vector<int64_t> StoreReader::read_time(const std::string& split) const {
  std::vector<int64_t> t(count(split));
  if (!t.empty()) file_.read("/" + split + "/time", t.data());
  for (size_t i = 1; i < t.size(); ++i)
    if (!(t[i] > t[i - 1]))
      throw InputError(path() + ": /" + split + "/time does not ascend at row " + std::to_string(i) + " (day " +
                       std::to_string(t[i]) + " after day " + std::to_string(t[i - 1]) +
                       "); the store is corrupt, rebuild it with `downscale preprocess`");
  return t;
}

}  // namespace ds
