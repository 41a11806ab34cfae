#include "io/cf_axes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>

#include "io/calendar.h"
#include "io/error.h"
#include "io/stop_signal.h"
#include "io/units.h"

namespace ds {

CfAxes define_cf_axes(NcFile& nc, size_t ny, size_t nx, const std::string& calendar) {
  CfAxes a;
  a.time_dim = nc.def_dim("time", 0);
  a.lat_dim = nc.def_dim("lat", ny);
  a.lon_dim = nc.def_dim("lon", nx);
  const int db = nc.def_dim("bnds", 2);
  a.time = nc.def_var("time", NC_DOUBLE, {a.time_dim});
  nc.put_att(a.time, "standard_name", "time");
  nc.put_att(a.time, "long_name", "time");
  nc.put_att(a.time, "units", "days since 1970-01-01 00:00:00");
  nc.put_att(a.time, "calendar", calendar);
  nc.put_att(a.time, "bounds", "time_bnds");
  nc.put_att(a.time, "axis", "T");
  a.time_bnds = nc.def_var("time_bnds", NC_DOUBLE, {a.time_dim, db});
  a.space = define_cf_lat_lon(nc, a.lat_dim, ny, a.lon_dim, nx, db);
  return a;
}

CfLatLon define_cf_lat_lon(NcFile& nc, int lat_dim, size_t nlat, int lon_dim, size_t nlon, int bnds_dim) {
  CfLatLon a;
  const auto axis = [&](const char* name, const char* standard_name, const char* units, const char* cf_axis,
                        int dim, size_t n, int& var, int& bnds) {
    var = nc.def_var(name, NC_DOUBLE, {dim});
    nc.put_att(var, "standard_name", standard_name);
    nc.put_att(var, "long_name", standard_name);
    nc.put_att(var, "units", units);
    nc.put_att(var, "axis", cf_axis);
    if (n > 1) {  // one box has no neighbour to size it by (cf_bounds)
      nc.put_att(var, "bounds", std::string(name) + "_bnds");
      bnds = nc.def_var(std::string(name) + "_bnds", NC_DOUBLE, {dim, bnds_dim});
    }
  };
  axis("lat", "latitude", "degrees_north", "Y", lat_dim, nlat, a.lat, a.lat_bnds);
  axis("lon", "longitude", "degrees_east", "X", lon_dim, nlon, a.lon, a.lon_bnds);
  return a;
}

void write_cf_lat_lon(NcFile& nc, const CfLatLon& a, const std::vector<double>& lat, const std::vector<double>& lon) {
  nc.write(a.lat, lat.data());
  nc.write(a.lon, lon.data());
  if (a.lat_bnds >= 0) nc.write(a.lat_bnds, {0, 0}, {lat.size(), 2}, cf_bounds(lat, true).data());
  if (a.lon_bnds >= 0) nc.write(a.lon_bnds, {0, 0}, {lon.size(), 2}, cf_bounds(lon, false).data());
}

void write_cf_axes(NcFile& nc, const CfAxes& a, const std::vector<int64_t>& days, const std::vector<double>& lat,
                   const std::vector<double>& lon) {
  write_cf_lat_lon(nc, a.space, lat, lon);
  const size_t nt = days.size();
  if (!nt) return;
  std::vector<double> t(nt), bnds(2 * nt);
  for (size_t i = 0; i < nt; ++i) {
    t[i] = static_cast<double>(days[i]) + 0.5;  // the middle of the day the mean is over
    bnds[2 * i] = static_cast<double>(days[i]);
    bnds[2 * i + 1] = static_cast<double>(days[i] + 1);
  }
  nc.write(a.time, {0}, {nt}, t.data());
  nc.write(a.time_bnds, {0, 0}, {nt, 2}, bnds.data());
}

int define_scalar_vertical(NcFile& nc, const std::string& name, const std::string& standard_name,
                           const std::string& long_name, const std::string& units, const std::string& positive) {
  const int v = nc.def_var(name, NC_DOUBLE, {});
  nc.put_att(v, "standard_name", standard_name);
  nc.put_att(v, "long_name", long_name);
  nc.put_att(v, "units", units);
  nc.put_att(v, "positive", positive);
  nc.put_att(v, "axis", "Z");
  return v;
}

bool at_2m_height(const std::string& variable) {
  return variable == "tas" || variable == "tasmax" || variable == "tasmin";
}

int define_2m_height(NcFile& nc, const std::string& variable) {
  return at_2m_height(variable) ? define_scalar_vertical(nc, "height", "height", "height", "m", "up") : -1;
}

void write_2m_height(NcFile& nc, int height) {
  if (height < 0) return;
  const double two_metres = 2.0;
  nc.write(height, &two_metres);
}

std::vector<double> cf_bounds(const std::vector<double>& c, bool latitude) {
  const size_t n = c.size();
  if (n < 2) throw Error("cf_bounds: " + std::to_string(n) + " centres: a box needs a neighbour to be sized by");
  std::vector<double> b(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const double before = i > 0 ? 0.5 * (c[i - 1] + c[i]) : c[0] - 0.5 * (c[1] - c[0]);
    const double after = i + 1 < n ? 0.5 * (c[i] + c[i + 1]) : c[n - 1] + 0.5 * (c[n - 1] - c[n - 2]);
    b[2 * i] = latitude ? std::clamp(before, -90.0, 90.0) : before;
    b[2 * i + 1] = latitude ? std::clamp(after, -90.0, 90.0) : after;
  }
  return b;
}

namespace {

// How far a value of `var` may lie from the time it was meant to be, in seconds: a 32-bit
// float's spacing at the value (midnights in float seconds since 1900 are up to 128 s off around
// 2000, half of them before midnight, and would be floored onto the day before); 0 for others.
double stored_resolution(const NcFile& f, int var, double value, const TimeUnits& tu) {
  if (f.var_type(var) != NC_FLOAT || !std::isfinite(value)) return 0;
  const float v = std::abs(static_cast<float>(value));
  return (std::nextafter(v, std::numeric_limits<float>::infinity()) - v) * tu.seconds_per_unit;
}

struct DayTimes {
  std::vector<double> t;           // each step's time to take its day from
  std::vector<double> resolution;  // and how far it may be off as stored (stored_resolution)
};

// The time of each step to take its day from (cf_days): its cell's middle, else its stamp.
DayTimes cf_day_times(const NcFile& f, int time_var, const std::string& time_name, const TimeUnits& tu,
                      const std::string& where, size_t& moved) {
  DayTimes out;
  std::vector<double>& t = out.t;
  t = f.read_coord(time_name);
  for (double x : t) out.resolution.push_back(stored_resolution(f, time_var, x, tu));
  moved = 0;
  const std::string bounds = f.att_text(time_var, "bounds");
  if (bounds.empty() || !f.has_var(bounds)) return out;
  const int bv = f.var_id(bounds);
  const std::vector<std::string> dims = f.var_dims(bv);
  if (dims.size() != 2 || f.dim_len(dims[0]) != t.size() || f.dim_len(dims[1]) != 2)
    throw InputError(where + ": bounds variable '" + bounds + "' is not " + std::to_string(t.size()) +
                     " x 2 (CF: one interval per time step)");
  std::vector<double> b(2 * t.size());
  if (!t.empty()) f.read(bv, {0, 0}, {t.size(), 2}, b.data());
  for (size_t i = 0; i < t.size(); ++i) {
    if (!std::isfinite(t[i])) continue;  // no date: TimeUnits::day_of says so, naming the value
    // A thousandth of the interval (86 s of a day) for stamps and bounds computed or stored with
    // rounding apart, and what their storage rounds away (float seconds: up to 128 s each); a
    // stamp a day or an hour off its interval is still refused.
    const double stored = (std::max(stored_resolution(f, bv, b[2 * i], tu), stored_resolution(f, bv, b[2 * i + 1], tu)) +
                           out.resolution[i]) / tu.seconds_per_unit;
    const double slack = 1e-3 * std::abs(b[2 * i + 1] - b[2 * i]) + stored;
    if (!(b[2 * i] - slack <= t[i] && t[i] <= b[2 * i + 1] + slack))
      throw InputError(where + ": time step " + std::to_string(i) + " (" + fmt::format("{:g}", t[i]) + ") lies outside its bounds [" +
                       fmt::format("{:g}", b[2 * i]) + ", " + fmt::format("{:g}", b[2 * i + 1]) + "] ('" + bounds + "')");
    // A daily value's interval is a day at most (00:00 to 00:00, or centred on midnight), to the
    // same thousandth as the stamp: wider, its middle is no day of its own (bounds widened by an edit).
    if ((std::abs(b[2 * i + 1] - b[2 * i]) - stored) * tu.seconds_per_unit > 86400 * 1.001)
      throw InputError(where + ": time step " + std::to_string(i) + "'s bounds [" + fmt::format("{:g}", b[2 * i]) + ", " +
                       fmt::format("{:g}", b[2 * i + 1]) + "] ('" + bounds + "') span more than a day: not daily data");
    const double middle = 0.5 * (b[2 * i] + b[2 * i + 1]);
    const double middle_resolution = stored_resolution(f, bv, b[2 * i + 1], tu);
    moved += tu.day_of(middle, where, middle_resolution) != tu.day_of(t[i], where, out.resolution[i]);
    t[i] = middle;
    out.resolution[i] = middle_resolution;
  }
  return out;
}

}  // namespace

std::vector<int64_t> cf_days(const NcFile& f, int time_var, const std::string& time_name, const TimeUnits& tu,
                             const std::string& where, size_t& moved) {
  const DayTimes dt = cf_day_times(f, time_var, time_name, tu, where, moved);
  std::vector<int64_t> days;
  for (size_t i = 0; i < dt.t.size(); ++i) days.push_back(tu.day_of(dt.t[i], where, dt.resolution[i]));
  return days;
}

std::string days_from_bounds_note(const std::string& where, size_t moved, const std::string& bounds) {
  return where + ": " + std::to_string(moved) +
         " time step(s) stamped at an end of their interval: each day is taken from the middle of its time bounds" +
         (bounds.empty() ? "" : " ('" + bounds + "')") + ", not from the stamp";
}


std::vector<int64_t> read_cf_days(const NcFile& nc, std::string* calendar) {
  const int vt = nc.var_id("time");
  const std::string where = nc.path() + ": time";
  // The file's own units and calendar: a file another tool rewrote (cdo, xarray) still reads.
  const TimeUnits tu = TimeUnits::parse(nc.att_text(vt, "units", "days since 1970-01-01"), nc.att_text(vt, "calendar"), where);
  if (calendar) *calendar = cf_name(tu.calendar);
  std::vector<int64_t> days;
  for (double x : nc.read_coord("time")) days.push_back(tu.day_of(x, where));
  return days;
}

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

void put_prediction_globals(NcFile& nc, const std::string& title, const std::string& source,
                            const std::string& history, const std::string& checkpoint, const std::string& config,
                            const std::map<std::string, std::string>& extra) {
  nc.put_att(NC_GLOBAL, "Conventions", "CF-1.8");
  nc.put_att(NC_GLOBAL, "title", title);
  nc.put_att(NC_GLOBAL, "source", source);
  nc.put_att(NC_GLOBAL, "history", utc_now() + ": " + history);
  nc.put_att(NC_GLOBAL, "checkpoint", checkpoint);
  nc.put_att(NC_GLOBAL, "config", config);
  for (const auto& [k, v] : extra) nc.put_att(NC_GLOBAL, k, v);
}

void get_prediction_checks(const NcFile& nc, std::map<std::string, std::string>& attributes) {
  for (const char* key : {kStoreIdentityAttr, kCheckpointSumAttr, kModelSumAttr})
    if (nc.has_att(NC_GLOBAL, key)) attributes[key] = nc.att_text(NC_GLOBAL, key);
}

PredictionFileDays::PredictionFileDays(const std::string& path, size_t n)
    : file(path), nc(NcFile::create(file.temp_path())), days(n) {}

void PredictionFileDays::check_block(size_t n) const {
  if (written + n > days)
    throw Error(file.final_path() + ": days " + std::to_string(written) + ".." + std::to_string(written + n - 1) +
                " written to a file of " + std::to_string(days) + " days");
}

void PredictionFileDays::commit() {
  const std::string& path = file.final_path();
  if (written != days)
    throw Error(path + ": " + std::to_string(written) + " of " + std::to_string(days) +
                " days written; the file is not complete");
  nc.close();
  // A stop request (Ctrl-C, Slurm's SIGTERM) that came while the file was written: the previous
  // output stays, the new one is removed, and the stage exits 128 + the signal.
  throw_if_stop_requested("writing " + path + "; the previous file is kept");
  file.commit();
}

bool is_temperature_unit(const std::string& units) { return units_convertible(units, "K"); }

}  // namespace ds
