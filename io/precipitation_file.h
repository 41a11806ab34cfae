// The product: downscaled daily precipitation as CF NetCDF-4 on the predictand grid.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct PrecipitationOutput {
  std::vector<double> lon, lat;       // ascending cell centres
  std::vector<int64_t> days;          // days since 1970-01-01
  std::vector<float> pr;              // (time, lat, lon) mm/day, NaN over the ocean
  std::vector<float> probability;     // (time, lat, lon) rain probability, NaN over the ocean
  std::string history, checkpoint, config_file;
};

// Writes atomically: pr in kg m-2 s-1 like the observations it is compared with (standard_name
// precipitation_flux, cell_methods "time: mean", daily time_bnds), the wet-day probability, and
// _FillValue over the ocean.
void write_precipitation(const std::string& path, const PrecipitationOutput& out);

}  // namespace ds
