// The on-disk layout of the two synthetic files: the dimensions, coordinates and CF attributes of
// ERA-Interim (predictors) and EWEMBI (precipitation), so `fetch` reads them with the same code
// as the real sources. Data are written in blocks of days to keep memory bounded.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "io/config.h"
#include "io/netcdf_file.h"
#include "synth/grid.h"
#include "synth/large_scale.h"

namespace ds::synth {

// Days per write, and the time length of a chunk: large enough to compress well, small enough
// that a block of the default region stays a few MB.
constexpr size_t kBlockDays = 32;
// EWEMBI's missing value over the ocean.
constexpr float kFillValue = 1e20f;

class PredictorWriter {
 public:
  // Creates the file (a temporary name from AtomicFile) and writes the coordinates.
  PredictorWriter(const std::string& path, const Grid& grid, const std::vector<int64_t>& days,
                  const Config::Synth& cfg);
  // data[v] holds nt days of variable v in [time][plev][lat][lon] order.
  void write_block(size_t t0, size_t nt, const std::array<std::vector<float>, kVars>& data);
  void close() { file_.close(); }

 private:
  NcFile file_;
  Grid grid_;
  std::array<int, kVars> var_ids_{};
};

class PrecipWriter {
 public:
  PrecipWriter(const std::string& path, const Grid& grid, const std::vector<int64_t>& days,
               const Config::Synth& cfg);
  // nt days of pr in kg m-2 s-1, [time][lat][lon], kFillValue over the ocean.
  void write_block(size_t t0, size_t nt, const std::vector<float>& pr);
  void close() { file_.close(); }

 private:
  NcFile file_;
  Grid grid_;
  int pr_id_ = -1;
};

}  // namespace ds::synth
