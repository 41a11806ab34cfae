#include "io/precipitation_file.h"

#include <cmath>
#include <limits>
#include <string>

#include "io/atomic_file.h"
#include "io/cf_axes.h"
#include "io/error.h"
#include "io/netcdf_file.h"
#include "io/stop_signal.h"
#include "io/version.h"

namespace ds {

namespace {

constexpr float kFill = 1.0e20f;
constexpr double kSecondsPerDay = 86400.0;

struct VarSpec {
  const char* name;
  const char* standard_name;  // empty: none in the CF table
  const char* long_name;
  const char* units;
  bool daily_mean = false;  // an amount over the day (cell_methods time: mean), not a parameter
};

int def_field(NcFile& nc, const VarSpec& v, const std::vector<int>& dims) {
  const int id = nc.def_var(v.name, NC_FLOAT, dims, 4);
  if (*v.standard_name) nc.put_att(id, "standard_name", v.standard_name);
  nc.put_att(id, "long_name", v.long_name);
  nc.put_att(id, "units", v.units);
  nc.put_att(id, "_FillValue", kFill, NC_FLOAT);
  nc.put_att(id, "missing_value", kFill, NC_FLOAT);
  // The distribution's parameters (p_wet, gamma_shape, gamma_scale) describe one day's amount;
  // they are not means over the day, so only the amounts carry the cell method.
  if (v.daily_mean) nc.put_att(id, "cell_methods", "time: mean");
  nc.put_att(id, "coordinates", "lat lon");
  return id;
}

// Values to file units with the fill value: `scale` converts mm/day to kg m-2 s-1.
std::vector<float> to_file(const float* v, size_t n, double scale) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = std::isfinite(v[i]) ? static_cast<float>(v[i] * scale) : kFill;
  return out;
}

}  // namespace

struct PrecipitationWriter::Impl : PredictionFileDays {
  size_t ny, nx;
  int members;
  int vpr = -1, vex = -1, vp = -1, va = -1, vs = -1, vm = -1;
  Impl(const std::string& path, const PrecipitationOutput& o)
      : PredictionFileDays(path, o.days.size()), ny(o.lat.size()), nx(o.lon.size()), members(o.members) {}
};

PrecipitationWriter::PrecipitationWriter(const std::string& path, const PrecipitationOutput& o)
    : impl_(std::make_unique<Impl>(path, o)) {
  Impl& w = *impl_;
  NcFile& nc = w.nc;
  const size_t ny = w.ny, nx = w.nx;
  const CfAxes ax = define_cf_axes(nc, ny, nx, o.calendar);
  const int dt = ax.time_dim, dy = ax.lat_dim, dx = ax.lon_dim;
  const std::vector<int> field{dt, dy, dx};
  // A short long_name (plots use it as the label); how wet days are decided goes in `comment`.
  w.vpr = def_field(nc, {"pr", "precipitation_flux", "downscaled daily precipitation", "kg m-2 s-1", true}, field);
  if (!o.occurrence_rule.empty()) nc.put_att(w.vpr, "comment", "wet days: " + o.occurrence_rule);
  w.vex = def_field(nc, {"pr_expected", "precipitation_flux",
                         "expected daily precipitation: p_wet * (gamma_shape * gamma_scale + wet-day threshold)",
                         "kg m-2 s-1", true},
                    field);
  w.vp = def_field(nc, {"p_wet", "", "probability of a wet day (precipitation at or above the wet-day threshold)", "1"}, field);
  w.va = def_field(nc, {"gamma_shape", "", "shape of the gamma distribution of wet-day amounts above the threshold", "1"}, field);
  // In pr's units, so that gamma_shape * gamma_scale compares with pr directly.
  w.vs = def_field(nc, {"gamma_scale", "", "scale of the gamma distribution of wet-day amounts above the threshold", "kg m-2 s-1"}, field);
  for (int v : {w.vpr, w.vex, w.vp, w.va, w.vs}) nc.put_att(v, "wet_day_threshold_mm", o.wet_threshold);
  int vmc = -1;
  if (o.members > 0) {
    const int dm = nc.def_dim("member", o.members);
    vmc = nc.def_var("member", NC_INT, {dm});
    nc.put_att(vmc, "standard_name", "realization");
    nc.put_att(vmc, "long_name", "stochastic realization");
    w.vm = def_field(nc, {"pr_stochastic", "precipitation_flux",
                          "stochastic daily precipitation: wet with probability p_wet, amount a gamma draw + "
                          "wet-day threshold",
                          "kg m-2 s-1", true},
                     {dt, dm, dy, dx});  // time first: CDO (and CF tools) expect it
    // A chunk per day and member: each member is written (and read back) as its own series, and
    // netCDF's default chunks span several members, so writing member by member decompressed
    // and recompressed every chunk once per member (40 members: 49 s instead of about 2).
    nc.def_chunks(w.vm, {1, 1, ny, nx});
    nc.put_att(w.vm, "wet_day_threshold_mm", o.wet_threshold);
  }
  // A chunk per day for the fields too (netCDF's default along an unlimited time, set here
  // because the blocks of days written rely on it: a block never splits a chunk, so no
  // compressed chunk is read back and rewritten).
  for (int v : {w.vpr, w.vex, w.vp, w.va, w.vs}) nc.def_chunks(v, {1, ny, nx});
  put_prediction_globals(nc, "downscaled daily precipitation",
                         "downscale " DOWNSCALE_VERSION ": CNN with a Bernoulli-Gamma output", o.history, o.checkpoint,
                         o.config_file, o.attributes);
  nc.end_define();
  write_cf_axes(nc, ax, o.days, o.lat, o.lon);
  if (o.members > 0) {
    std::vector<double> ids(o.members);
    for (int m = 0; m < o.members; ++m) ids[m] = m;
    nc.write(vmc, {0}, {size_t(o.members)}, ids.data());
  }
}

PrecipitationWriter::~PrecipitationWriter() = default;

size_t PrecipitationWriter::days_written() const { return impl_->written; }

void PrecipitationWriter::write(const PrecipitationDays& b) {
  Impl& w = *impl_;
  const std::string& path = w.file.final_path();
  if (b.days == 0) return;
  w.check_block(b.days);
  for (const float* f : {b.pr, b.pr_expected, b.p_wet, b.gamma_shape, b.gamma_scale})
    if (!f) throw Error(path + ": a block of days without one of its fields");
  if ((w.members > 0) != (b.pr_members != nullptr)) throw Error(path + ": a block of days without its members");
  const size_t t0 = w.written, nd = b.days, plane = nd * w.ny * w.nx;
  const std::vector<size_t> start{t0, 0, 0}, count{nd, w.ny, w.nx};
  const double flux = 1.0 / kSecondsPerDay;
  w.nc.write(w.vpr, start, count, to_file(b.pr, plane, flux).data());
  w.nc.write(w.vex, start, count, to_file(b.pr_expected, plane, flux).data());
  w.nc.write(w.vp, start, count, to_file(b.p_wet, plane, 1).data());
  w.nc.write(w.va, start, count, to_file(b.gamma_shape, plane, 1).data());
  w.nc.write(w.vs, start, count, to_file(b.gamma_scale, plane, flux).data());
  // Held as (member, time, lat, lon), stored as (time, member, lat, lon): one member a write,
  // a stop request (Ctrl-C, Slurm's SIGTERM) honoured between them; the file is then removed.
  for (int m = 0; m < w.members; ++m) {
    throw_if_stop_requested("writing stochastic member " + std::to_string(m + 1) + " of " +
                            std::to_string(w.members) + " to " + path + "; the previous file is kept");
    const std::vector<float> member = to_file(b.pr_members + size_t(m) * plane, plane, flux);
    w.nc.write(w.vm, {t0, size_t(m), 0, 0}, {nd, 1, w.ny, w.nx}, member.data());
  }
  w.written += nd;
}

void PrecipitationWriter::commit() { impl_->commit(); }

void write_precipitation(const std::string& path, const PrecipitationOutput& o) {
  const size_t nt = o.days.size(), plane = nt * o.lat.size() * o.lon.size();
  for (const auto* v : {&o.pr, &o.pr_expected, &o.p_wet, &o.gamma_shape, &o.gamma_scale})
    if (v->size() != plane) throw Error(path + ": prediction arrays do not match time x lat x lon");
  if (o.pr_members.size() != size_t(o.members) * plane) throw Error(path + ": member array has the wrong size");
  PrecipitationWriter w(path, o);
  w.write({nt, o.pr.data(), o.pr_expected.data(), o.p_wet.data(), o.gamma_shape.data(), o.gamma_scale.data(),
           o.members > 0 ? o.pr_members.data() : nullptr});
  w.commit();
}

PrecipitationOutput read_precipitation(const std::string& path, bool gamma) {
  NcFile nc = NcFile::open(path);
  PrecipitationOutput o;
  o.lon = nc.read_coord("lon");
  o.lat = nc.read_coord("lat");
  o.days = read_cf_days(nc, &o.calendar);
  const size_t nt = o.days.size(), ny = o.lat.size(), nx = o.lon.size();
  // The units these reads convert from, as the writer writes them: a field in others (mm/day, K
  // under pr's name) would be scaled wrongly and scored with exit 0.
  const auto expect_units = [&](const char* name, int v, const char* want) {
    const std::string got = nc.has_att(v, "units") ? nc.att_text(v, "units") : "";
    if (got != want)
      throw InputError(path + ": variable " + name + " is in '" + got + "', not the '" + want +
                       "' downscale predict writes; predict again");
  };
  // `units`: the variable's, checked; null: not checked (gamma_scale, whose units pick `scale`).
  auto read = [&](const char* name, const char* units, double scale, std::vector<float>& out, std::vector<size_t> count) {
    const int v = nc.var_id(name);
    if (units) expect_units(name, v, units);
    size_t n = 1;
    for (size_t c : count) n *= c;
    out.resize(n);
    if (n) nc.read(v, std::vector<size_t>(count.size(), 0), count, out.data());
    for (auto& x : out) x = (x == kFill) ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(x * scale);
  };
  read("pr", "kg m-2 s-1", kSecondsPerDay, o.pr, {nt, ny, nx});
  read("pr_expected", "kg m-2 s-1", kSecondsPerDay, o.pr_expected, {nt, ny, nx});
  read("p_wet", "1", 1, o.p_wet, {nt, ny, nx});
  if (gamma) {
    read("gamma_shape", "1", 1, o.gamma_shape, {nt, ny, nx});
    // Files written before gamma_scale moved to pr's units hold it in mm day-1.
    const bool scale_in_mm = nc.att_text(nc.var_id("gamma_scale"), "units") == "mm day-1";
    read("gamma_scale", nullptr, scale_in_mm ? 1 : kSecondsPerDay, o.gamma_scale, {nt, ny, nx});
  }
  if (nc.has_var("pr_stochastic")) {
    o.members = static_cast<int>(nc.dim_len("member"));
    const int v = nc.var_id("pr_stochastic");
    expect_units("pr_stochastic", v, "kg m-2 s-1");
    const size_t plane = nt * ny * nx;
    o.pr_members.resize(size_t(o.members) * plane);
    for (int m = 0; m < o.members && plane; ++m)
      nc.read(v, {0, size_t(m), 0, 0}, {nt, 1, ny, nx}, o.pr_members.data() + size_t(m) * plane);
    for (auto& x : o.pr_members) x = (x == kFill) ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(x * kSecondsPerDay);
  }
  o.wet_threshold = nc.att_double(nc.var_id("pr"), "wet_day_threshold_mm", 0.99);
  if (nc.has_att(nc.var_id("pr"), "comment")) {
    const std::string c = nc.att_text(nc.var_id("pr"), "comment"), lead = "wet days: ";
    o.occurrence_rule = c.rfind(lead, 0) == 0 ? c.substr(lead.size()) : c;
  }
  if (nc.has_att(NC_GLOBAL, "members_seed")) o.attributes["members_seed"] = nc.att_text(NC_GLOBAL, "members_seed");
  o.history = nc.att_text(NC_GLOBAL, "history");
  o.checkpoint = nc.att_text(NC_GLOBAL, "checkpoint");
  get_prediction_checks(nc, o.attributes);
  o.config_file = nc.att_text(NC_GLOBAL, "config");
  return o;
}

}  // namespace ds
