#include "preprocess/fetched_field.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "io/calendar.h"
#include "io/cf_axes.h"
#include "io/error.h"

namespace ds {

FetchedField::FetchedField(const std::string& path, const std::string& variable)
    : file_(NcFile::open(path)), variable_(variable), where_(path + ": variable '" + variable + "'") {
  varid_ = file_.var_id(variable);
  // Each day is read once, in order, so netCDF's per-variable chunk cache (16 MiB of inflated
  // chunks by default) only costs memory: with 21 files of 30 years open it filled to ~400 MB.
  // 1 MiB keeps a few chunks of the largest field. (Fails harmlessly on a netCDF-3 file.)
  nc_set_var_chunk_cache(file_.id(), varid_, size_t{1} << 20, 31, 0.75f);
  const auto dims = file_.var_dims(varid_);
  if (dims != std::vector<std::string>{"time", "lat", "lon"}) {
    std::string have;
    for (const auto& d : dims) have += (have.empty() ? "" : ", ") + d;
    throw InputError(where_ + ": dimensions are (" + have + "), expected (time, lat, lon) as fetch writes them");
  }
  units_ = file_.att_text(varid_, "units");
  if (units_.empty()) throw InputError(where_ + ": no units attribute");
  level_ = static_cast<int>(file_.att_double(varid_, "level_hPa", 0));
  // fetch writes the level twice: level_hPa, which downscale reads, and the scalar plev in Pa,
  // which CDO and xarray read. Disagreeing, one of them was edited, and the other tools would
  // take the field for another level's.
  if (level_ > 0 && file_.has_var("plev") && file_.var_dims(file_.var_id("plev")).empty()) {
    const int pv = file_.var_id("plev");
    double plev = 0;
    file_.read(pv, {0}, {1}, &plev);  // (a scalar: netCDF reads no start or count)
    const std::string pu = file_.att_text(pv, "units");
    const double hpa = pu == "Pa" ? plev / 100 : pu == "hPa" || pu == "mbar" ? plev : NAN;
    if (!(std::abs(hpa - level_) < 0.5))
      throw InputError(where_ + ": its level_hPa is " + std::to_string(level_) + ", but the file's plev is " +
                       fmt::format("{:g}", plev) + " " + (pu.empty() ? "(no units)" : pu) +
                       ": one of them was changed after the fetch; fetch the field again");
  }
  // fetch unpacks what it reads (fetch/plan.cpp) and writes floats: packed values here, read as
  // they are, would be the packed counts (a z of 10008 for 56501 m2 s-2, exit 0).
  for (const char* packing : {"scale_factor", "add_offset"})
    if (file_.has_att(varid_, packing))
      throw InputError(where_ + ": has a " + packing + " attribute (CF packing), which fetch never writes: " +
                       "this file was not written by `downscale fetch`; fetch it again");
  fill_ = static_cast<float>(file_.att_double(varid_, "_FillValue", 1e20));
  // CF's other marker of a missing value, which CDO and NCO write and every CF reader honours:
  // read as data, -99 over the sea was a temperature and the sea was modelled.
  if (file_.has_att(varid_, "missing_value")) missing_ = static_cast<float>(file_.att_double(varid_, "missing_value", 0));

  auto lon = file_.read_coord("lon");
  auto lat = file_.read_coord("lat");
  // fetch writes the box's longitudes (-180..180, or past 180 for a box across the
  // antimeridian, up to 540), and past them the few columns a grid at the seam needs from the
  // source's other side (fetch/plan.h: widened_cut).
  for (double x : lon)
    if (!(x >= -720.0 && x <= 720.0))
      throw InputError(path + ": longitude " + fmt::format("{}", x) + " is outside -720..720");
  // One regular grid's longitudes step alike; a step far larger than the others is a seam (a
  // 0..360 grid re-sorted to ascending), which would put the east of the data over the west.
  if (lon.size() > 2) {
    double least = INFINITY, most = 0;
    for (size_t i = 1; i < lon.size(); ++i) least = std::min(least, lon[i] - lon[i - 1]), most = std::max(most, lon[i] - lon[i - 1]);
    if (least > 0 && most > 1.5 * least)
      throw InputError(path + ": longitudes step " + fmt::format("{:g}", least) + " to " + fmt::format("{:g}", most) +
                       " degrees: not one regular grid (longitudes of 0..360 sorted as they are, across the seam?); "
                       "fetch writes the box's longitudes in one run");
  }
  grid_ = Grid::from_coords(std::move(lon), std::move(lat), where_);

  const int tv = file_.var_id("time");
  // Day numbers count the file's own calendar (a CMIP model's noleap or 360_day included); the
  // store records it and build_store refuses to mix calendars that count days differently.
  const TimeUnits tu = TimeUnits::parse(file_.att_text(tv, "units"), file_.att_text(tv, "calendar"), path + ": time");
  calendar_ = tu.calendar;
  // The day of each step from the middle of its time bounds, as fetch reads its sources: a file
  // stamped anew at the end of each day (a CDO step after the fetch) was paired with the next
  // day's other predictors, exit 0.
  size_t moved = 0;
  days_ = cf_days(file_, tv, "time", tu, path + ": time", moved);
  if (moved) spdlog::info("{}", days_from_bounds_note(path, moved));
  for (size_t i = 1; i < days_.size(); ++i)
    if (days_[i] <= days_[i - 1])
      throw InputError(path + ": time is not strictly ascending: " + date_of(days_[i]) + " follows " + date_of(days_[i - 1]));
}

std::string FetchedField::date_of(int64_t day) const { return to_string(date_from_days(day, calendar_)); }

void FetchedField::read(const std::vector<size_t>& idx, float* out) const {
  const size_t fs = grid_.size();
  const size_t nlat = grid_.lat.size(), nlon = grid_.lon.size();
  for (size_t a = 0; a < idx.size();) {
    size_t b = a + 1;
    while (b < idx.size() && idx[b] == idx[b - 1] + 1) ++b;
    if (idx[b - 1] >= days_.size()) throw Error(where_ + ": time index out of range");
    file_.read(varid_, {idx[a], 0, 0}, {b - a, nlat, nlon}, out + a * fs);
    a = b;
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (size_t k = 0; k < idx.size() * fs; ++k) {
    const float v = out[k];
    if (v == fill_ || v == missing_ || std::isnan(v)) out[k] = nan;
    else if (!(v >= valid_min_ && v <= valid_max_)) implausible(v, idx[k / fs], k % fs);  // also +-inf
  }
}

void FetchedField::set_valid_range(double min, double max, const std::string& range_units) {
  valid_min_ = std::isfinite(min) ? min : -INFINITY;
  valid_max_ = std::isfinite(max) ? max : INFINITY;
  range_units_ = range_units;
}

void FetchedField::implausible(float value, size_t index, size_t point) const {
  const size_t nlon = grid_.lon.size();
  // The range is the manifest's, in its units: a file whose units were changed after the fetch
  // (hPa written by a CDO step) is said to disagree with it, not given a range in the wrong units.
  const bool other_units = !range_units_.empty() && range_units_ != units_;
  std::string range = "[" + fmt::format("{:g}", valid_min_) + ", " + fmt::format("{:g}", valid_max_) + "] " +
                      (other_units ? range_units_ : units_);
  if (other_units)
    range += " (fetch/manifest.json's, which records the field in " + range_units_ + " while the file says " + units_ +
             ": was the file changed after the fetch?)";
  throw InputError(where_ + " is " + fmt::format("{:g}", value) + " " + units_ + " on " + date_of(days_[index]) +
                   " at lat " + fmt::format("{:g}", grid_.lat[point / nlon]) + ", lon " +
                   fmt::format("{:g}", grid_.lon[point % nlon]) + ": outside its plausible range " + range +
                   " (a wrong unit under the right label, or corrupt data; a dataset definition's `ranges:` "
                   "sets the range)");
}

void FetchedField::check_as_fetched(const FetchedFile& f, const std::string& manifest, const std::vector<int>& season) const {
  const auto changed = [&](const std::string& what) {
    throw InputError(where_ + ": " + what + " as " + manifest +
                     " records it: the file was changed after the fetch (fetch it again, or run the change on the "
                     "fetch's source)");
  };
  if (f.ntime > 0 && days_.size() != f.ntime)
    changed("holds " + std::to_string(days_.size()) + " days, not the " + std::to_string(f.ntime));
  if ((f.nlat > 0 && grid_.lat.size() != f.nlat) || (f.nlon > 0 && grid_.lon.size() != f.nlon))
    changed("its grid is " + std::to_string(grid_.lat.size()) + " x " + std::to_string(grid_.lon.size()) + " (lat x lon), not " +
            std::to_string(f.nlat) + " x " + std::to_string(f.nlon));
  // fetch writes level_hPa on every field it cut at a level (and records the level).
  if (f.level > 0 && level_ != f.level)
    changed(level_ ? "its level_hPa is " + std::to_string(level_) + ", not " + std::to_string(f.level)
                   : "it has no level_hPa attribute, though its level is " + std::to_string(f.level) + " hPa");
  if (!f.calendar.empty() && !same_days_after_1582(calendar_, parse_calendar(f.calendar, manifest)))
    changed("its time calendar is " + cf_name(calendar_) + ", not " + f.calendar);
  // The label a value is read in: relabelled after the fetch (K over degC values), the plausible
  // range, recorded in the manifest's units, was compared with numbers in other units, and the
  // store took the new label.
  if (!f.units.empty() && units_ != f.units) changed("its units are '" + units_ + "', not '" + f.units + "'");
  // fetch cut the season's months: a day of another month is a time axis moved since (a day's
  // shift of a winter's files puts 1 March in them), which pairs every day with its neighbour's.
  bool held[13] = {};
  if (!season.empty())
    for (int64_t d : days_) {
      const int month = date_from_days(d, calendar_).month;
      held[month] = true;
      if (std::find(season.begin(), season.end(), month) == season.end())
        changed("it holds " + date_of(d) + ", outside the months fetch cut (fetch.season)");
    }
  // And the other way: a year or more of days holds every month of the season. A month never
  // held is a season edited in the manifest (all months over a winter's files split the winters
  // by calendar year, not by season-year as fetch cut them).
  if (!season.empty() && days_.size() >= 2 && days_.back() - days_.front() >= 365)
    for (int m : season)
      if (m >= 1 && m <= 12 && !held[m])
        throw InputError(where_ + ": its " + std::to_string(days_.size()) + " days from " + date_of(days_.front()) +
                         " to " + date_of(days_.back()) + " hold no day of month " + std::to_string(m) + ", which " +
                         manifest + "'s season has (fetch.season): the manifest or the file was changed after the "
                         "fetch (fetch it again)");
}

void FetchedField::check_level(const std::string& field) const {
  const size_t at = field.find('@');
  if (at == std::string::npos || level_ == 0) return;  // a surface field, or a file without level_hPa
  const std::string want = field.substr(at + 1);
  if (want != std::to_string(level_))
    throw InputError(where_ + ": its level_hPa is " + std::to_string(level_) + ", but it is the file of " + field +
                     " (" + want + " hPa): another level's file under this field's name; fetch it again");
}

}  // namespace ds
