#include "fetch/plan.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "io/calendar.h"
#include "io/error.h"
#include "fetch/subset.h"

namespace ds {

namespace {

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// Longitude in [-180, 180).
double normalize_lon(double lon) {
  double x = std::fmod(lon + 180.0, 360.0);
  if (x < 0) x += 360.0;
  return x - 180.0;
}

std::string num(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

}  // namespace

std::string FieldPlan::redacted() const { return redact_credentials(url); }
std::string FieldPlan::out_units() const { return def.std_units.empty() ? source_units : def.std_units; }

std::string ChunkPlan::label(const FieldPlan& f) const { return f.name + " " + std::to_string(year); }

std::string ChunkPlan::request(const FieldPlan& f) const {
  std::ostringstream s;
  s.precision(10);
  s << f.redacted() << " " << f.native;
  if (f.z_ax >= 0) s << " level " << f.level;
  s << " lon " << f.lon.front() << ".." << f.lon.back() << " (" << f.lon.size() << ")";
  s << " lat " << f.lat.front() << ".." << f.lat.back() << " (" << f.lat.size() << ")";
  s << " days " << to_string(civil_from_days(days.front())) << ".." << to_string(civil_from_days(days.back())) << " ("
    << days.size() << ")";
  s << " x" << f.def.scale << "+" << f.def.offset << " " << f.out_units();
  return s.str();
}

size_t FetchPlan::bytes() const {
  size_t n = 0;
  for (const auto& c : chunks) n += c.bytes(fields[c.field]);
  return n;
}

std::vector<std::pair<int, int>> season_months(int year, const std::vector<int>& season) {
  // The season wraps after the last position where the month number falls.
  size_t wrap = 0;
  for (size_t i = 1; i < season.size(); ++i)
    if (season[i] < season[i - 1]) wrap = i;
  std::vector<std::pair<int, int>> out;
  for (size_t i = 0; i < season.size(); ++i) out.emplace_back(i < wrap ? year - 1 : year, season[i]);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<IndexRun> lon_selection(const std::vector<double>& lon, double lo, double hi, const std::string& where,
                                    std::vector<double>& selected) {
  const double tol = 1e-6;
  std::vector<std::pair<double, size_t>> in;  // (normalized lon, index)
  for (size_t i = 0; i < lon.size(); ++i) {
    const double x = normalize_lon(lon[i]);
    if (x >= lo - tol && x <= hi + tol) in.emplace_back(x, i);
  }
  if (in.empty()) {
    const auto [mn, mx] = std::minmax_element(lon.begin(), lon.end());
    throw InputError(where + ": no longitudes inside [" + num(lo) + ", " + num(hi) + "] (the source covers " + num(*mn) +
                     ".." + num(*mx) + " degrees east)");
  }
  std::sort(in.begin(), in.end());
  std::vector<IndexRun> runs;
  selected.clear();
  for (size_t k = 0; k < in.size(); ++k) {
    if (k > 0 && std::abs(in[k].first - in[k - 1].first) < tol)
      throw InputError(where + ": longitude " + num(in[k].first) + " appears twice (at " + num(lon[in[k - 1].second]) +
                       " and " + num(lon[in[k].second]) + ")");
    selected.push_back(in[k].first);
    if (!runs.empty() && runs.back().start + runs.back().count == in[k].second) ++runs.back().count;
    else runs.push_back({in[k].second, 1});
  }
  return runs;
}

void plan_source(const NcFile& src, const std::string& url, const Dataset& dataset, const std::vector<FieldWanted>& wanted,
                 const Config::Fetch& req, FetchPlan& plan) {
  const std::string src_name = redact_credentials(url);
  for (const auto& w : wanted) {
    FieldPlan f;
    f.name = w.name;
    f.var = w.var;
    f.level = w.level;
    f.url = url;
    f.def = dataset.variable(w.var);
    f.native = f.def.native_name(w.level);
    const int v = src.var_id(f.native);
    const std::string where = src_name + ": variable '" + f.native + "'";

    const auto dims = src.var_dims(v);
    f.ndims = static_cast<int>(dims.size());
    for (int i = 0; i < f.ndims; ++i) {
      if (one_of(dims[i], {"time", "t"})) f.t_ax = i;
      else if (one_of(dims[i], {"plev", "level", "lev", "pressure", "isobaric"})) f.z_ax = i;
      else if (one_of(dims[i], {"lat", "latitude", "y"})) f.y_ax = i;
      else if (one_of(dims[i], {"lon", "longitude", "x"})) f.x_ax = i;
      else throw InputError(where + ": unexpected dimension '" + dims[i] + "'");
    }
    if (f.t_ax < 0 || f.y_ax < 0 || f.x_ax < 0) throw InputError(where + ": needs time, lat and lon dimensions");
    if (!(f.t_ax < f.y_ax && f.y_ax < f.x_ax && (f.z_ax < 0 || (f.t_ax < f.z_ax && f.z_ax < f.y_ax))))
      throw InputError(where + ": dimension order is not (time, [level,] lat, lon)");
    const bool level_in_name = f.def.level_in_name();
    if (w.level > 0 && !level_in_name && f.z_ax < 0)
      throw InputError(where + ": has no level dimension but level " + std::to_string(w.level) + " hPa was requested");
    if (w.level == 0 && f.z_ax >= 0) throw InputError(where + ": has a level dimension; request it as var@level");
    if (level_in_name && f.z_ax >= 0) throw InputError(where + ": the level is in the name but it also has a level dimension");
    if (f.z_ax >= 0) {
      const auto plev = src.read_coord(dims[f.z_ax]);
      const std::string zu = src.att_text(src.var_id(dims[f.z_ax]), "units", "hPa");
      const double to_hpa = (zu == "Pa") ? 0.01 : 1.0;
      std::string have;
      bool found = false;
      for (size_t k = 0; k < plev.size(); ++k) {
        const double hpa = plev[k] * to_hpa;
        have += (k ? ", " : "") + std::to_string(static_cast<int>(std::lround(hpa)));
        if (std::abs(hpa - w.level) < 0.5) f.level_index = k, found = true;
      }
      if (!found) throw InputError(where + ": no level " + std::to_string(w.level) + " hPa (levels: " + have + ")");
    }

    f.source_units = src.att_text(v, "units");
    if (!f.def.accepts_units(f.source_units)) {
      std::string want;
      for (const auto& u : f.def.units) want += (want.empty() ? "'" : " or '") + u + "'";
      throw InputError(where + ": units are '" + f.source_units + "' but the dataset definition " + dataset.file +
                       " expects " + want + " (a different unit needs its own scale and offset)");
    }

    // Space: longitudes through the seam if need be, latitudes as one run.
    f.lon_runs = lon_selection(src.read_coord(dims[f.x_ax]), req.lon_min, req.lon_max, where, f.lon);
    const auto lat = src.read_coord(dims[f.y_ax]);
    f.lat_descending = lat.size() > 1 && lat[1] < lat[0];
    std::vector<size_t> in;
    for (size_t j = 0; j < lat.size(); ++j)
      if (lat[j] >= req.lat_min - 1e-6 && lat[j] <= req.lat_max + 1e-6) in.push_back(j);
    if (in.empty())
      throw InputError(where + ": no latitudes inside [" + num(req.lat_min) + ", " + num(req.lat_max) + "]");
    f.lat_run = {in.front(), in.back() - in.front() + 1};
    for (size_t j = 0; j < f.lat_run.count; ++j)
      f.lat.push_back(lat[f.lat_run.start + (f.lat_descending ? f.lat_run.count - 1 - j : j)]);

    // Time: the day of every step; daily, ascending, no repeats.
    const std::string tname = dims[f.t_ax];
    const int tv = src.var_id(tname);
    const TimeUnits tu = TimeUnits::parse(src.att_text(tv, "units"), src_name + ": time");
    check_calendar(src.att_text(tv, "calendar"), src_name + ": time");
    for (double t : src.read_coord(tname)) f.source_days.push_back(tu.day_of(t));
    for (size_t i = 1; i < f.source_days.size(); ++i)
      if (f.source_days[i] <= f.source_days[i - 1])
        throw InputError(src_name + ": time step " + std::to_string(i) + " (" + to_string(civil_from_days(f.source_days[i])) +
                         ") is not after the one before: fetch reads daily data (one value per day)");

    f.pack_scale = src.att_double(v, "scale_factor", 1.0);
    f.pack_offset = src.att_double(v, "add_offset", 0.0);
    f.has_fill = src.has_att(v, "_FillValue");
    f.fill = src.att_double(v, "_FillValue", 0);
    f.has_missing = src.has_att(v, "missing_value");
    f.missing_value = src.att_double(v, "missing_value", 0);

    const size_t fi = plan.fields.size();
    const Date first = civil_from_days(f.source_days.front()), last = civil_from_days(f.source_days.back());
    for (int y = req.years.first; y <= req.years.last; ++y) {
      ChunkPlan c;
      c.field = fi;
      c.year = y;
      c.file = "chunks/" + f.name + "/" + std::to_string(y) + ".nc";
      // Every calendar day of the season's months, each of which must be in the source.
      for (const auto& [yy, mm] : season_months(y, req.season)) {
        const int64_t d0 = days_from_civil({yy, mm, 1});
        const int64_t d1 = mm == 12 ? days_from_civil({yy + 1, 1, 1}) : days_from_civil({yy, mm + 1, 1});
        for (int64_t d = d0; d < d1; ++d) c.days.push_back(d);
      }
      size_t i = std::lower_bound(f.source_days.begin(), f.source_days.end(), c.days.front()) - f.source_days.begin();
      for (int64_t d : c.days) {
        while (i < f.source_days.size() && f.source_days[i] < d) ++i;
        if (i == f.source_days.size() || f.source_days[i] != d) {
          const bool outside = d < f.source_days.front() || d > f.source_days.back();
          throw InputError(where + ": no data for " + to_string(civil_from_days(d)) + " (season year " + std::to_string(y) +
                           ")" + (outside ? " (the time axis covers " + to_string(first) + ".." + to_string(last) + ")"
                                          : ": the time axis has a gap"));
        }
        if (!c.time_runs.empty() && c.time_runs.back().start + c.time_runs.back().count == i) ++c.time_runs.back().count;
        else c.time_runs.push_back({i, 1});
      }
      plan.chunks.push_back(std::move(c));
    }
    plan.fields.push_back(std::move(f));
  }
}

}  // namespace ds
