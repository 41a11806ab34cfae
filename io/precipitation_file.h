// The product: downscaled daily precipitation as CF NetCDF-4 on the predictand grid, and the
// Bernoulli-Gamma parameters it comes from. `evaluate` reads it back.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ds {

struct PrecipitationOutput {
  std::vector<double> lon, lat;        // ascending cell centres
  std::vector<int64_t> days;           // days since 1970-01-01 in `calendar`
  std::string calendar = "standard";   // CF name: the calendar of the data predicted
  // (time, lat, lon), mm/day or 1, NaN over the ocean:
  std::vector<float> pr;               // deterministic precipitation
  std::vector<float> pr_expected;      // mean of the predicted distribution
  std::vector<float> p_wet, gamma_shape, gamma_scale;
  int members = 0;
  std::vector<float> pr_members;       // (member, time, lat, lon) stochastic realizations; on disk (time, member, lat, lon)
  std::string occurrence_rule;         // how `pr` decides wet days, for its long_name
  double wet_threshold = 0.99;         // mm/day added back to wet-day amounts
  std::string history, checkpoint, config_file;
  std::map<std::string, std::string> attributes;  // further global attributes (how the inputs were standardized, ...)
};

// The fields of `days` consecutive days, laid out as PrecipitationOutput's (time, lat, lon) in
// mm/day or 1, NaN over the ocean; pr_members (member, time, lat, lon), null without members.
struct PrecipitationDays {
  size_t days = 0;
  const float *pr = nullptr, *pr_expected = nullptr, *p_wet = nullptr, *gamma_shape = nullptr,
              *gamma_scale = nullptr, *pr_members = nullptr;
};

// The file written a block of days at a time, so that a prediction of decades (a GCM run: about
// 1 GB a field for 30 years of North America) never lies in memory whole. The constructor
// defines the file at a temporary name beside `path` from `header` (everything but the fields,
// which it does not read: axes, days, calendar, members, attributes); write() takes the blocks
// in order; commit() renames the complete file into place. Destroyed uncommitted (an error, a
// stop request), it removes the temporary file and the previous output stays.
class PrecipitationWriter {
 public:
  PrecipitationWriter(const std::string& path, const PrecipitationOutput& header);
  ~PrecipitationWriter();
  PrecipitationWriter(const PrecipitationWriter&) = delete;
  PrecipitationWriter& operator=(const PrecipitationWriter&) = delete;
  // Days [days_written(), days_written() + block.days) of header.days.
  void write(const PrecipitationDays& block);
  size_t days_written() const;
  // Error naming the file unless every day was written.
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes atomically: precipitation in kg m-2 s-1 (standard_name precipitation_flux,
// cell_methods "time: mean", daily time_bnds), _FillValue over the ocean, a `member` dimension
// for stochastic output, deflate compression, provenance in global attributes. One block of
// PrecipitationWriter.
void write_precipitation(const std::string& path, const PrecipitationOutput& out);

// Reads what write_precipitation wrote (values back in mm/day, NaN for _FillValue). Without
// `gamma` the gamma_shape and gamma_scale fields stay empty: evaluate scores pr, pr_expected,
// p_wet and the members only, and the two fields are 0.43 GB on the North America test split.
PrecipitationOutput read_precipitation(const std::string& path, bool gamma = true);

}  // namespace ds
