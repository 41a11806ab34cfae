// The list of files `fetch` wrote, which is what `preprocess` reads: fetch/manifest.json.
// Paths are relative to the manifest's folder so a run folder can be moved or copied.
#pragma once
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace ds {

struct FetchedFile {
  std::string name;      // "z@500" for a predictor, the variable for the predictand
  std::string variable;  // variable name inside the file
  std::string file;      // relative to the manifest's folder
  std::string source;    // where it came from (credentials removed)
  size_t ntime = 0, nlat = 0, nlon = 0;
  double missing_share = 0;
  std::string units{};   // of the variable in the file (the dataset's standard units)
  int level = 0;         // hPa; 0 for a single-level field
  std::string native{};  // the variable's name in the source (e.g. "Z500")
  size_t chunks = 0;     // season-year chunks it was joined from (fetch/chunks/ledger.json)
  // CF name of the time axis' calendar, as fetch found it; "" when not recorded (manifests before
  // it was, entries built by hand): preprocess and predict then do not compare the file's with it.
  std::string calendar{};
  // Plausible values in `units` (fetch/plausible_ranges.h); NaN when none is known (a variable
  // without a default, an older manifest). preprocess refuses values outside.
  double valid_min = NAN, valid_max = NAN;
};

struct FetchManifest {
  std::vector<FetchedFile> predictors;
  FetchedFile predictand;  // name "" when the fetch had no predictand (a GCM run's predictors)
  // The months fetch cut (fetch.season, in its order): preprocess splits season-years by what was
  // fetched, not by a config edited since. Empty in manifests written before it was recorded.
  std::vector<int> season;
  // The box and years the config asked fetch for (fetch.lon, fetch.lat, fetch.years): a config
  // edited since the fetch is then told, not silently preprocessed from the older cut. Absent
  // (present = false) in manifests written before it was recorded.
  struct Request {
    bool present = false;
    double lon_min = 0, lon_max = 0, lat_min = 0, lat_max = 0;
    int first_year = 0, last_year = 0;
    // fetch.predictors.dataset and fetch.predictand.dataset as the config named them (E-OBS or
    // EWEMBI, ERA-Interim or a GCM run); datasets_present false in manifests before them.
    bool datasets_present = false;
    std::string predictors_dataset, predictand_dataset;
    // The definition files those names resolved to at fetch time, absolute ("" for a source
    // without a dataset, and in manifests before them): preprocess takes another spelling of the
    // same dataset (a path for a name) as the same, whatever its working folder.
    std::string predictors_definition, predictand_definition;

    // A recorded box and years, without datasets (named, so adding a field cannot shift them).
    static Request box(double lon_min, double lon_max, double lat_min, double lat_max, int first_year,
                       int last_year) {
      Request r;
      r.present = true;
      r.lon_min = lon_min, r.lon_max = lon_max, r.lat_min = lat_min, r.lat_max = lat_max;
      r.first_year = first_year, r.last_year = last_year;
      return r;
    }
    Request with_datasets(std::string predictors, std::string predictand) const {
      Request r = *this;
      r.datasets_present = true;
      r.predictors_dataset = std::move(predictors), r.predictand_dataset = std::move(predictand);
      return r;
    }
    Request with_definitions(std::string predictors, std::string predictand) const {
      Request r = *this;
      r.predictors_definition = std::move(predictors), r.predictand_definition = std::move(predictand);
      return r;
    }
  } request;
  std::string dir;  // folder of the manifest (set on read)

  void write(const std::string& path) const;  // atomically
  static FetchManifest read(const std::string& path);  // InputError naming the path
  std::string path_of(const FetchedFile& f) const { return dir + "/" + f.file; }
  bool has_predictand() const { return !predictand.name.empty(); }
};

}  // namespace ds
