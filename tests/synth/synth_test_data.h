// Shared by the synth tests: one small synthetic dataset per test process (a 10x10-degree
// northern region, 2003-2004 so a leap day is included), and helpers to read whole variables.
#pragma once
#include <string>
#include <vector>

#include "io/config.h"
#include "io/netcdf_file.h"
#include "support/test_support.h"
#include "synth/synth.h"

namespace ds::synth::test {

inline Config::Synth small_config(const std::string& dir, uint64_t seed = 42) {
  Config::Synth cfg;
  cfg.dir = dir;
  cfg.years = {2003, 2004};
  cfg.lon_min = -100;
  cfg.lon_max = -90;
  cfg.lat_min = 36;
  cfg.lat_max = 46;
  cfg.seed = seed;
  return cfg;
}

struct SmallDataset {
  ds::test::TempDir dir;
  Config::Synth cfg = small_config(dir.path());
  SynthFiles files = write_synthetic_dataset(cfg);
};

// Written on first use, removed when the test process exits.
inline const SmallDataset& small_dataset() {
  static const SmallDataset data;
  return data;
}

// A whole variable as floats, in file order.
inline std::vector<float> read_all(const NcFile& f, const std::string& name) {
  const int v = f.var_id(name);
  std::vector<size_t> start, count;
  size_t n = 1;
  for (const auto& d : f.var_dims(v)) {
    start.push_back(0);
    count.push_back(f.dim_len(d));
    n *= count.back();
  }
  std::vector<float> out(n);
  f.read(v, start, count, out.data());
  return out;
}

}  // namespace ds::synth::test
