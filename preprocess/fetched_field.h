// One file that `fetch` wrote, opened for reading a few days at a time, so that preprocessing
// the 30-year North America request holds one block of days of one field, never a whole field.
// The contract with fetch (io/fetch_manifest.h): dims (time, lat, lon); lat and lon strictly
// ascending, lon within -180..180; time in days since 1970-01-01 counted in the time variable's
// CF `calendar` (absent: standard), one step per day, strictly ascending; the variable in float with _FillValue where missing, attribute
// `units`, and `level_hPa` for pressure-level fields. Opening checks all of it and names the
// file and variable in any error (InputError).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "io/calendar.h"
#include "io/fetch_manifest.h"
#include "io/netcdf_file.h"
#include "preprocess/grid.h"

namespace ds {

class FetchedField {
 public:
  FetchedField(const std::string& path, const std::string& variable);

  const std::string& path() const { return file_.path(); }
  const std::string& variable() const { return variable_; }
  const std::string& where() const { return where_; }  // "path: variable 'z'"
  const std::string& units() const { return units_; }
  int level() const { return level_; }                 // hPa; 0 without level_hPa
  // InputError where the file's level_hPa is not the level of `field` ("z@500": 500 hPa), a file
  // of another level copied under its name; a field or file without a level passes.
  void check_level(const std::string& field) const;
  const Grid& grid() const { return grid_; }
  const std::vector<int64_t>& days() const { return days_; }  // days since 1970-01-01 in calendar(), ascending
  Calendar calendar() const { return calendar_; }
  // A global attribute fetch copied from the source as original_<name> (fetch/plan.h:
  // provenance_globals), "" when the source had none.
  std::string original(const std::string& name) const { return file_.att_text(NC_GLOBAL, "original_" + name); }
  std::string date_of(int64_t day) const;  // "YYYY-MM-DD" of a day number, in the file's calendar

  // Reads the time steps at the ascending indices `idx` into out (idx.size() x grid().size()
  // floats, time-major); missing values become NaN. Consecutive indices are one hyperslab read.
  // Values outside it (or infinite) are an InputError naming the value, date and point.
  void read(const std::vector<size_t>& idx, float* out) const;
  // InputError unless the file still has the time steps, grid size, calendar, units and level
  // that `manifest` records for it (`entry`; what an older manifest lacks is not compared), and
  // every day in the months fetch cut (`season`, the manifest's; empty: not compared): a file
  // changed after the fetch (a gap cut out, a CDO step's calendar, a relabelled unit, a time axis
  // moved by a day) is named, not read as fetched.
  void check_as_fetched(const FetchedFile& entry, const std::string& manifest, const std::vector<int>& season) const;
  // Plausible values (fetch/plausible_ranges.h, recorded in the manifest) in `range_units`, the
  // manifest's units of the field ("": the file's); NaN bounds: none.
  void set_valid_range(double min, double max, const std::string& range_units = "");

 private:
  NcFile file_;
  std::string variable_, where_, units_, range_units_;
  int varid_ = -1, level_ = 0;
  float fill_ = 1e20f;
  float missing_ = NAN;  // the missing_value attribute; NaN (equal to nothing) when absent
  double valid_min_ = -INFINITY, valid_max_ = INFINITY;
  [[noreturn]] void implausible(float value, size_t index, size_t point) const;
  Calendar calendar_ = Calendar::standard;
  Grid grid_;
  std::vector<int64_t> days_;
};

}  // namespace ds
