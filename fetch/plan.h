// What `fetch` will read, worked out from the request (var@level list, lon/lat box, years,
// season) and the source's metadata (coordinates, attributes; no data values), before any data
// moves. The unit of work is a chunk: one field (variable@level) for one season-year.
//
// Seasons and years: a season that crosses the new year (its months are not ascending, as in
// season: [12, 1, 2] or [11, 12, 1, 2, 3]) is labelled by the year of its last month, as
// climate4R's loadeR does: year 2001 of DJF is December 2000, January and February 2001. The
// months before the wrap come from the previous year.
//
// Calendars: the season's days are counted in the source's own CF calendar (no 29 February on
// noleap, a 30 February on 360_day); day numbers are days since 1970-01-01 in that calendar.
//
// Files: a field is read from one file, or from one file per calendar year when the dataset
// keeps it so (a {year} url: a DJF chunk then reads December from the year before's file).
//
// Longitudes are requested in -180..180. A source stored in 0..360 is read in up to two pieces
// either side of its seam (e.g. 350..355 then 0..10 for a request of [-10, 10]), joined in the
// order of the normalized longitude, so the output is always ascending in -180..180.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fetch/dataset.h"
#include "fetch/redact.h"
#include "io/units.h"
#include "io/calendar.h"
#include "io/config.h"
#include "io/netcdf_file.h"

namespace ds {

struct IndexRun {
  size_t start = 0, count = 0;  // indices [start, start + count) of the source's axis
};

// Time steps [start, start + count) of file `source` (an index into FieldPlan::urls).
struct TimeRun {
  size_t source = 0, start = 0, count = 0;
};

// One requested field resolved against its source: which variable, which indices, how to
// unpack and convert. Everything a worker needs to read any chunk of the field.
struct FieldPlan {
  std::string name;            // "z@500", or the variable ("pr", "psl") without a level
  std::string var;             // standard variable name
  int level = 0;               // hPa; 0 for a single-level field
  std::string url;             // the (first) source; may hold credentials: print only redacted()
  std::vector<std::string> urls;  // every file the field reads: url alone, or one per calendar year
  // Each file's version when planned (source_version), beside urls: a chunk fetched from an
  // earlier version is fetched again.
  std::vector<std::string> source_versions;
  std::string native;          // variable name in the source
  DatasetVariable def;         // conversion and checks from the dataset definition
  std::string source_units;    // units attribute in the source
  std::string source_standard_name, source_long_name;  // kept in the fetched file (CF)
  std::string source_cell_methods;  // kept too ("time: mean": a daily mean, not an instant)
  // The source's own provenance (its title, institution, source, references, licence), kept in
  // the fetched file as original_<name>: the terms and the citation of the data travel with it.
  std::map<std::string, std::string> source_globals;
  UnitConversion convert;      // source_units -> def.target_units() (udunits2), before def.scale/offset
  Calendar calendar = Calendar::standard;  // the source's; day numbers count in it
  // The source's time bounds put some steps on another day than their stamps (stamped at an end
  // of their interval): days come from the bounds' middle, which earlier versions did not read.
  bool days_from_bounds = false;

  // The source variable's layout: axis positions of time, level (-1: none), lat and lon.
  int ndims = 0, t_ax = -1, z_ax = -1, y_ax = -1, x_ax = -1;
  std::vector<IndexRun> lon_runs;  // joined in order: ascending longitudes (lon_selection)
  IndexRun lat_run;
  bool lat_descending = false;
  std::vector<double> lon, lat;    // output coordinates (ascending)
  // The sides of the requested box the source's grid stops short of (its outermost centre more
  // than one grid step inside them), e.g. "west (from -9.375), north (to 44.76)"; empty when it
  // reaches every side. fetch then delivers what the source has and says so.
  std::string box_shortfall;
  // The cut reaches past the requested box (widened for the grid the field is regridded onto;
  // plan_field): "lon -12.5..7.5, lat 32.5..47.5, past the box (fetch.lon, fetch.lat) to the
  // west, south"; empty when it is the box.
  std::string widened;

  // How each file of urls stores the field (beside urls): yearly files are packed and marked
  // each on their own (ERA5 from the CDS: every file its own scale_factor and add_offset), and a
  // level dimension may list other levels in another year's file.
  struct Encoding {
    double pack_scale = 1, pack_offset = 0;  // values are unpacked, then converted (convert, def)
    bool has_fill = false;
    double fill = 0;
    std::vector<double> missing_values;      // CF missing_value: one or several
    double valid_min = -INFINITY, valid_max = INFINITY;  // CF valid_range / valid_min / valid_max
    bool range_unpacked = false;  // the range is in unpacked numbers (floats over packed integers)
    bool text_attribute = false;  // one of those attributes written as text (or empty)
    size_t level_index = 0;                  // along z_ax
  };
  std::vector<Encoding> encodings;
  // Whether a version before the per-file decoding read every file alike (ChunkPlan::request
  // then records no decoding, and chunks it fetched are kept).
  bool decoded_as_before = true;

  std::string redacted() const;          // url without credentials
  std::string out_units() const;         // units written
  size_t plane() const { return lon.size() * lat.size(); }
  std::string date(int64_t day) const { return to_string(date_from_days(day, calendar)); }  // YYYY-MM-DD
};

// One field for one season-year: the unit of download, retry and resume.
struct ChunkPlan {
  size_t field = 0;            // index into the fields of the plan
  int year = 0;                // season year
  std::vector<int64_t> days;   // output days, ascending, each present in the source
  std::vector<TimeRun> time_runs;   // the sources' time indices holding `days`, in order
  std::string file;            // relative to the fetch folder: chunks/<name>/<year>.nc (chunk_file)

  size_t values(const FieldPlan& f) const { return days.size() * f.plane(); }
  size_t bytes(const FieldPlan& f) const { return values(f) * sizeof(float); }  // on the wire
  // A one-line canonical description of the request (for the ledger): a chunk is reused only
  // when this is unchanged.
  std::string request(const FieldPlan& f) const;
  std::string label(const FieldPlan& f) const;  // "z@500 2001", for messages
  // The versions of the files it reads (FieldPlan::source_versions), "" when none is known.
  std::string source_version(const FieldPlan& f) const;
};

// What tells whether a source file changed since its chunks were fetched (a corrected dataset
// downloaded again under its old name, E-OBS v14 replaced by v20): a local file's size and
// modification time; a server's, the global attributes its provider changes with a new version
// (tracking_id, version, date_modified, ...), "" when it has none (then unchecked).
std::string source_version(const NcFile& src, const std::string& url);

// "<folder>/<name>/<year>.nc": a chunk's file, relative to the fetch folder.
std::string chunk_file(const std::string& folder, const std::string& name, int year);

struct FetchPlan {
  std::vector<FieldPlan> fields;
  std::vector<ChunkPlan> chunks;
  size_t bytes() const;
};

struct FieldWanted {
  // The predictand is a single-level field: a level-holding variable asked for as the predictand is
  // refused as such, not told to name a level (plan_field).
  enum class Role { predictor, predictand };
  std::string name, var;
  int level = 0;
  std::string key;  // the config key that asks for it, for messages ("": a predictor field)
  Role role = Role::predictor;

  FieldWanted() = default;
  FieldWanted(std::string name_, std::string var_, int level_ = 0, std::string key_ = "")
      : name(std::move(name_)), var(std::move(var_)), level(level_), key(std::move(key_)) {}
  // The predictand `var` as fetch.predictand.variable asks for it.
  static FieldWanted predictand(const std::string& var) {
    FieldWanted w(var, var, 0, "fetch.predictand.variable");
    w.role = Role::predictand;
    return w;
  }
};

// The (year, month) pairs of season-year `year`; see the header comment for wrapping seasons.
std::vector<std::pair<int, int>> season_months(int year, const std::vector<int>& season);

// Indices of `lon` (source degrees, any of -180..180 or 0..360, ascending) inside [lo, hi] as
// runs in output order, and the longitudes selected, ascending: each source column moved by whole
// turns to lie inside, so a range past +-180 (a widened cut, below) reads the columns across the
// seam with longitudes beyond it. A range wider than one turn takes the columns it reaches twice,
// one turn apart; otherwise each column is taken once. Throws InputError naming `where` if none
// is inside.
std::vector<IndexRun> lon_selection(const std::vector<double>& lon, double lo, double hi, const std::string& where,
                                    std::vector<double>& selected);

// The box plan_field cuts when the field is regridded onto grid `g` (see plan_field): `req`'s box
// widened to one source step (`source_dlon`, `source_dlat`: its widest spacing) beyond g's cells,
// latitudes clamped to -90..90; longitudes not clamped, so that cells at the +-180 seam are
// regridded from the source's columns on its other side too (as CDO's cyclic grids are).
struct CutBox {
  double lon_min = 0, lon_max = 0, lat_min = 0, lat_max = 0;
};
CutBox widened_cut(const Config::Fetch& req, const GridSpec& g, double source_dlon, double source_dlat);

// The source's cell_methods ("t: mean", "valid_time: mean (interval: 1 day)") in the fetched
// file's names: each `name:` that is a source dimension becomes the one `renamed` gives it
// (time, lat, lon); "" when it names anything else but area (a level dimension): better none
// than one that names a dimension the file does not have. Parenthesized comments stay as they are.
std::string fetched_cell_methods(const std::string& source, const std::map<std::string, std::string>& renamed);

// The source's global attributes a user of the data owes its providers: title, institution,
// source, references, license (or licence), doi and contact, each under its name in lower case
// whatever the source's case (E-OBS writes `References`; one name in two cases keeps both texts,
// joined by "; "), a number as its text; empty ones are left out.
std::map<std::string, std::string> provenance_globals(const NcFile& src);

// Opens the source at a URL (the caller opens each distinct URL once and keeps it).
using SourceOpener = std::function<const NcFile&(const std::string& url)>;

// The level (hPa) a variable's file states without a level dimension: a scalar coordinate (a
// 0-d plev/level/lev/pressure variable, or one named in its `coordinates` attribute) or its
// `level` attribute (with `level_units`, hPa when absent); units hPa, mbar, millibars, Pa.
// Returns false when the file states none; `how` says where it was found.
bool stated_level(const NcFile& src, int varid, double& hpa, std::string& how, const std::string& where);

// Resolves field `w` of `dataset`, whose files are found from `base` (the dataset's url or the
// run config's source) and the variable's url template, and adds its chunks for the requested
// years and season to `plan`. The level comes from a level dimension, a scalar coordinate or
// attribute (which must match the request), the variable's name or its file's name. InputError
// (naming the source, variable and what is wrong) for a missing file, variable, level, year,
// month or day, units udunits2 cannot convert to the definition's, calendars that differ
// between a field's files, or a time step that is not daily.
//
// `regridded_onto` (preprocess.predictor_grid for the predictors, predictand_grid when set for
// the predictand; null: the box as asked): the cut is the box widened, where that grid's cells
// reach past it, to one source grid step beyond those cells, so that conservative regridding sees
// whole source cells under the grid's edge cells and bilinear a centre beyond its outermost
// points. A box already wide enough is cut as it is. Never across a pole or the -180/180 seam.
void plan_field(const SourceOpener& open, const std::string& base, const Dataset& dataset, const FieldWanted& w,
                const Config::Fetch& request, FetchPlan& plan, const GridSpec* regridded_onto = nullptr);

// The same for several fields, with `src` the already open source at `url` (the dataset's base;
// other files the fields need are opened here).
void plan_source(const NcFile& src, const std::string& url, const Dataset& dataset, const std::vector<FieldWanted>& wanted,
                 const Config::Fetch& request, FetchPlan& plan);

}  // namespace ds
