// The product for a continuous predictand (temperature and the like; precipitation has its own
// file, precipitation_file.h): the downscaled daily mean `<var>` and, from a Gaussian model, its
// standard deviation `<var>_sd`, as CF NetCDF-4 on the observation grid, in the observations'
// units. `evaluate` reads it back.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ds {

struct PredictandOutput {
  std::string variable;                // "tas": the observed predictand's name
  std::string units;                   // the observations' units ("degC", "K")
  std::vector<double> lon, lat;        // ascending cell centres
  std::vector<int64_t> days;           // days since 1970-01-01 in `calendar`
  std::string calendar = "standard";   // CF name
  // (time, lat, lon), NaN where not modelled:
  std::vector<float> mean;             // the predicted value (the Gaussian mean, or the MSE model's output)
  std::vector<float> sd;               // its standard deviation (Gaussian models); empty: none
  std::string method;                  // how the mean was obtained, for the long_name
  std::string history, checkpoint, config_file;
  std::map<std::string, std::string> attributes;  // further global attributes
};

// The CF standard name of a predictand variable ("tas" -> air_temperature), "" when unknown.
std::string cf_standard_name(const std::string& variable);

// Writes atomically: `<variable>` and `<variable>_sd` (if sd is given), _FillValue where NaN,
// cell_methods "time: mean", daily time_bnds, deflate compression, provenance attributes.
void write_predictand(const std::string& path, const PredictandOutput& out);

// Reads what write_predictand wrote (NaN for _FillValue). InputError if `variable` is absent.
PredictandOutput read_predictand(const std::string& path, const std::string& variable);

}  // namespace ds
