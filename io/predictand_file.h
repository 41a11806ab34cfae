// The product for a continuous predictand (temperature and the like; precipitation has its own
// file, precipitation_file.h): the downscaled daily mean `<var>` and, from a Gaussian model, its
// standard deviation `<var>_sd`, as CF NetCDF-4 on the observation grid, in the observations'
// units. `evaluate` reads it back.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
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

// The file written a block of days at a time (as PrecipitationWriter, precipitation_file.h): the
// constructor defines it at a temporary name from `header` (all but mean and sd, which it does
// not read; `with_sd` says whether `<variable>_sd` is written), write() takes the blocks of
// (time, lat, lon) values in order, commit() renames the complete file into place; destroyed
// uncommitted, it removes the temporary file.
class PredictandWriter {
 public:
  PredictandWriter(const std::string& path, const PredictandOutput& header, bool with_sd);
  ~PredictandWriter();
  PredictandWriter(const PredictandWriter&) = delete;
  PredictandWriter& operator=(const PredictandWriter&) = delete;
  // Days [days_written(), days_written() + days) of header.days; sd null when without it.
  void write(size_t days, const float* mean, const float* sd);
  size_t days_written() const;
  void commit();  // Error naming the file unless every day was written

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes atomically: `<variable>` and `<variable>_sd` (if sd is given), _FillValue where NaN,
// cell_methods "time: mean", daily time_bnds, deflate compression, provenance attributes. One
// block of PredictandWriter.
void write_predictand(const std::string& path, const PredictandOutput& out);

// Reads what write_predictand wrote (NaN for _FillValue). InputError if `variable` is absent.
PredictandOutput read_predictand(const std::string& path, const std::string& variable);

}  // namespace ds
