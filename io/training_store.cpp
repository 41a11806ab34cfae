#include "io/training_store.h"

#include <algorithm>
#include <sstream>

#include "io/error.h"

namespace ds {

namespace {
std::string join(const std::vector<std::string>& v) {
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
// Chunks of 8 samples (StoreWriter::kChunkRows): big enough to amortize HDF5 per-chunk cost,
// small enough that a shuffled batch read does not drag in many unused samples.
constexpr hsize_t kChunkRows = StoreWriter::kChunkRows;
constexpr hsize_t kTimeChunkRows = 1024;  // 8 KiB of int64 per chunk
}  // namespace

StoreWriter::StoreWriter(const std::string& path, const StoreMeta& meta, int deflate)
    : file_(H5File::create(path)), meta_(meta), deflate_(deflate) {
  file_.set_attr("/", "format", std::string(kStoreFormat));
  file_.set_attr("/", "channels", join(meta.channels));
  file_.set_attr("/", "wet_threshold", meta.wet_threshold);
  file_.set_attr("/", "sd_ddof", int64_t{1});
  file_.set_attr("/", "config", meta.config_text);
  file_.set_attr("/", "sources", meta.sources);
  file_.set_attr("/", "software_version", std::string("downscale " DOWNSCALE_VERSION));
  file_.set_attr("/", "standardize", meta.standardize);
  file_.set_attr("/", "regrid", meta.regrid);
  file_.set_attr("/", "fill", meta.fill);
  file_.set_attr("/", "dropped_dates", meta.dropped_dates);
  file_.create_group("/grid");
  file_.write("/grid/predictor_lon", {meta.predictor_lon.size()}, meta.predictor_lon.data());
  file_.write("/grid/predictor_lat", {meta.predictor_lat.size()}, meta.predictor_lat.data());
  file_.write("/grid/predictand_lon", {meta.predictand_lon.size()}, meta.predictand_lon.data());
  file_.write("/grid/predictand_lat", {meta.predictand_lat.size()}, meta.predictand_lat.data());
  file_.write("/mask", {hsize_t(meta.Hy()), hsize_t(meta.Wy())}, meta.mask.data());
  file_.create_group("/stats");
  const std::vector<hsize_t> stat_dims{hsize_t(meta.C()), hsize_t(meta.H()), hsize_t(meta.W())};
  file_.write("/stats/mean", stat_dims, meta.mean.data());
  file_.write("/stats/sd", stat_dims, meta.sd.data());
}

void StoreWriter::write_split(const std::string& split, const std::vector<float>& x, const std::vector<float>& y,
                              const std::vector<float>& pr, const std::vector<int64_t>& time) {
  const hsize_t n = time.size();
  if (n == 0) return;
  const hsize_t C = meta_.C(), H = meta_.H(), W = meta_.W(), Hy = meta_.Hy(), Wy = meta_.Wy();
  if (x.size() != n * C * H * W || y.size() != n * Hy * Wy || pr.size() != n * Hy * Wy)
    throw Error(file_.path() + ": split " + split + ": array sizes do not match the store's shape");
  create_split(split, n);
  write_rows(split, 0, n, x.data(), y.data(), pr.data(), time.data());
}

void StoreWriter::create_split(const std::string& split, size_t n_samples) {
  const hsize_t n = n_samples;
  if (n == 0) return;
  const hsize_t C = meta_.C(), H = meta_.H(), W = meta_.W(), Hy = meta_.Hy(), Wy = meta_.Wy();
  const std::string g = "/" + split;
  file_.create_group(g);
  file_.create_dataset(g + "/x", H5T_NATIVE_FLOAT, {n, C, H, W}, kChunkRows, deflate_);
  file_.create_dataset(g + "/y", H5T_NATIVE_FLOAT, {n, Hy, Wy}, kChunkRows, deflate_);
  file_.create_dataset(g + "/pr", H5T_NATIVE_FLOAT, {n, Hy, Wy}, kChunkRows, deflate_);
  file_.create_dataset(g + "/time", H5T_NATIVE_INT64, {n}, kTimeChunkRows);
  file_.set_attr(g + "/time", "units", std::string("days since 1970-01-01"));
}

void StoreWriter::write_rows(const std::string& split, size_t row, size_t count, const float* x, const float* y,
                             const float* pr, const int64_t* time) {
  if (count == 0) return;
  const std::string g = "/" + split;
  file_.write_rows(g + "/x", row, count, x);
  file_.write_rows(g + "/y", row, count, y);
  file_.write_rows(g + "/pr", row, count, pr);
  file_.write_rows(g + "/time", row, count, time);
}

void StoreWriter::close() { file_.close(); }

StoreReader::StoreReader(const std::string& path) : file_(H5File::open(path)) {
  if (!file_.has_attr("/", "format") || file_.attr_string("/", "format") != kStoreFormat)
    throw InputError(path + ": not a downscale training store (format attribute missing or different)");
  meta_.channels = split_commas(file_.attr_string("/", "channels"));
  meta_.wet_threshold = file_.attr_double("/", "wet_threshold");
  meta_.config_text = file_.attr_string("/", "config");
  meta_.sources = file_.attr_string("/", "sources");
  if (file_.has_attr("/", "standardize")) meta_.standardize = file_.attr_string("/", "standardize");
  if (file_.has_attr("/", "regrid")) meta_.regrid = file_.attr_string("/", "regrid");
  if (file_.has_attr("/", "fill")) meta_.fill = file_.attr_string("/", "fill");
  if (file_.has_attr("/", "dropped_dates")) meta_.dropped_dates = file_.attr_int("/", "dropped_dates");
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
  read_vec("/mask", meta_.mask);
  read_vec("/stats/mean", meta_.mean);
  read_vec("/stats/sd", meta_.sd);
}

size_t StoreReader::count(const std::string& split) const {
  const std::string name = "/" + split + "/time";
  return file_.exists(name) ? file_.dims(name)[0] : 0;
}

void StoreReader::read_x(const std::string& s, size_t row, size_t n, float* out) const { file_.read_rows("/" + s + "/x", row, n, out); }
void StoreReader::read_y(const std::string& s, size_t row, size_t n, float* out) const { file_.read_rows("/" + s + "/y", row, n, out); }
void StoreReader::read_pr(const std::string& s, size_t row, size_t n, float* out) const { file_.read_rows("/" + s + "/pr", row, n, out); }

std::vector<int64_t> StoreReader::read_time(const std::string& split) const {
  std::vector<int64_t> t(count(split));
  if (!t.empty()) file_.read("/" + split + "/time", t.data());
  return t;
}

}  // namespace ds
