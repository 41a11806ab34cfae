// The coordinate part every product file of downscale shares (precipitation_file,
// predictand_file): a daily CF time axis with bounds in days since 1970-01-01 of the data's own
// calendar, latitude and longitude, so both files read alike in CDO, xarray and Panoply.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/netcdf_file.h"

namespace ds {

// Latitude and longitude variables, with their bounds where an axis has two boxes or more (the
// boxes' edges, so that area weights and conservative regridding in CDO or xESMF take the boxes
// as downscale did); -1 for bounds not defined.
struct CfLatLon {
  int lat = -1, lon = -1, lat_bnds = -1, lon_bnds = -1;
};
// Defines lat (and lat_bnds), then lon (and lon_bnds) on the given dimensions, in define mode:
// every file of downscale on a lat-lon grid (predictions, evaluate/scores.nc).
CfLatLon define_cf_lat_lon(NcFile& nc, int lat_dim, size_t nlat, int lon_dim, size_t nlon, int bnds_dim);
// Writes them once the file left define mode, the bounds by cf_bounds.
void write_cf_lat_lon(NcFile& nc, const CfLatLon& a, const std::vector<double>& lat, const std::vector<double>& lon);

struct CfAxes {
  int time_dim = -1, lat_dim = -1, lon_dim = -1;
  int time = -1, time_bnds = -1;
  CfLatLon space;
};

// Defines time (unlimited), time_bnds, then lat and lon (define_cf_lat_lon); `calendar` is a CF
// name (calendar.h cf_name).
CfAxes define_cf_axes(NcFile& nc, size_t nlat, size_t nlon, const std::string& calendar);
// Writes the coordinates once the file left define mode: time at the middle of each day, the
// bounds the day itself (the values are daily means); lat and lon by write_cf_lat_lon.
void write_cf_axes(NcFile& nc, const CfAxes& a, const std::vector<int64_t>& days, const std::vector<double>& lat,
                   const std::vector<double>& lon);
// The day of each step, taken from the middle of its CF cell (the `bounds` variable, n x 2, in
// the time's units) where the file has one, else from the stamp. Daily means stamped at the end
// of their interval (the next day at 00:00, as some models write them) would otherwise be read
// one day late, each day's value under the next day's date (fetch reads sources so, and
// preprocess and predict the fetched files, which a user's CDO step may have stamped anew).
// A time stored as 32-bit float is read to its precision: a value within the float's spacing
// below midnight is that midnight's day (float seconds since 1900 put every second midnight
// 128 s early or late). `moved`: how many steps the bounds put on another day than their stamp. InputError naming
// `where` for bounds not n x 2 or wider than a day, a stamp outside its interval, or a time value
// that is no date.
std::vector<int64_t> cf_days(const NcFile& f, int time_var, const std::string& time_name, const TimeUnits& tu,
                             const std::string& where, size_t& moved);
// The line that says cf_days took `moved` steps of `where` from their bounds (the variable
// `bounds`, named when given), not their stamps.
std::string days_from_bounds_note(const std::string& where, size_t moved, const std::string& bounds = "");
// Days (floored time values) and the calendar attribute's CF name ("standard" when absent).
std::vector<int64_t> read_cf_days(const NcFile& nc, std::string* calendar);

// A scalar vertical coordinate (CF 5.7: a field's single level, named in its `coordinates`),
// defined in define mode; its value is written after: fetch's plev in Pa, a prediction's height.
int define_scalar_vertical(NcFile& nc, const std::string& name, const std::string& standard_name,
                           const std::string& long_name, const std::string& units, const std::string& positive);

// Near-surface air temperature (tas, tasmax, tasmin) is at 2 m, CMIP's and CORDEX's scalar
// `height` coordinate: without it CDO and the CF checkers take the field for a surface one.
// define_2m_height defines it (-1 for other variables); its fields name it in `coordinates`
// (a prediction's "height lat lon", scores.nc's "height": its lat and lon are dimensions alone);
// write_2m_height writes its value after define mode (nothing for -1).
bool at_2m_height(const std::string& variable);
int define_2m_height(NcFile& nc, const std::string& variable);
void write_2m_height(NcFile& nc, int height);

// Whether `units` is a temperature's: udunits2 converts it to K (degC, degK, °C, "degrees
// Celsius"). Such a variable gets CF-1.11's units_metadata, "temperature: on_scale" for a value, "temperature: difference" for a bias,
// RMSE or standard deviation, which a unit-aware tool converting degC to K must not shift.
bool is_temperature_unit(const std::string& units);

// CF bounds of boxes centred at `centres` (ascending or descending, at least 2): midpoints
// between neighbours, the first and last box as wide as their neighbour's gap; latitudes
// clamped to the poles. (n) centres -> (n, 2), each box's two edges in the centres' order. An
// axis of one box has no neighbour to size it by: the files give it no bounds.
std::vector<double> cf_bounds(const std::vector<double>& centres, bool latitude);

std::string utc_now();  // "2026-11-22T12:00:00Z", for history attributes

// The global attributes every prediction file carries (in define mode): CF-1.8, title, source,
// history stamped with utc_now(), the checkpoint and config it came from, then `extra`.
void put_prediction_globals(NcFile& nc, const std::string& title, const std::string& source,
                            const std::string& history, const std::string& checkpoint, const std::string& config,
                            const std::map<std::string, std::string>& extra);

// The global attributes of a prediction that evaluate checks it against: predict writes them
// (in put_prediction_globals' `extra`), get_prediction_checks reads them back.
inline const char* const kStoreIdentityAttr = "store_identity";      // the store's identity (io/store_identity.h)
inline const char* const kCheckpointSumAttr = "checkpoint_sha256";   // the checkpoint file as it was loaded
inline const char* const kModelSumAttr = "model_sha256";             // the model in it: spec and tensors

// Back into `attributes`: those three, where the file has them (older ones lack them).
void get_prediction_checks(const NcFile& nc, std::map<std::string, std::string>& attributes);

// What the two product writers (PrecipitationWriter, PredictandWriter) share: the file at its
// temporary name, its `days` written a block at a time in order, and the rename once all are.
struct PredictionFileDays {
  PredictionFileDays(const std::string& path, size_t days);
  AtomicFile file;
  NcFile nc;
  size_t days = 0, written = 0;
  // Error naming the file if `n` more days would pass its end.
  void check_block(size_t n) const;
  // Error naming the file unless every day was written; else closes it and, unless a stop was
  // requested meanwhile (the previous output then stays), renames it into place.
  void commit();
};

}  // namespace ds
