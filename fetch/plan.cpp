#include "fetch/plan.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include "io/calendar.h"
#include "io/cf_axes.h"
#include "io/error.h"
#include "fetch/chunk.h"

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

std::string ChunkPlan::source_version(const FieldPlan& f) const {
  std::string out;
  size_t last = SIZE_MAX;
  for (const auto& r : time_runs)
    if (r.source != last) {
      last = r.source;
      const std::string& v = r.source < f.source_versions.size() ? f.source_versions[r.source] : std::string();
      if (!v.empty()) out += (out.empty() ? "" : "; ") + v;
    }
  return out;
}

std::string source_version(const NcFile& src, const std::string& url) {
  if (url.find("://") == std::string::npos) {
    struct stat st {};
    if (::stat(url.c_str(), &st) != 0) return "";
    return fmt::format("{} bytes, modified {}.{:09d}", static_cast<long long>(st.st_size),
                       static_cast<long long>(st.st_mtim.tv_sec), static_cast<long>(st.st_mtim.tv_nsec));
  }
  static const std::set<std::string> kVersionAttributes{
      "tracking_id", "version", "product_version", "date_created", "creation_date", "date_modified", "date_issued"};
  std::string out;
  for (const std::string& name : src.att_names(NC_GLOBAL)) {
    if (!kVersionAttributes.count(name)) continue;
    // A number (`version = 20` as some providers write it) is compared as well as text.
    static const std::string kNotText = "\x01";
    std::string value = src.att_text(NC_GLOBAL, name, kNotText);
    if (value == kNotText) value = fmt::format("{}", src.att_double(NC_GLOBAL, name, std::nan("")));
    out += (out.empty() ? "" : ", ") + name + "=" + value;
  }
  return out;
}

std::string ChunkPlan::request(const FieldPlan& f) const {
  std::ostringstream s;
  s.precision(10);
  // Every file the chunk reads (one, or two for a season across the new year in yearly files).
  size_t last = SIZE_MAX;
  for (const auto& r : time_runs)
    if (r.source != last) s << redact_credentials(f.urls[r.source]) << " ", last = r.source;
  s << f.native;
  if (f.z_ax >= 0) s << " level " << f.level;
  s << " lon " << f.lon.front() << ".." << f.lon.back() << " (" << f.lon.size() << ")";
  s << " lat " << f.lat.front() << ".." << f.lat.back() << " (" << f.lat.size() << ")";
  s << " days " << f.date(days.front()) << ".." << f.date(days.back()) << " (" << days.size() << ") "
    << cf_name(f.calendar);
  s << " " << f.source_units << " x" << f.convert.scale << "+" << f.convert.offset;
  s << " x" << f.def.scale << "+" << f.def.offset << " " << f.out_units();
  // How the files are decoded, where a version before each file was decoded by its own
  // attributes may have read them otherwise (by one file's packing, fill, missing value and
  // level; no valid range; text attributes as 0): every chunk of such a field is fetched again.
  // Others keep their chunks.
  last = SIZE_MAX;
  for (const auto& r : time_runs) {
    if (f.decoded_as_before || r.source == last || r.source >= f.encodings.size()) continue;
    last = r.source;
    const FieldPlan::Encoding& e = f.encodings[r.source];
    s << " decoded x" << e.pack_scale << "+" << e.pack_offset << " fill " << (e.has_fill ? num(e.fill) : "-")
      << " missing";
    for (double m : e.missing_values) s << " " << m;
    s << " valid " << e.valid_min << ".." << e.valid_max << (e.range_unpacked ? " unpacked" : "") << " level index "
      << e.level_index;
  }
  // The bounds' reading maps the same days to other records than the stamps' did: a chunk an
  // earlier version fetched from the stamps (a day late) is fetched again, not joined with ones of
  // the bounds' reading. Sources whose bounds agree with their stamps keep their chunks.
  if (f.days_from_bounds) s << " days from the time bounds";
  return s.str();
}

size_t FetchPlan::bytes() const {
  size_t n = 0;
  for (const auto& c : chunks) n += c.bytes(fields[c.field]);
  return n;
}

std::vector<std::pair<int, int>> season_months(int year, const std::vector<int>& season) {
  const size_t wrap = season_wrap(season);
  std::vector<std::pair<int, int>> out;
  for (size_t i = 0; i < season.size(); ++i) out.emplace_back(i < wrap ? year - 1 : year, season[i]);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<IndexRun> lon_selection(const std::vector<double>& lon, double lo, double hi, const std::string& where,
                                    std::vector<double>& selected) {
  const double tol = 1e-6;
  // A range wider than a turn (a grid widened across the +-180 seam of a global source) takes
  // the columns it reaches twice, one turn apart, so that the cells at the seam are regridded
  // from both sides (CDO's cyclic longitude). One turn or less takes each column once: where
  // both ends of [-180, 180] hold the same column, at its western end.
  const bool wraps = hi - lo > 360 + tol;
  std::vector<std::pair<double, size_t>> in;  // (normalized lon, index)
  for (size_t i = 0; i < lon.size(); ++i) {
    const double x = normalize_lon(lon[i]);  // -180..180, 180 itself read as -180
    bool taken = false;
    for (const double turn : {-360.0, 0.0, 360.0, 720.0}) {
      const double at = x + turn;
      if (at < lo - tol || at > hi + tol || (taken && !wraps)) continue;
      in.emplace_back(at, i);
      taken = true;
    }
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
    if (k > 0 && std::abs(in[k].first - in[k - 1].first) < tol) {
      // A global grid that repeats its first column one turn on (0..360 or -180..180 with both
      // ends, as regridded CMIP output and CDO's cyclic grids are written) holds that column
      // twice: the later copy is left out. Other duplicates are two columns for one meridian.
      if (std::abs(std::abs(lon[in[k].second] - lon[in[k - 1].second]) - 360) < tol) continue;
      throw InputError(where + ": longitude " + num(in[k].first) + " appears twice (at " + num(lon[in[k - 1].second]) +
                       " and " + num(lon[in[k].second]) + "), not one turn apart: two columns for one meridian");
    }
    selected.push_back(in[k].first);
    if (!runs.empty() && runs.back().start + runs.back().count == in[k].second) ++runs.back().count;
    else runs.push_back({in[k].second, 1});
  }
  return runs;
}

namespace {

// The widest spacing between neighbouring centres (a Gaussian grid's latitudes are uneven).
double largest_step(const std::vector<double>& c) {
  double s = 0;
  for (size_t i = 1; i < c.size(); ++i) s = std::max(s, std::abs(c[i] - c[i - 1]));
  return s;
}

}  // namespace

std::string fetched_cell_methods(const std::string& source, const std::map<std::string, std::string>& renamed) {
  std::istringstream in(source);
  std::string out;
  int depth = 0;  // inside a comment's parentheses
  for (std::string word; in >> word;) {
    const int opens = int(std::count(word.begin(), word.end(), '('));
    if (depth == 0 && opens == 0 && word.size() > 1 && word.back() == ':') {
      const std::string name = word.substr(0, word.size() - 1);
      const auto it = renamed.find(name);
      if (it != renamed.end()) word = it->second + ":";
      else if (name != "area") return "";
    }
    depth += opens - int(std::count(word.begin(), word.end(), ')'));
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

std::map<std::string, std::string> provenance_globals(const NcFile& src) {
  static const std::set<std::string> kept{"title", "institution", "source", "references",
                                          "license", "licence", "doi", "contact"};
  std::map<std::string, std::string> out;
  for (const std::string& name : src.att_names(NC_GLOBAL)) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (!kept.count(lower)) continue;
    std::string text = src.att_text(NC_GLOBAL, name);
    // A number (a DOI or licence id written as an integer) is the provider's text all the same.
    if (const double x = src.att_double(NC_GLOBAL, name, NAN); text.empty() && std::isfinite(x))
      text = fmt::format("{}", x);  // shortest round trip: 12345, not 12345.000000
    if (text.empty()) continue;
    // The same name in two cases (References and references): both texts, neither dropped.
    std::string& kept_text = out[lower];
    if (kept_text.empty()) kept_text = std::move(text);
    else if (kept_text != text) kept_text += "; " + text;
  }
  return out;
}

CutBox widened_cut(const Config::Fetch& req, const GridSpec& g, double source_dlon, double source_dlat) {
  CutBox b{req.lon_min, req.lon_max, req.lat_min, req.lat_max};
  const double half = g.step / 2;
  // The grid is written in the box's longitudes (config_validate refuses one a turn away).
  const double g_lo = std::min(g.lon_first, g.lon_last), g_hi = std::max(g.lon_first, g.lon_last);
  // Not clamped to -180..180: a grid whose cells reach the seam takes the source's columns beyond
  // it (lon_selection gives them longitudes past +-180), as the regridders need.
  b.lon_min = std::min(b.lon_min, g_lo - half - source_dlon);
  b.lon_max = std::max(b.lon_max, g_hi + half + source_dlon);
  b.lat_min = std::max(-90.0, std::min(b.lat_min, std::min(g.lat_first, g.lat_last) - half - source_dlat));
  b.lat_max = std::min(90.0, std::max(b.lat_max, std::max(g.lat_first, g.lat_last) + half + source_dlat));
  return b;
}

namespace {

const NcFile& cached_open(std::map<std::string, NcFile>& open, const std::string& url, const NcFile* first,
                          const std::string& first_url) {
  if (first && url == first_url) return *first;
  auto it = open.find(url);
  if (it == open.end()) it = open.emplace(url, open_source(url)).first;
  return it->second;
}

double to_hpa(double value, const std::string& units, const std::string& where) {
  const UnitConversion c = unit_conversion(units.empty() ? "hPa" : units, "hPa", where + ": level");
  return value * c.scale + c.offset;
}

std::string hpa_text(double hpa) { return num(std::round(hpa * 100) / 100); }

}  // namespace

bool stated_level(const NcFile& src, int v, double& hpa, std::string& how, const std::string& where) {
  // A scalar coordinate: named in `coordinates`, or one of the usual names.
  std::vector<std::string> names;
  {
    std::istringstream coords(src.att_text(v, "coordinates"));
    for (std::string n; coords >> n;) names.push_back(n);
  }
  for (const char* n : {"plev", "level", "lev", "pressure"}) names.push_back(n);
  for (const auto& n : names) {
    if (!src.has_var(n)) continue;
    const int c = src.var_id(n);
    int nd = 0;
    nc_inq_varndims(src.id(), c, &nd);
    if (nd != 0) continue;
    double x = 0;
    source_check(nc_get_var_double(src.id(), c, &x), where + ": scalar coordinate '" + n + "'");
    hpa = to_hpa(x, src.att_text(c, "units"), where);
    how = "scalar coordinate '" + n + "'";
    return true;
  }
  if (src.has_att(v, "level")) {
    hpa = to_hpa(src.att_double(v, "level", 0), src.att_text(v, "level_units"), where);
    how = "attribute 'level'";
    return true;
  }
  return false;
}

std::string chunk_file(const std::string& folder, const std::string& name, int year) {
  return folder + "/" + name + "/" + std::to_string(year) + ".nc";
}

void plan_field(const SourceOpener& open, const std::string& base, const Dataset& dataset, const FieldWanted& w,
                const Config::Fetch& req, FetchPlan& plan, const GridSpec* regridded_onto) {
  FieldPlan f;
  f.name = w.name;
  f.var = w.var;
  f.level = w.level;
  f.def = dataset.variable(w.var);
  // A variable whose name or file holds its level, asked for without one: not a file named
  // "..._hus0.nc" that is not there, but the field to write (the predictand has no level).
  if (w.level == 0 && (f.def.level_in_name() || f.def.level_in_url())) {
    const bool predictand = w.role == FieldWanted::Role::predictand;
    throw UsageError((w.key.empty() ? std::string("fetch") : w.key) + ": '" + w.name + "': dataset '" + dataset.name +
                     "' (" + (dataset.file.empty() ? "built in" : dataset.file) + ") holds " + w.var +
                     " on pressure levels" +
                     (predictand ? ", and the predictand is a single-level field"
                                 : ": name one, e.g. " + w.var + "@850"));
  }
  f.native = f.def.native_name(w.level);

  // The calendar years the season-years touch, and the file of each (one file unless {year}).
  std::vector<int> cal_years;
  for (int y = req.years.first; y <= req.years.last; ++y)
    for (const auto& [yy, mm] : season_months(y, req.season))
      if (cal_years.empty() || cal_years.back() != yy) cal_years.push_back(yy);
  std::sort(cal_years.begin(), cal_years.end());
  cal_years.erase(std::unique(cal_years.begin(), cal_years.end()), cal_years.end());
  const bool per_year = f.def.year_in_url();
  std::map<int, size_t> file_of_year;  // calendar year -> index into f.urls
  for (int yy : cal_years) {
    const std::string u = f.def.url_for(base, w.var, w.level, per_year ? yy : 0);
    if (f.urls.empty() || f.urls.back() != u) f.urls.push_back(u);
    file_of_year[yy] = f.urls.size() - 1;
  }
  if (f.urls.empty()) throw UsageError("fetch: no years requested");
  f.url = f.urls.front();

  const std::string src_name = redact_credentials(f.url);
  // A source that is not there: say where its path was set (the dataset definition's url, which a
  // copy of configs/ elsewhere takes along with {definition_dir}, or the config's source).
  const NcFile& src = [&]() -> const NcFile& {
    try {
      return open(f.url);
    } catch (const InputError& e) {
      // (Not for a variable with a url of its own outside the dataset's.)
      if (dataset.url_origin.empty() || base != dataset.url || f.url.rfind(base, 0) != 0) throw;
      throw InputError(std::string(e.what()) + " (" + redact_credentials(base) + " is from " + dataset.url_origin + ")");
    }
  }();
  const int v = src.var_id(f.native);
  const std::string where = src_name + ": variable '" + f.native + "'";

  const auto dims = src.var_dims(v);
  f.ndims = static_cast<int>(dims.size());
  for (int i = 0; i < f.ndims; ++i) {
    if (one_of(dims[i], {"time", "t", "valid_time"})) f.t_ax = i;
    else if (one_of(dims[i], {"plev", "level", "lev", "pressure", "isobaric", "pressure_level"})) f.z_ax = i;
    else if (one_of(dims[i], {"lat", "latitude", "y"})) f.y_ax = i;
    else if (one_of(dims[i], {"lon", "longitude", "x"})) f.x_ax = i;
    else throw InputError(where + ": unexpected dimension '" + dims[i] + "'");
  }
  if (f.t_ax < 0 || f.y_ax < 0 || f.x_ax < 0) throw InputError(where + ": needs time, lat and lon dimensions");
  if (!(f.t_ax < f.y_ax && f.y_ax < f.x_ax && (f.z_ax < 0 || (f.t_ax < f.z_ax && f.z_ax < f.y_ax))))
    throw InputError(where + ": dimension order is not (time, [level,] lat, lon)");

  // The level: a dimension to cut, else stated by the file (which must agree), else named by
  // the variable's or the file's name.
  const bool level_in_name = f.def.level_in_name(), level_in_url = f.def.level_in_url();
  const std::string wanted_level = std::to_string(w.level) + " hPa";
  // Each file's own: a year's file may list other levels, or state another level, than the first.
  const auto level_index_in = [&](const NcFile& file, const std::string& at) {
    const auto plev = file.read_coord(dims[f.z_ax]);
    const std::string zu = file.att_text(file.var_id(dims[f.z_ax]), "units", "hPa");
    std::string have;
    for (size_t k = 0; k < plev.size(); ++k) {
      const double hpa = to_hpa(plev[k], zu, at);
      have += (k ? ", " : "") + hpa_text(hpa);
      if (std::abs(hpa - w.level) < 0.5) return k;
    }
    throw InputError(at + ": no level " + wanted_level + " (levels: " + have + ")");
  };
  const auto check_stated_level = [&](const NcFile& file, int var, const std::string& at) {
    double hpa = 0;
    std::string how;
    const bool stated = stated_level(file, var, hpa, how, at);
    if (stated && w.level == 0)
      throw InputError(at + ": holds level " + hpa_text(hpa) + " hPa (" + how + "); request it as " + w.var + "@" +
                       hpa_text(hpa));
    if (stated && std::abs(hpa - w.level) >= 0.5)
      throw InputError(at + ": holds level " + hpa_text(hpa) + " hPa (" + how + ") but level " + wanted_level +
                       " was requested");
    return stated;
  };
  if (f.z_ax >= 0) {
    if (w.level == 0) throw InputError(where + ": has a level dimension; request it as " + w.var + "@level");
    if (level_in_name) throw InputError(where + ": the level is in the name but it also has a level dimension");
    (void)level_index_in(src, where);
  } else {
    const bool stated = check_stated_level(src, v, where);
    if (w.level > 0 && !stated && !level_in_name && !level_in_url)
      throw InputError(where + ": has no level dimension, scalar level coordinate or level attribute, but level " +
                       wanted_level + " was requested");
  }

  // Units: converted to the definition's through udunits2.
  f.source_units = src.att_text(v, "units");
  f.source_standard_name = src.att_text(v, "standard_name");
  f.source_long_name = src.att_text(v, "long_name");
  f.source_cell_methods = fetched_cell_methods(
      src.att_text(v, "cell_methods"), {{dims[f.t_ax], "time"}, {dims[f.y_ax], "lat"}, {dims[f.x_ax], "lon"}});
  f.source_globals = provenance_globals(src);
  const std::string target = f.def.target_units();
  if (!target.empty()) {
    if (f.source_units.empty())
      throw InputError(where + ": has no units attribute; the dataset definition " + dataset.file + " says '" + target + "'");
    f.convert = unit_conversion(f.source_units, target, where + " (dataset definition " + dataset.file + ")");
  }

  // Space: longitudes through the seam if need be, latitudes as one run; the box widened for
  // the grid the field is regridded onto (see plan.h).
  const auto lon = src.read_coord(dims[f.x_ax]);
  const auto lat = src.read_coord(dims[f.y_ax]);
  const auto step = [](const std::vector<double>& c) { return c.size() > 1 ? std::abs(c[1] - c[0]) : 0.0; };
  const double dx = step(lon), dy = step(lat);
  const CutBox cut = regridded_onto ? widened_cut(req, *regridded_onto, largest_step(lon), largest_step(lat))
                                    : CutBox{req.lon_min, req.lon_max, req.lat_min, req.lat_max};
  f.lon_runs = lon_selection(lon, cut.lon_min, cut.lon_max, where, f.lon);
  f.lat_descending = lat.size() > 1 && lat[1] < lat[0];
  std::vector<size_t> in;
  for (size_t j = 0; j < lat.size(); ++j)
    if (lat[j] >= cut.lat_min - 1e-6 && lat[j] <= cut.lat_max + 1e-6) in.push_back(j);
  if (in.empty()) throw InputError(where + ": no latitudes inside [" + num(cut.lat_min) + ", " + num(cut.lat_max) + "]");
  f.lat_run = {in.front(), in.back() - in.front() + 1};
  for (size_t j = 0; j < f.lat_run.count; ++j)
    f.lat.push_back(lat[f.lat_run.start + (f.lat_descending ? f.lat_run.count - 1 - j : j)]);
  // The sides it reaches past: on the others the source's outermost points inside the box are
  // the cut's (a coarse GCM grid's lie up to a cell inside it, and the box is then said to be cut
  // past on one side only, not everywhere).
  std::string past;
  const auto side = [&](bool beyond, const char* name) {
    if (beyond) past += std::string(past.empty() ? "" : ", ") + name;
  };
  side(f.lon.front() < req.lon_min - 1e-6, "west");
  side(f.lon.back() > req.lon_max + 1e-6, "east");
  side(f.lat.front() < req.lat_min - 1e-6, "south");
  side(f.lat.back() > req.lat_max + 1e-6, "north");
  if (!past.empty())
    f.widened = "lon " + num(f.lon.front()) + ".." + num(f.lon.back()) + ", lat " + num(f.lat.front()) + ".." +
                num(f.lat.back()) + ", past the box (fetch.lon, fetch.lat) to the " + past;

  // A cut wider than the box (for a grid's edge cells) may hold points while the box itself has
  // none within a step of it: the source does not cover the box at all.
  if (f.lon.back() < req.lon_min - dx - 1e-6 || f.lon.front() > req.lon_max + dx + 1e-6 ||
      f.lat.back() < req.lat_min - dy - 1e-6 || f.lat.front() > req.lat_max + dy + 1e-6)
    throw InputError(where + ": its grid (lon " + num(*std::min_element(lon.begin(), lon.end())) + ".." +
                     num(*std::max_element(lon.begin(), lon.end())) + ", lat " +
                     num(*std::min_element(lat.begin(), lat.end())) + ".." +
                     num(*std::max_element(lat.begin(), lat.end())) + ") does not reach the box fetch.lon [" +
                     num(req.lon_min) + ", " + num(req.lon_max) + "], fetch.lat [" + num(req.lat_min) + ", " +
                     num(req.lat_max) + "]");
  // A source grid that ends inside the box (a regional file, a limited-area model) delivers less
  // than asked: its outermost centre then lies more than one grid step inside that side.
  std::vector<std::string> short_of;
  if (dx > 0 && f.lon.front() - req.lon_min > dx + 1e-6) short_of.push_back("west (from " + num(f.lon.front()) + ")");
  if (dx > 0 && req.lon_max - f.lon.back() > dx + 1e-6) short_of.push_back("east (to " + num(f.lon.back()) + ")");
  if (dy > 0 && f.lat.front() - req.lat_min > dy + 1e-6) short_of.push_back("south (from " + num(f.lat.front()) + ")");
  if (dy > 0 && req.lat_max - f.lat.back() > dy + 1e-6) short_of.push_back("north (to " + num(f.lat.back()) + ")");
  for (const auto& side : short_of) f.box_shortfall += (f.box_shortfall.empty() ? "" : ", ") + side;

  // How a file stores the values (each file its own, read in the loop below).
  const auto encoding_of = [&](const NcFile& file, int var, const std::string& at) {
    FieldPlan::Encoding e;
    // (An earlier version read a text attribute as its fallback: such a field is fetched again.)
    for (const char* name : {"scale_factor", "add_offset", "_FillValue", "missing_value", "valid_range", "valid_min",
                             "valid_max"}) {
      nc_type type = NC_NAT;
      size_t len = 0;
      if (nc_inq_att(file.id(), var, name, &type, &len) == NC_NOERR && (type == NC_CHAR || type == NC_STRING || !len))
        e.text_attribute = true;
    }
    const auto one = [&](const char* name, double fallback) {
      const auto vals = file.att_numbers(var, name, at);
      if (vals.size() > 1)
        throw InputError(at + ": attribute " + name + " has " + std::to_string(vals.size()) + " values, not one");
      return vals.empty() ? fallback : vals[0];
    };
    e.pack_scale = one("scale_factor", 1.0);
    e.pack_offset = one("add_offset", 0.0);
    e.has_fill = file.has_att(var, "_FillValue");
    e.fill = one("_FillValue", 0.0);
    e.missing_values = file.att_numbers(var, "missing_value", at);
    // CF: values outside valid_range (or below valid_min, above valid_max) are missing: flags
    // such as 4000 in a short of 0..3000 look like data. The range is in the stored (packed)
    // numbers; written as floats over an integer variable that is packed, it is in the unpacked
    // ones (the NetCDF User Guide's reading, which netCDF-Java follows, and how some archives
    // write it).
    const auto range = file.att_numbers(var, "valid_range", at);
    if (!range.empty() && range.size() != 2)
      throw InputError(at + ": attribute valid_range has " + std::to_string(range.size()) + " values, not 2");
    e.valid_min = range.empty() ? one("valid_min", -INFINITY) : range[0];
    e.valid_max = range.empty() ? one("valid_max", INFINITY) : range[1];
    if (!(e.valid_min <= e.valid_max))
      throw InputError(at + ": its valid range [" + num(e.valid_min) + ", " + num(e.valid_max) + "] is empty");
    nc_type var_type = NC_FLOAT, range_type = NC_NAT;
    if (nc_inq_vartype(file.id(), var, &var_type) != NC_NOERR) throw InputError(at + ": its type cannot be read");
    for (const char* name : {"valid_range", "valid_min", "valid_max"})
      if (nc_inq_atttype(file.id(), var, name, &range_type) == NC_NOERR) break;
    const bool packed = e.pack_scale != 1 || e.pack_offset != 0;
    const bool integer = var_type != NC_FLOAT && var_type != NC_DOUBLE;
    e.range_unpacked = packed && integer && (range_type == NC_FLOAT || range_type == NC_DOUBLE);
    return e;
  };

  // Time, file by file: the day of every step (in the file's calendar, which all files of the
  // field share); daily, ascending, no repeats.
  std::vector<std::vector<int64_t>> source_days(f.urls.size());
  for (size_t k = 0; k < f.urls.size(); ++k) {
    const std::string name_k = redact_credentials(f.urls[k]);
    const NcFile& sk = k == 0 ? src : [&]() -> const NcFile& {
      try {
        return open(f.urls[k]);
      } catch (const InputError& e) {
        // The first year's file opened, so the dataset's url is right: this year is what is
        // missing (a server holding fewer years than fetch.years asks for).
        int year = 0;
        for (const auto& [yy, idx] : file_of_year)
          if (idx == k) year = yy;
        throw InputError(std::string(e.what()) + " (the " + f.name + " file for " + std::to_string(year) + "; " +
                         src_name + ", for " + std::to_string(file_of_year.begin()->first) +
                         ", opened: does the source hold every year of fetch.years?)");
      }
    }();
    f.source_versions.push_back(source_version(sk, f.urls[k]));
    const int vk = sk.var_id(f.native);
    if (k > 0) {
      // One file per year: the same variable on the same grid.
      if (sk.var_dims(vk) != dims) throw InputError(name_k + ": variable '" + f.native + "' has other dimensions than in " + src_name);
      if (sk.read_coord(dims[f.x_ax]) != lon || sk.read_coord(dims[f.y_ax]) != lat)
        throw InputError(name_k + ": variable '" + f.native + "' is on another grid than in " + src_name);
      if (sk.att_text(vk, "units") != f.source_units)
        throw InputError(name_k + ": variable '" + f.native + "' has units '" + sk.att_text(vk, "units") + "', '" +
                         f.source_units + "' in " + src_name);
    }
    const std::string where_k = name_k + ": variable '" + f.native + "'";
    f.encodings.push_back(encoding_of(sk, vk, where_k));
    if (f.z_ax >= 0) f.encodings.back().level_index = level_index_in(sk, where_k);
    else if (k > 0) check_stated_level(sk, vk, where_k);
    const std::string tname = dims[f.t_ax];
    const int tv = sk.var_id(tname);
    const TimeUnits tu = TimeUnits::parse(sk.att_text(tv, "units"), sk.att_text(tv, "calendar"), name_k + ": time");
    if (k == 0) f.calendar = tu.calendar;
    else if (tu.calendar != f.calendar)
      throw InputError(name_k + ": time: calendar '" + cf_name(tu.calendar) + "', but '" + cf_name(f.calendar) + "' in " +
                       src_name);
    size_t moved = 0;
    auto& days = source_days[k] = cf_days(sk, tv, tname, tu, name_k + ": time", moved);
    f.days_from_bounds = f.days_from_bounds || moved > 0;
    if (moved)  // said once a field: the files of one dataset stamp alike
      spdlog::log(k == 0 ? spdlog::level::info : spdlog::level::debug, "{}",
                  days_from_bounds_note(name_k, moved, sk.att_text(tv, "bounds")));
    for (size_t i = 1; i < days.size(); ++i)
      if (days[i] <= days[i - 1])
        throw InputError(name_k + ": time step " + std::to_string(i) + " (" + f.date(days[i]) +
                         ") is not after the one before: fetch reads daily data (one value per day)");
    if (days.empty()) throw InputError(name_k + ": time axis is empty");
  }

  // Whether an earlier version, which decoded every file by the first one's attributes, read
  // these alike (ChunkPlan::request): all files encoded alike (NaN fills equal), no valid range,
  // one missing value at most, no attribute written as text.
  const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
  f.decoded_as_before = true;
  for (const auto& e : f.encodings) {
    const auto& first = f.encodings.front();
    f.decoded_as_before = f.decoded_as_before && !e.text_attribute && e.pack_scale == first.pack_scale &&
                          e.pack_offset == first.pack_offset && e.has_fill == first.has_fill &&
                          (!e.has_fill || same(e.fill, first.fill)) && e.level_index == first.level_index &&
                          e.missing_values.size() <= 1 && e.missing_values.size() == first.missing_values.size() &&
                          (e.missing_values.empty() || same(e.missing_values[0], first.missing_values[0])) &&
                          std::isinf(e.valid_min) && std::isinf(e.valid_max);
  }

  const size_t fi = plan.fields.size();
  for (int y = req.years.first; y <= req.years.last; ++y) {
    ChunkPlan c;
    c.field = fi;
    c.year = y;
    c.file = chunk_file("chunks", f.name, y);
    // Every day of the season's months in the source's calendar, each of which must be there.
    for (const auto& [yy, mm] : season_months(y, req.season)) {
      const size_t k = file_of_year.at(yy);
      const auto& sd = source_days[k];
      const int64_t d0 = days_from_date({yy, mm, 1}, f.calendar);
      const int64_t d1 = d0 + days_in_month(yy, mm, f.calendar);
      size_t i = std::lower_bound(sd.begin(), sd.end(), d0) - sd.begin();
      for (int64_t d = d0; d < d1; ++d) {
        while (i < sd.size() && sd[i] < d) ++i;
        if (i == sd.size() || sd[i] != d) {
          const bool outside = d < sd.front() || d > sd.back();
          std::string why = outside ? " (the time axis covers " + f.date(sd.front()) + ".." + f.date(sd.back()) + ")"
                                    : ": the time axis has a gap";
          if (!outside) {  // a file of one season (DJF) asked for another: no gap, another season
            std::set<int> months;
            for (int64_t day : sd) months.insert(date_from_days(day, f.calendar).month);
            if (!months.count(mm)) {
              std::string list;
              for (int m : months) list += (list.empty() ? "" : ", ") + std::to_string(m);
              why = ": the file holds no day of month " + std::to_string(mm) + " (its months: " + list +
                    "), which fetch.season lists";
            }
          }
          throw InputError(redact_credentials(f.urls[k]) + ": variable '" + f.native + "': no data for " + f.date(d) +
                           " (season year " + std::to_string(y) + ")" + why);
        }
        c.days.push_back(d);
        TimeRun* last = c.time_runs.empty() ? nullptr : &c.time_runs.back();
        if (last && last->source == k && last->start + last->count == i) ++last->count;
        else c.time_runs.push_back({k, i, 1});
      }
    }
    plan.chunks.push_back(std::move(c));
  }
  plan.fields.push_back(std::move(f));
}

void plan_source(const NcFile& src, const std::string& url, const Dataset& dataset, const std::vector<FieldWanted>& wanted,
                 const Config::Fetch& req, FetchPlan& plan) {
  std::map<std::string, NcFile> opened;
  const SourceOpener open = [&](const std::string& u) -> const NcFile& { return cached_open(opened, u, &src, url); };
  for (const auto& w : wanted) plan_field(open, url, dataset, w, req, plan);
}

}  // namespace ds
