// The training store: the one HDF5 file `preprocess` writes and `train` and `predict` read.
// Layout (sample-major so one sample or one batch is one contiguous chunked read):
//   /                   attrs: format, channels ("z@500,z@700,..."), wet_threshold, sd_ddof,
//                       config (YAML text), sources, software_version
//   /grid/predictor_lon (W), /grid/predictor_lat (H), /grid/predictand_lon (W'), /grid/predictand_lat (H')
//   /mask               (H', W') uint8, 1 on land
//   /stats/mean, /stats/sd   (C, H, W) float32: the training-period standardization
//   /<split>/x          (N, C, H, W) float32, standardized predictors
//   /<split>/y          (N, H', W') float32, target (mm/day above the wet-day threshold)
//   /<split>/pr         (N, H', W') float32, observed precipitation in mm/day (NaN over ocean)
//   /<split>/time       (N) int64, days since 1970-01-01
// with <split> one of train, validation, test (absent when the config gives it no years).
// Since preprocess issue #4 the root also carries: standardize ("grid_box" or "field"), regrid
// ("z@500:bilinear,...,pr:conservative"), fill (the NaN policy), dropped_dates (count), and
// x, y and pr may be deflated (preprocess.compression); readers need none of these.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5_file.h"

namespace ds {

inline const char* const kStoreFormat = "downscale-store-1";
inline const char* const kSplits[] = {"train", "validation", "test"};

struct StoreMeta {
  std::vector<std::string> channels;
  std::vector<double> predictor_lon, predictor_lat, predictand_lon, predictand_lat;
  std::vector<uint8_t> mask;
  std::vector<float> mean, sd;
  double wet_threshold = 0.99;
  std::string config_text, sources;
  std::string standardize = "grid_box", regrid, fill = "none";  // provenance (written, read if present)
  int64_t dropped_dates = 0;
  int C() const { return static_cast<int>(channels.size()); }
  int H() const { return static_cast<int>(predictor_lat.size()); }
  int W() const { return static_cast<int>(predictor_lon.size()); }
  int Hy() const { return static_cast<int>(predictand_lat.size()); }
  int Wy() const { return static_cast<int>(predictand_lon.size()); }
};

class StoreWriter {
 public:
  // Writes the metadata into a new file at `path` (the caller's temporary name).
  // `deflate` (0..9; 0 none) compresses x, y and pr (with HDF5's shuffle filter).
  StoreWriter(const std::string& path, const StoreMeta& meta, int deflate = 0);
  // Writes one split whole: n samples of x (C*H*W each), y, pr (H'*W' each), time.
  void write_split(const std::string& split, const std::vector<float>& x, const std::vector<float>& y,
                   const std::vector<float>& pr, const std::vector<int64_t>& time);
  // Streaming: create a split's datasets for n samples, then fill rows [row, row + count) block
  // by block (x: count*C*H*W floats, y and pr: count*H'*W', time: count).
  void create_split(const std::string& split, size_t n);
  void write_rows(const std::string& split, size_t row, size_t count, const float* x, const float* y, const float* pr,
                  const int64_t* time);
  static constexpr size_t kChunkRows = 8;  // samples per chunk of x, y, pr
  void close();

 private:
  H5File file_;
  StoreMeta meta_;
  int deflate_ = 0;
};

class StoreReader {
 public:
  explicit StoreReader(const std::string& path);  // InputError if not a store
  const StoreMeta& meta() const { return meta_; }
  const std::string& path() const { return file_.path(); }
  size_t count(const std::string& split) const;  // 0 when the split is absent
  void read_x(const std::string& split, size_t row, size_t n, float* out) const;
  void read_y(const std::string& split, size_t row, size_t n, float* out) const;
  void read_pr(const std::string& split, size_t row, size_t n, float* out) const;
  std::vector<int64_t> read_time(const std::string& split) const;

 private:
  H5File file_;
  StoreMeta meta_;
};

}  // namespace ds
