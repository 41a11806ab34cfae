// Cutting a variable out of a source dataset (a local file or an OPeNDAP URL: both go through
// netCDF-C's nc_open) to a lon/lat box, years, season months and one pressure level, and
// writing it as a normalized NetCDF file: dims (time, lat, lon), latitude ascending, time as days
// since 1970-01-01, values unpacked to float with missing values as NaN on read-back.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/config.h"

namespace ds {

struct SubsetRequest {
  std::string source;    // path or URL
  std::string variable;  // name in the source
  int level = 0;         // hPa; 0 for a variable without a level dimension
  double lon_min = 0, lon_max = 0, lat_min = 0, lat_max = 0;
  YearRange years;
  std::vector<int> months;  // kept months, 1..12
};

struct SubsetResult {
  size_t ntime = 0, nlat = 0, nlon = 0;
  double missing_share = 0;  // share of values that are missing
};

// Reads the hyperslab one year at a time (memory bounded by one year of one field) and writes
// `out_path` atomically. Errors name the source and variable; nothing is left at out_path or its
// temporary name on failure.
SubsetResult fetch_subset(const SubsetRequest& req, const std::string& out_path, const std::string& history);

// A fetched field read back whole.
struct Field {
  std::string variable, units, path;
  int level = 0;
  std::vector<double> lon, lat;  // ascending
  std::vector<int64_t> days;     // days since 1970-01-01 in the file's calendar
  std::vector<float> values;     // time-major (time, lat, lon); NaN where missing
  size_t field_size() const { return lon.size() * lat.size(); }
};
Field read_field(const std::string& path, const std::string& variable);

// A URL with any user:password@ removed, for logs and provenance.
std::string redact_credentials(const std::string& url);

}  // namespace ds
