#include "evaluate/scores_file.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/cf_axes.h"
#include "io/error.h"
#include "io/stop_signal.h"
#include "io/netcdf_file.h"

namespace ds {

namespace {

constexpr float kFill = 1.0e20f;
constexpr double kFluxPerMmDay = 1.0 / 86400.0;  // mm/day -> kg m-2 s-1 (1 mm of water is 1 kg m-2)

std::vector<double> scaled(const std::vector<double>& v, double s) {
  std::vector<double> out(v);
  for (double& x : out) x *= s;
  return out;
}

// The per-box indices of one precipitation series (observed or a method's, averaged over members).
void add_precipitation_indices(std::vector<ScoreField>& out, const PointIndices& p, const std::string& method,
                               const std::string& who) {
  out.push_back({"mean", method, "mean daily precipitation, " + who, "kg m-2 s-1", "precipitation_flux", "time: mean",
                 scaled(p.mean, kFluxPerMmDay)});
  out.push_back({"r01", method, "wet-day frequency (share of days with at least 1 mm), " + who, "1", "", "",
                 p.r01});
  out.push_back({"sdii", method, "simple daily intensity index (mean precipitation of days with at least 1 mm), " + who,
                 "kg m-2 s-1", "", "", scaled(p.sdii, kFluxPerMmDay)});
  out.push_back({"p98", method, "98th percentile of daily precipitation, " + who, "kg m-2 s-1", "", "",
                 scaled(p.p98, kFluxPerMmDay)});
  out.push_back({"p98wet", method, "98th percentile of the days with at least 1 mm, " + who, "kg m-2 s-1", "", "",
                 scaled(p.p98_wet, kFluxPerMmDay)});
  out.push_back({"wetmaxspell", method,
                 "median over the years of the longest annual spell of days with at least 1 mm, " + who, "day", "", "",
                 p.wet_spell});
  out.push_back({"drymaxspell", method,
                 "median over the years of the longest annual spell of days with less than 1 mm, " + who, "day", "",
                 "", p.dry_spell});
}

// A season's cell_methods from the annual field's: a climatological statistic (CF 7.4) for a
// mean or root mean square over the season's days (the same statistic of each year's season and
// over the years, as each year gives the season's days equal weight). Empty for any other: a
// standard deviation of pooled days is not "within years ... over years" of anything.
std::string seasonal_cell_methods(const std::string& annual, const std::string& time) {
  for (const char* m : {"mean", "root_mean_square"})
    if (annual == std::string("time: ") + m)
      return time + ": " + m + " within years " + time + ": " + m + " over years";
  return "";
}

// Defines one field's variable on time dimension dt; its id.
int define_field(NcFile& nc, const ScoreField& s, const std::string& name, int dt, int dy, int dx,
                 const std::string& cell_methods, const std::string& standard_name, const std::string& long_name) {
  const int id = nc.def_var(name, NC_FLOAT, {dt, dy, dx}, 4);
  if (!standard_name.empty()) nc.put_att(id, "standard_name", standard_name);
  nc.put_att(id, "long_name", long_name);
  nc.put_att(id, "units", s.units);
  // A temperature's bias, RMSE or sd in degC is a difference: CF-1.11's units_metadata says so,
  // so that a unit-aware tool converting to K does not add 273.15 to it (an audit).
  if (is_temperature_unit(s.units))
    nc.put_att(id, "units_metadata",
               s.index == "bias" || s.index == "rmse" || s.index == "sd" ? "temperature: difference"
                                                                            : "temperature: on_scale");
  if (!cell_methods.empty()) nc.put_att(id, "cell_methods", cell_methods);
  nc.put_att(id, "_FillValue", kFill, NC_FLOAT);
  nc.put_att(id, "index", s.index);
  nc.put_att(id, "method", s.method);
  return id;
}

// Defines a time coordinate `name` of one step: its id and its bounds' (period or climatology).
std::pair<int, int> define_time(NcFile& nc, const std::string& name, const std::string& bounds_attribute,
                                const std::string& bounds_name, const std::string& calendar, int dt, int db) {
  const int vt = nc.def_var(name, NC_DOUBLE, {dt});
  nc.put_att(vt, "standard_name", "time");
  nc.put_att(vt, "long_name", "time");
  nc.put_att(vt, "units", "days since 1970-01-01 00:00:00");
  nc.put_att(vt, "calendar", calendar);
  nc.put_att(vt, bounds_attribute, bounds_name);
  nc.put_att(vt, "axis", "T");
  return {vt, nc.def_var(bounds_name, NC_DOUBLE, {dt, db})};
}

// The climatological bounds (CF-1.8 7.4) of days in some months of several years: the month and
// day of each bound give the interval within a year, their years the first and last year, so
// DJF days of 2004 (January, February and December) are [2003-12-01, 2005-03-01], two winters
// each in part, not [2004-01-01, 2005-01-01], which reads as the whole year. The months present
// must be one run in the calendar's cycle (December to February wraps); otherwise no interval
// within a year holds them and the bounds are the days' own, as a plain period's.
std::pair<int64_t, int64_t> climatology_bounds(const std::vector<int64_t>& days, Calendar cal) {
  bool present[13] = {};
  for (int64_t d : days) present[date_from_days(d, cal).month] = true;
  const auto prev = [](int m) { return m == 1 ? 12 : m - 1; };
  const auto next = [](int m) { return m == 12 ? 1 : m + 1; };
  int first = 0, last = 0, starts = 0;
  for (int m = 1; m <= 12; ++m)
    if (present[m] && !present[prev(m)]) first = m, ++starts;
  for (int m = 1; m <= 12; ++m)
    if (present[m] && !present[next(m)]) last = m;
  if (starts != 1) return {days.front(), days.back() + 1};  // every month, or months in two runs
  // The months present as a season in its own order, labelled by io/calendar's season-year rule.
  std::vector<int> season{first};
  while (season.back() != last) season.push_back(next(season.back()));
  const bool wraps = season_wrap(season) > 0;
  const auto year_of = [&](int64_t d) {
    const Date date = date_from_days(d, cal);
    return season_year(date.year, date.month, season);
  };
  const int y0 = year_of(days.front()) - (wraps ? 1 : 0), y1 = year_of(days.back());
  const int end_year = last == 12 ? y1 + 1 : y1;
  return {days_from_date({y0, first, 1}, cal), days_from_date({end_year, next(last), 1}, cal)};
}

void write_period(NcFile& nc, std::pair<int, int> time, const std::vector<int64_t>& days, bool climatology,
                  Calendar cal) {
  const auto [b0, b1] = climatology ? climatology_bounds(days, cal) : std::pair{days.front(), days.back() + 1};
  const double t0 = static_cast<double>(b0), t1 = static_cast<double>(b1);
  const double mid = 0.5 * (t0 + t1), bnds[2] = {t0, t1};
  nc.write(time.first, {0}, {1}, &mid);
  nc.write(time.second, {0, 0}, {1, 2}, bnds);
}

}  // namespace

std::vector<ScoreField> precipitation_score_fields(const Evaluation& e) {
  std::vector<ScoreField> out;
  add_precipitation_indices(out, e.observed, "observed", "observed");
  for (const MethodScores& m : e.methods) {
    const std::string who = m.name + (m.members > 1 ? " (mean over " + std::to_string(m.members) + " members)" : "");
    add_precipitation_indices(out, m.indices, m.name, who);
    std::vector<double> bias(m.indices.mean.size());
    for (size_t k = 0; k < bias.size(); ++k) bias[k] = (m.indices.mean[k] - e.observed.mean[k]) * kFluxPerMmDay;
    out.push_back({"bias", m.name, "bias of the mean daily precipitation (predicted - observed), " + who, "kg m-2 s-1",
                   "", "time: mean", bias});
    // RMSE is the root mean square over the days of the daily error.
    out.push_back({"rmse", m.name, "root mean squared error of daily precipitation, " + who, "kg m-2 s-1", "",
                   "time: root_mean_square", scaled(m.rmse, kFluxPerMmDay)});
    out.push_back({"rmse_wet", m.name, "root mean squared error of daily precipitation on observed wet days, " + who,
                   "kg m-2 s-1", "", "", scaled(m.rmse_wet, kFluxPerMmDay)});
    out.push_back({"spearman", m.name, "Spearman rank correlation of the daily series, " + who, "1", "", "", m.spearman});
    out.push_back({"rocss", m.name, "ROC skill score (2 AUC - 1) of observed wet days, " + who, "1", "", "", m.rocss});
  }
  return out;
}

std::vector<ScoreField> continuous_score_fields(const ContinuousEvaluation& e, const std::string& standard_name) {
  const std::string& v = e.variable;
  std::vector<ScoreField> out;
  out.push_back({"mean", "observed", "mean daily " + v + ", observed", e.units, standard_name, "time: mean", e.observed_mean});
  // CF's way to say "the standard deviation of air_temperature": the same standard name with
  // the statistic in cell_methods.
  out.push_back({"sd", "observed", "standard deviation of daily " + v + ", observed", e.units, standard_name,
                 "time: standard_deviation", e.observed_sd});
  for (const ContinuousScores& m : e.methods) {
    out.push_back({"mean", m.name, "mean daily " + v + ", " + m.name, e.units, standard_name, "time: mean", m.mean});
    out.push_back({"bias", m.name, "bias of the mean daily " + v + " (predicted - observed), " + m.name, e.units, "",
                   "time: mean", m.bias});
    out.push_back({"rmse", m.name, "root mean squared error of daily " + v + ", " + m.name, e.units, "",
                   "time: root_mean_square", m.rmse});
    out.push_back({"pearson", m.name, "Pearson correlation of the daily series, " + m.name, "1", "", "", m.pearson});
    out.push_back({"sd_ratio", m.name, "ratio of standard deviations of the daily series (predicted / observed), " + m.name,
                   "1", "", "", m.sd_ratio});
  }
  return out;
}

void write_scores_file(const std::string& path, const ScoresFile& f) {
  const size_t ny = f.lat.size(), nx = f.lon.size();
  for (const auto& s : f.fields)
    if (s.values.size() != ny * nx)
      throw Error(path + ": variable " + s.index + "_" + s.method + " has " + std::to_string(s.values.size()) +
                  " values, the grid " + std::to_string(ny * nx));
  if (f.days.empty()) throw Error(path + ": no test days to describe");

  AtomicFile file(path);
  NcFile nc = NcFile::create(file.temp_path());
  const int dt = nc.def_dim("time", 1), dy = nc.def_dim("lat", ny), dx = nc.def_dim("lon", nx);
  const int db = nc.def_dim("bnds", 2);
  // The boxes' edges with them: CDO's area weights in fldmean come from them.
  const CfLatLon space = define_cf_lat_lon(nc, dy, ny, dx, nx, db);
  const Calendar cal = parse_calendar(f.calendar, path + ": calendar");
  // The period the statistics are over: one time step with bounds; a test split of some months
  // of each year (fetch.season: DJF) is over those months only, a climatological time as each
  // season's below (a plain mean over its bounds would take in the summers between).
  std::set<int> months, years;
  for (int64_t d : f.days) {
    const Date date = date_from_days(d, cal);
    months.insert(date.month), years.insert(date.year);
  }
  const bool some_months = months.size() < 12 && years.size() > 1 &&
                           f.days.back() - f.days.front() + 1 != int64_t(f.days.size());
  const auto time = some_months ? define_time(nc, "time", "climatology", "climatology_bnds", f.calendar, dt, db)
                                : define_time(nc, "time", "bounds", "time_bnds", f.calendar, dt, db);
  std::vector<int> ids;
  std::vector<const ScoreField*> fields;
  for (const auto& s : f.fields) {
    const std::string cm = some_months ? seasonal_cell_methods(s.cell_methods, "time") : s.cell_methods;
    const std::string sn = !some_months || s.cell_methods.empty() || !cm.empty() ? s.standard_name : "";
    ids.push_back(define_field(nc, s, s.index + "_" + s.method, dt, dy, dx, cm, sn, s.long_name));
    fields.push_back(&s);
  }
  // Each season: its climatological time axis, then its fields.
  std::vector<std::pair<int, int>> season_times;
  for (const SeasonFields& season : f.seasons) {
    if (season.days.empty()) throw Error(path + ": season " + season.season + " has no test day");
    const std::string t = "time_" + season.season;
    const int dts = nc.def_dim(t, 1);
    season_times.push_back(define_time(nc, t, "climatology", "climatology_bnds_" + season.season, f.calendar, dts, db));
    for (const auto& s : season.fields) {
      if (s.values.size() != ny * nx)
        throw Error(path + ": variable " + s.index + "_" + s.method + "_" + season.season + " has " +
                    std::to_string(s.values.size()) + " values, the grid " + std::to_string(ny * nx));
      const std::string cm = seasonal_cell_methods(s.cell_methods, t);
      // A standard name whose statistic cell_methods said (a standard deviation) goes with it.
      const std::string sn = s.cell_methods.empty() || !cm.empty() ? s.standard_name : "";
      const int id = define_field(nc, s, s.index + "_" + s.method + "_" + season.season, dts, dy, dx, cm, sn,
                                  s.long_name + ", " + season.season + " days");
      nc.put_att(id, "season", season.season);
      ids.push_back(id);
      fields.push_back(&s);
    }
  }
  // The scores of near-surface air temperature are of it at 2 m, as the prediction's fields.
  const int height = define_2m_height(nc, f.variable);
  if (height >= 0)
    for (int id : ids) nc.put_att(id, "coordinates", "height");
  // units_metadata (temperatures) is CF-1.11's: a file that uses it says that version.
  const bool temperature =
      std::any_of(fields.begin(), fields.end(), [](const ScoreField* s) { return is_temperature_unit(s->units); });
  nc.put_att(NC_GLOBAL, "Conventions", temperature ? "CF-1.11" : "CF-1.8");
  nc.put_att(NC_GLOBAL, "title", f.title);
  nc.put_att(NC_GLOBAL, "source", f.source);
  nc.put_att(NC_GLOBAL, "history", utc_now() + ": " + f.history);
  nc.put_att(NC_GLOBAL, "test_period_start", to_string(date_from_days(f.days.front(), cal)));
  nc.put_att(NC_GLOBAL, "test_period_end", to_string(date_from_days(f.days.back(), cal)));
  nc.put_att(NC_GLOBAL, "test_days", static_cast<double>(f.days.size()), NC_INT);
  for (const auto& [k, v] : f.attributes) nc.put_att(NC_GLOBAL, k, v);
  if (!f.seasons.empty()) {
    std::string names;
    for (const SeasonFields& season : f.seasons) names += (names.empty() ? "" : " ") + season.season;
    nc.put_att(NC_GLOBAL, "seasons", names);
  }
  nc.end_define();

  write_cf_lat_lon(nc, space, f.lat, f.lon);
  write_2m_height(nc, height);
  write_period(nc, time, f.days, some_months, cal);
  for (size_t i = 0; i < f.seasons.size(); ++i) write_period(nc, season_times[i], f.seasons[i].days, true, cal);
  std::vector<float> buf(ny * nx);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto& v = fields[i]->values;
    for (size_t k = 0; k < v.size(); ++k) buf[k] = std::isfinite(v[k]) ? static_cast<float>(v[k]) : kFill;
    if (!buf.empty()) nc.write(ids[i], {0, 0, 0}, {1, ny, nx}, buf.data());
  }
  nc.close();
  // A stop request (Ctrl-C, Slurm's SIGTERM) that came while the file was written: the previous
  // output stays, the new one is removed, and the stage exits 128 + the signal.
  throw_if_stop_requested("writing " + path + "; the previous file is kept");
  file.commit();
}

}  // namespace ds
