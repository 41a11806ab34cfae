// The training store: the one HDF5 file `preprocess` writes and `train` and `predict` read.
// Layout (sample-major so one sample or one batch is one contiguous chunked read):
//   /                   attrs: format, channels ("z@500,z@700,..."), wet_threshold, sd_ddof,
//                       config (YAML text), split_years and min_valid_fraction (train/store_settings.h), sources, source_references and
//                       source_license (preprocess/data_terms.h; absent when none), software_version, standardize, regrid, fill,
//                       dropped_dates, predictand ("pr", "tas", ...), predictand_units ("mm/day",
//                       "degC", ...), calendar (CF name of the day numbers' calendar),
//                       obs_window (row0, col0, rows, cols), identity (SHA-256 of channels,
//                       grids, statistics, mask, predictand, units, calendar and window:
//                       io/store_identity.h), identity_parts (each of those hashed alone, so an
//                       edit is named), content_hash (SHA-256 of every split's x, y, obs and time),
//                       obs_range and y_range ("lo,hi": the extremes of every split's obs and y as
//                       written, which every read checks), metadata_sha256 (of the attributes)
//   /grid/predictor_lon (W), /grid/predictor_lat (H): the model's input grid
//   /grid/predictand_lon (W'), /grid/predictand_lat (H'): the model's output grid; the observation
//                       grid sits in it at obs_window, the rest is padding the model's output rule
//                       needs (the convolutional models map H x W to (4H-3) x (4W-3))
//   /grid/obs_lon, /grid/obs_lat: the observation grid (the window's coordinates)
//   /mask               (H', W') uint8, 1 where a box is modelled (observed on enough training
//                       days), 0 for ocean, boxes too often missing, and padding
//   /stats/mean, /stats/sd   (C, H, W) float32: the training-period standardization
//   /<split>/x          (N, C, H, W) float32, standardized predictors
//   /<split>/y          (N, H', W') float32, training target: precipitation above the wet-day
//                       threshold, any other predictand its observed value; NaN wherever not
//                       observed that day (the losses skip it)
//   /<split>/obs        (N, H', W') float32, the observed predictand in predictand_units, NaN
//                       where not observed
//   /<split>/time       (N) int64, day numbers; units "days since 1970-01-01 12:00:00" in
//                       `calendar`, so netCDF readers see each day at its middle
// with <split> one of train, validation, test (absent when the config gives it no years).
// x, y and obs may be deflated (preprocess.compression); readers need not care.
// Format 2 replaced format 1's `pr` with `obs` and added the predictand, calendar and
// observation window; format 3 (this one) added identity and content_hash. Older stores are
// refused with a message to rebuild them. The reader checks that the attributes agree with the
// datasets' shapes (and the identity with the metadata) before anything is read by index.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/hdf5_file.h"

namespace ds {

inline const char* const kStoreFormat = "downscale-store-3";
inline const char* const kSplits[] = {"train", "validation", "test"};

struct StoreMeta {
  std::vector<std::string> channels;
  // Each channel's units as fetched (the `channel_units` attribute, "" each in older stores):
  // new predictors in other units are converted to these, or refused when they cannot be.
  std::vector<std::string> channel_units;
  std::vector<double> predictor_lon, predictor_lat, predictand_lon, predictand_lat;
  std::vector<uint8_t> mask;
  std::vector<float> mean, sd;
  double wet_threshold = 0.99;
  std::string config_text, sources;
  // The split years preprocess was given (Config::Preprocess::split_years_text; "" in stores built
  // before they were recorded): the days of each split are the truth, this says what was asked.
  std::string split_years;
  // Whom to cite and on what terms (preprocess/data_terms.h): the fetched fields' references and
  // licences, a line per distinct text; "" when the sources gave none, or in older stores.
  std::string source_references, source_license;
  std::string standardize = "grid_box", regrid, fill = "none";  // provenance (written, read if present)
  // preprocess.min_valid_fraction the mask was made with; NaN in stores built before it was recorded.
  double min_valid_fraction = NAN;
  int64_t dropped_dates = 0;
  std::string predictand = "pr";          // the observed variable
  std::string predictand_units = "mm/day";  // units of obs (and of y for predictands other than pr)
  std::string calendar = "standard";      // CF calendar of every time value in the store
  // The observation grid inside the model's output grid: rows [obs_row0, obs_row0 + obs_rows)
  // of predictand_lat, columns [obs_col0, obs_col0 + obs_cols) of predictand_lon.
  int obs_row0 = 0, obs_col0 = 0, obs_rows = 0, obs_cols = 0;
  std::vector<double> obs_lon, obs_lat;   // the observation grid's coordinates
  // The smallest and largest value of every split's obs and of its y as preprocess wrote them
  // (root attributes obs_range and y_range, under metadata_sha256; written by StoreWriter::close,
  // which finds them itself). Every read of obs or y checks its values against them: a value
  // outside (a 1e30 written in with h5py) was put there after preprocess. NaN in stores written
  // before they were recorded: those reads refuse infinities only.
  float obs_min = NAN, obs_max = NAN, y_min = NAN, y_max = NAN;
  bool is_precipitation() const { return predictand == "pr"; }
  // The regrid attribute ("z@500:bilinear,...,pr:none") as (field, method text) pairs, in order.
  std::vector<std::pair<std::string, std::string>> regrid_methods() const;
  // Sets an observation window covering the whole output grid (no padding).
  void set_window_to_output_grid();
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
  // Writes one split whole: n samples of x (C*H*W each), y, obs (H'*W' each), time.
  void write_split(const std::string& split, const std::vector<float>& x, const std::vector<float>& y,
                   const std::vector<float>& obs, const std::vector<int64_t>& time);
  // Streaming: create a split's datasets for n samples, then fill rows [row, row + count) block
  // by block (x: count*C*H*W floats, y and obs: count*H'*W', time: count).
  void create_split(const std::string& split, size_t n);
  void write_rows(const std::string& split, size_t row, size_t count, const float* x, const float* y, const float* obs,
                  const int64_t* time);
  static constexpr size_t kChunkRows = 1;  // samples per chunk of x, y, obs
  void close();  // writes content_hash, then closes

 private:
  struct SplitHash;
  // Dimension scales in `group` ("/" the root): channel and the predictor grid, and the output
  // grid (lat, lon) unless output_grid is false (/stats: the statistics are on the predictor grid).
  void write_coordinates(const std::string& group, bool output_grid = true);
  void attach_root_coordinates();
  H5File file_;
  StoreMeta meta_;
  int deflate_ = 0;
  std::map<std::string, std::shared_ptr<SplitHash>> hashes_;  // rows are hashed as they are written
  // The finite values' extremes over every split, as written (StoreMeta::obs_min and the rest).
  float obs_lo_ = INFINITY, obs_hi_ = -INFINITY, y_lo_ = INFINITY, y_hi_ = -INFINITY;
};

class StoreReader {
 public:
  explicit StoreReader(const std::string& path);  // InputError if not a store of this format
  const StoreMeta& meta() const { return meta_; }
  const std::string& identity() const { return identity_; }
  const std::string& content_hash() const { return content_hash_; }
  // One split's content hash (its x, y, obs and time; the group's content_hash attribute): a
  // checkpoint records its train and validation splits', so a store rebuilt with other training
  // days, another wet threshold or other validation years is not taken for the one it was
  // trained on. "none": the split is absent; "": a store written before the hashes were.
  std::string split_hash(const std::string& split) const;
  const std::string& path() const { return file_.path(); }
  size_t count(const std::string& split) const;  // 0 when the split is absent
  void read_x(const std::string& split, size_t row, size_t n, float* out) const;
  // y and obs (here and in for_each_block) are checked against the recorded ranges
  // (StoreMeta::obs_min and the rest): an InputError naming the store, split, date and point.
  void read_y(const std::string& split, size_t row, size_t n, float* out) const;
  void read_obs(const std::string& split, size_t row, size_t n, float* out) const;
  // The split's day numbers; InputError naming the store, split and row unless they ascend (every
  // split's days do as preprocess writes them: a zeroed or shuffled time would date every score and
  // prediction wrongly).
  std::vector<int64_t> read_time(const std::string& split) const;
  // Every day of a split's x, y or obs a block of about 64 MiB at a time, in order: use(first, n,
  // values) with values n x C x H x W (x) or n x H' x W' (y, obs). A statistic of a whole split in
  // bounded memory (North America's 8766 training days are 0.86 GB of y, 1.1 GB of x).
  // Blocks of about `block_bytes` (tests set it small, so that a small store spans several).
  enum class Field { x, y, obs };
  void for_each_block(const std::string& split, Field field,
                      const std::function<void(size_t first, size_t n, const float* values)>& use,
                      size_t block_bytes = size_t(64) << 20) const;

 private:
  void check_consistency() const;
  H5File file_;
  StoreMeta meta_;
  std::string identity_, content_hash_;
  // for_each_block's, kept between passes (up to block_bytes for the reader's life); so
  // for_each_block is for one thread at a time, as every caller uses it.
  mutable std::vector<float> block_buffer_;
};

}  // namespace ds
