// What `fetch` will read, worked out from the request (var@level list, lon/lat box, years,
// season) and the source's metadata (coordinates, attributes; no data values), before any data
// moves. The unit of work is a chunk: one field (variable@level) for one season-year.
//
// Seasons and years: a season that crosses the new year (its months are not ascending, as in
// season: [12, 1, 2] or [11, 12, 1, 2, 3]) is labelled by the year of its last month, as
// climate4R's loadeR does: year 2001 of DJF is December 2000, January and February 2001. The
// months before the wrap come from the previous year.
//
// Longitudes are requested in -180..180. A source stored in 0..360 is read in up to two pieces
// either side of its seam (e.g. 350..355 then 0..10 for a request of [-10, 10]), joined in the
// order of the normalized longitude, so the output is always ascending in -180..180.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/config.h"
#include "fetch/dataset.h"
#include "io/netcdf_file.h"

namespace ds {

struct IndexRun {
  size_t start = 0, count = 0;  // indices [start, start + count) of the source's axis
};

// One requested field resolved against its source: which variable, which indices, how to
// unpack and convert. Everything a worker needs to read any chunk of the field.
struct FieldPlan {
  std::string name;            // "z@500", or the variable ("pr") without a level
  std::string var;             // standard variable name
  int level = 0;               // hPa; 0 for a single-level field
  std::string url;             // the source; may hold credentials: print only redacted()
  std::string native;          // variable name in the source
  DatasetVariable def;         // conversion and checks from the dataset definition
  std::string source_units;    // units attribute in the source

  // The source variable's layout: axis positions of time, level (-1: none), lat and lon.
  int ndims = 0, t_ax = -1, z_ax = -1, y_ax = -1, x_ax = -1;
  size_t level_index = 0;
  std::vector<IndexRun> lon_runs;  // joined in order: ascending longitudes in -180..180
  IndexRun lat_run;
  bool lat_descending = false;
  std::vector<double> lon, lat;    // output coordinates (ascending)
  std::vector<int64_t> source_days;  // the day (since 1970-01-01) of every source time step

  // Packing in the source (values are unpacked, then converted with def.scale/def.offset).
  double pack_scale = 1, pack_offset = 0;
  bool has_fill = false, has_missing = false;
  double fill = 0, missing_value = 0;

  std::string redacted() const;          // url without credentials
  std::string out_units() const;         // units written
  size_t plane() const { return lon.size() * lat.size(); }
};

// One field for one season-year: the unit of download, retry and resume.
struct ChunkPlan {
  size_t field = 0;            // index into the fields of the plan
  int year = 0;                // season year
  std::vector<int64_t> days;   // output days, ascending, each present in the source
  std::vector<IndexRun> time_runs;  // the source's time indices holding `days`, in order
  std::string file;            // relative to the fetch folder: chunks/<name>/<year>.nc

  size_t values(const FieldPlan& f) const { return days.size() * f.plane(); }
  size_t bytes(const FieldPlan& f) const { return values(f) * sizeof(float); }  // on the wire
  // A one-line canonical description of the request (for the ledger): a chunk is reused only
  // when this is unchanged.
  std::string request(const FieldPlan& f) const;
  std::string label(const FieldPlan& f) const;  // "z@500 2001", for messages
};

struct FetchPlan {
  std::vector<FieldPlan> fields;
  std::vector<ChunkPlan> chunks;
  size_t bytes() const;
};

struct FieldWanted {
  std::string name, var;
  int level = 0;
};

// The (year, month) pairs of season-year `year`; see the header comment for wrapping seasons.
std::vector<std::pair<int, int>> season_months(int year, const std::vector<int>& season);

// Indices of `lon` (source degrees, any of -180..180 or 0..360, ascending) inside
// [lo, hi] (-180..180) as runs in output order, and the normalized longitudes selected.
// Throws InputError naming `where` if none is inside.
std::vector<IndexRun> lon_selection(const std::vector<double>& lon, double lo, double hi, const std::string& where,
                                    std::vector<double>& selected);

// Resolves the fields of one source, whose metadata `src` already holds (opened from `url`),
// and adds their chunks for the requested years and season to `plan`. InputError (naming the
// source, variable and what is wrong) for a missing variable, level, year, month or day, units
// other than the dataset definition says, or a time step that is not daily.
void plan_source(const NcFile& src, const std::string& url, const Dataset& dataset, const std::vector<FieldWanted>& wanted,
                 const Config::Fetch& request, FetchPlan& plan);

}  // namespace ds
