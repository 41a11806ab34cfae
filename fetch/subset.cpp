#include "fetch/subset.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/error.h"
#include "io/netcdf_file.h"

namespace ds {

namespace {

constexpr float kFill = 1.0e20f;

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// Indices [first, last] of the ascending-or-descending coordinate `c` inside [lo, hi].
void index_range(const std::vector<double>& c, double lo, double hi, const std::string& what, const std::string& where,
                 size_t& first, size_t& count) {
  const double tol = 1e-6;
  std::vector<size_t> in;
  for (size_t i = 0; i < c.size(); ++i)
    if (c[i] >= lo - tol && c[i] <= hi + tol) in.push_back(i);
  if (in.empty()) {
    const auto [mn, mx] = std::minmax_element(c.begin(), c.end());
    throw InputError(where + ": no " + what + " inside [" + std::to_string(lo) + ", " + std::to_string(hi) +
                     "] (the source covers " + std::to_string(*mn) + ".." + std::to_string(*mx) + ")");
  }
  first = in.front();
  count = in.back() - in.front() + 1;
}

}  // namespace

std::string redact_credentials(const std::string& url) {
  const auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const auto at = url.find('@', scheme + 3);
  const auto slash = url.find('/', scheme + 3);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return url;
  return url.substr(0, scheme + 3) + url.substr(at + 1);
}

SubsetResult fetch_subset(const SubsetRequest& req, const std::string& out_path, const std::string& history) {
  const std::string src_name = redact_credentials(req.source);
  NcFile src = NcFile::open(req.source);
  const int v = src.var_id(req.variable);
  const std::string where = src_name + ": variable '" + req.variable + "'";

  // Identify the dimensions by their names (CF files from ERA/EWEMBI/CMIP use these).
  const auto dims = src.var_dims(v);
  int t_ax = -1, z_ax = -1, y_ax = -1, x_ax = -1;
  for (int i = 0; i < static_cast<int>(dims.size()); ++i) {
    if (one_of(dims[i], {"time", "t"})) t_ax = i;
    else if (one_of(dims[i], {"plev", "level", "lev", "pressure", "isobaric"})) z_ax = i;
    else if (one_of(dims[i], {"lat", "latitude", "y"})) y_ax = i;
    else if (one_of(dims[i], {"lon", "longitude", "x"})) x_ax = i;
    else throw InputError(where + ": unexpected dimension '" + dims[i] + "'");
  }
  if (t_ax < 0 || y_ax < 0 || x_ax < 0) throw InputError(where + ": needs time, lat and lon dimensions");
  if (req.level > 0 && z_ax < 0) throw InputError(where + ": has no level dimension but level " + std::to_string(req.level) + " hPa was requested");
  if (req.level == 0 && z_ax >= 0) throw InputError(where + ": has a level dimension; request it as var@level");

  const auto lon = src.read_coord(dims[x_ax]);
  const auto lat = src.read_coord(dims[y_ax]);
  const auto time = src.read_coord(dims[t_ax]);
  const int tv = src.var_id(dims[t_ax]);
  const TimeUnits tu = TimeUnits::parse(src.att_text(tv, "units"), src.att_text(tv, "calendar"), src_name + ": time");
  const Calendar cal = tu.calendar;

  size_t level_index = 0;
  if (z_ax >= 0) {
    auto plev = src.read_coord(dims[z_ax]);
    const std::string zu = src.att_text(src.var_id(dims[z_ax]), "units", "hPa");
    const double to_hpa = (zu == "Pa") ? 0.01 : 1.0;
    std::string have;
    bool found = false;
    for (size_t k = 0; k < plev.size(); ++k) {
      const double hpa = plev[k] * to_hpa;
      have += (k ? ", " : "") + std::to_string(static_cast<int>(std::lround(hpa)));
      if (std::abs(hpa - req.level) < 0.5) level_index = k, found = true;
    }
    if (!found) throw InputError(where + ": no level " + std::to_string(req.level) + " hPa (levels: " + have + ")");
  }

  size_t x0, nx, y0, ny;
  index_range(lon, req.lon_min, req.lon_max, "longitudes", where, x0, nx);
  index_range(lat, req.lat_min, req.lat_max, "latitudes", where, y0, ny);
  const bool lat_descending = lat.size() > 1 && lat[1] < lat[0];

  // Days of each time step; select per requested year and season.
  std::vector<int64_t> day(time.size());
  for (size_t i = 0; i < time.size(); ++i) day[i] = tu.day_of(time[i]);
  const Date first = date_from_days(day.front(), cal), last = date_from_days(day.back(), cal);
  for (int y = req.years.first; y <= req.years.last; ++y)
    if (y < first.year || y > last.year)
      throw InputError(where + ": no data for " + std::to_string(y) + " (the time axis covers " + to_string(first) +
                       ".." + to_string(last) + ")");

  const float fill = static_cast<float>(src.att_double(v, "_FillValue", src.att_double(v, "missing_value", NAN)));
  const double scale = src.att_double(v, "scale_factor", 1.0), offset = src.att_double(v, "add_offset", 0.0);

  AtomicFile out_file(out_path);
  NcFile out = NcFile::create(out_file.temp_path());
  const int dt = out.def_dim("time", 0), dy = out.def_dim("lat", ny), dx = out.def_dim("lon", nx);
  const int ot = out.def_var("time", NC_DOUBLE, {dt});
  out.put_att(ot, "standard_name", "time");
  out.put_att(ot, "units", "days since 1970-01-01 00:00:00");
  out.put_att(ot, "calendar", cf_name(cal));
  const int oy = out.def_var("lat", NC_DOUBLE, {dy});
  out.put_att(oy, "standard_name", "latitude");
  out.put_att(oy, "units", "degrees_north");
  const int ox = out.def_var("lon", NC_DOUBLE, {dx});
  out.put_att(ox, "standard_name", "longitude");
  out.put_att(ox, "units", "degrees_east");
  const int ov = out.def_var(req.variable, NC_FLOAT, {dt, dy, dx}, 1);
  for (const char* a : {"standard_name", "long_name"}) {
    const std::string s = src.att_text(v, a);
    if (!s.empty()) out.put_att(ov, a, s);
  }
  out.put_att(ov, "units", src.att_text(v, "units"));
  out.put_att(ov, "_FillValue", kFill, NC_FLOAT);
  if (req.level > 0) out.put_att(ov, "level_hPa", req.level, NC_INT);
  out.put_att(NC_GLOBAL, "Conventions", "CF-1.7");
  out.put_att(NC_GLOBAL, "source", src_name);
  out.put_att(NC_GLOBAL, "history", history);
  out.end_define();

  std::vector<double> lat_out(ny), lon_out(lon.begin() + x0, lon.begin() + x0 + nx);
  for (size_t j = 0; j < ny; ++j) lat_out[j] = lat[y0 + (lat_descending ? ny - 1 - j : j)];
  out.write(oy, lat_out.data());
  out.write(ox, lon_out.data());

  SubsetResult res;
  res.nlat = ny;
  res.nlon = nx;
  size_t missing = 0;
  const size_t plane = ny * nx;
  std::vector<float> buf, plane_out(plane);
  for (int y = req.years.first; y <= req.years.last; ++y) {
    // The contiguous run of time steps in year y: one hyperslab read per year and field.
    size_t t0 = time.size(), t1 = 0;
    for (size_t i = 0; i < day.size(); ++i)
      if (date_from_days(day[i], cal).year == y) t0 = std::min(t0, i), t1 = std::max(t1, i + 1);
    if (t0 >= t1) continue;
    std::vector<size_t> start(dims.size()), count(dims.size());
    start[t_ax] = t0, count[t_ax] = t1 - t0;
    start[y_ax] = y0, count[y_ax] = ny;
    start[x_ax] = x0, count[x_ax] = nx;
    if (z_ax >= 0) start[z_ax] = level_index, count[z_ax] = 1;
    // Dimension order other than (time, [level,] lat, lon) would need a transpose; CF sources use it.
    if (!(t_ax < y_ax && y_ax < x_ax && (z_ax < 0 || (t_ax < z_ax && z_ax < y_ax))))
      throw InputError(where + ": dimension order is not (time, [level,] lat, lon)");
    buf.resize((t1 - t0) * plane);
    src.read(v, start, count, buf.data());
    for (size_t i = t0; i < t1; ++i) {
      const Date d = date_from_days(day[i], cal);
      if (std::find(req.months.begin(), req.months.end(), d.month) == req.months.end()) continue;
      const float* p = &buf[(i - t0) * plane];
      for (size_t j = 0; j < ny; ++j) {
        const size_t jj = lat_descending ? ny - 1 - j : j;
        for (size_t k = 0; k < nx; ++k) {
          float val = p[jj * nx + k];
          if (!std::isfinite(val) || val == fill || std::abs(val) >= 1e19f) {
            val = kFill;
            ++missing;
          } else {
            val = static_cast<float>(val * scale + offset);
          }
          plane_out[j * nx + k] = val;
        }
      }
      const double tday = static_cast<double>(day[i]);
      out.write(ot, {res.ntime}, {1}, &tday);
      out.write(ov, {res.ntime, 0, 0}, {1, ny, nx}, plane_out.data());
      ++res.ntime;
    }
  }
  if (res.ntime == 0) throw InputError(where + ": no time steps in the requested years and season");
  out.close();
  out_file.commit();
  res.missing_share = static_cast<double>(missing) / static_cast<double>(res.ntime * plane);
  return res;
}

Field read_field(const std::string& path, const std::string& variable) {
  NcFile f = NcFile::open(path);
  Field out;
  out.path = path;
  out.variable = variable;
  const int v = f.var_id(variable);
  out.units = f.att_text(v, "units");
  out.level = static_cast<int>(f.att_double(v, "level_hPa", 0));
  out.lon = f.read_coord("lon");
  out.lat = f.read_coord("lat");
  const auto t = f.read_coord("time");
  const TimeUnits tu =
      TimeUnits::parse(f.att_text(f.var_id("time"), "units"), f.att_text(f.var_id("time"), "calendar"), path + ": time");
  for (double x : t) out.days.push_back(tu.day_of(x));
  out.values.resize(t.size() * out.lat.size() * out.lon.size());
  if (!out.values.empty()) f.read(v, {0, 0, 0}, {t.size(), out.lat.size(), out.lon.size()}, out.values.data());
  const float fill = static_cast<float>(f.att_double(v, "_FillValue", kFill));
  for (auto& x : out.values)
    if (x == fill) x = std::numeric_limits<float>::quiet_NaN();
  return out;
}

}  // namespace ds
