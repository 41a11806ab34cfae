#include "io/predictand_file.h"

#include <cmath>
#include <limits>

#include "io/atomic_file.h"
#include "io/cf_axes.h"
#include "io/error.h"
#include "io/stop_signal.h"
#include "io/netcdf_file.h"
#include "io/version.h"

namespace ds {

namespace {

constexpr float kFill = 1.0e20f;

std::vector<float> to_file(const float* v, size_t n) {
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = std::isfinite(v[i]) ? v[i] : kFill;
  return out;
}

}  // namespace

std::string cf_standard_name(const std::string& v) {
  // The CMIP names of the variables a downscaling is usually asked for (CF standard name table).
  static const std::map<std::string, std::string> names{{"tas", "air_temperature"},
                                                        {"tasmax", "air_temperature"},
                                                        {"tasmin", "air_temperature"},
                                                        {"psl", "air_pressure_at_mean_sea_level"},
                                                        {"huss", "specific_humidity"},
                                                        {"hurs", "relative_humidity"},
                                                        {"sfcWind", "wind_speed"},
                                                        {"rsds", "surface_downwelling_shortwave_flux_in_air"}};
  const auto it = names.find(v);
  return it == names.end() ? "" : it->second;
}

struct PredictandWriter::Impl : PredictionFileDays {
  size_t ny, nx;
  int vm = -1, vs = -1;
  Impl(const std::string& path, const PredictandOutput& o)
      : PredictionFileDays(path, o.days.size()), ny(o.lat.size()), nx(o.lon.size()) {}
};

PredictandWriter::PredictandWriter(const std::string& path, const PredictandOutput& o, bool with_sd) {
  if (o.variable.empty()) throw Error(path + ": no variable name for the prediction");
  impl_ = std::make_unique<Impl>(path, o);
  Impl& w = *impl_;
  NcFile& nc = w.nc;
  // tasmax is the daily maximum of the air temperature: CF says so in cell_methods.
  const std::string cell = o.variable == "tasmax" ? "time: maximum" : o.variable == "tasmin" ? "time: minimum" : "time: mean";
  const std::string standard = cf_standard_name(o.variable);
  const CfAxes ax = define_cf_axes(nc, w.ny, w.nx, o.calendar);
  const std::vector<int> dims{ax.time_dim, ax.lat_dim, ax.lon_dim};
  const int height = define_2m_height(nc, o.variable);  // tas, tasmax, tasmin: 2 m
  auto def = [&](const std::string& name, const std::string& long_name) {
    const int id = nc.def_var(name, NC_FLOAT, dims, 4);
    if (!standard.empty()) nc.put_att(id, "standard_name", standard);
    nc.put_att(id, "long_name", long_name);
    nc.put_att(id, "units", o.units);
    if (is_temperature_unit(o.units))  // the sd is a difference (see is_temperature_unit)
      nc.put_att(id, "units_metadata", name == o.variable ? "temperature: on_scale" : "temperature: difference");
    nc.put_att(id, "_FillValue", kFill, NC_FLOAT);
    nc.put_att(id, "missing_value", kFill, NC_FLOAT);
    nc.put_att(id, "cell_methods", cell);
    nc.put_att(id, "coordinates", height >= 0 ? "height lat lon" : "lat lon");
    // A chunk per day (netCDF's default along an unlimited time, stated because the blocks of
    // days rely on it: a block never splits a compressed chunk).
    nc.def_chunks(id, {1, w.ny, w.nx});
    return id;
  };
  w.vm = def(o.variable, "downscaled daily " + o.variable + (o.method.empty() ? "" : " (" + o.method + ")"));
  if (with_sd) {
    w.vs = def(o.variable + "_sd", "standard deviation of the predicted distribution of daily " + o.variable);
    // The spread of the prediction, not the variable itself: CF's standard_name modifier.
    if (!standard.empty()) nc.put_att(w.vs, "standard_name", standard + " standard_error");
  }
  put_prediction_globals(nc, "downscaled daily " + o.variable,
                         std::string("downscale " DOWNSCALE_VERSION ": CNN, ") +
                             (with_sd ? "Gaussian (mean, log variance) output" : "mean squared error"),
                         o.history, o.checkpoint, o.config_file, o.attributes);
  // units_metadata is CF-1.11's: a file that uses it says that version.
  if (is_temperature_unit(o.units)) nc.put_att(NC_GLOBAL, "Conventions", "CF-1.11");
  nc.end_define();
  write_cf_axes(nc, ax, o.days, o.lat, o.lon);
  write_2m_height(nc, height);
}

PredictandWriter::~PredictandWriter() = default;

size_t PredictandWriter::days_written() const { return impl_->written; }

void PredictandWriter::write(size_t days, const float* mean, const float* sd) {
  Impl& w = *impl_;
  const std::string& path = w.file.final_path();
  if (days == 0) return;
  w.check_block(days);
  if (!mean || (w.vs >= 0) != (sd != nullptr)) throw Error(path + ": a block of days without its fields");
  const size_t plane = days * w.ny * w.nx;
  w.nc.write(w.vm, {w.written, 0, 0}, {days, w.ny, w.nx}, to_file(mean, plane).data());
  if (w.vs >= 0) w.nc.write(w.vs, {w.written, 0, 0}, {days, w.ny, w.nx}, to_file(sd, plane).data());
  w.written += days;
}

void PredictandWriter::commit() { impl_->commit(); }

void write_predictand(const std::string& path, const PredictandOutput& o) {
  const size_t nt = o.days.size(), plane = nt * o.lat.size() * o.lon.size();
  if (o.mean.size() != plane || (!o.sd.empty() && o.sd.size() != plane))
    throw Error(path + ": prediction arrays do not match time x lat x lon");
  PredictandWriter w(path, o, !o.sd.empty());
  w.write(nt, o.mean.data(), o.sd.empty() ? nullptr : o.sd.data());
  w.commit();
}

PredictandOutput read_predictand(const std::string& path, const std::string& variable) {
  NcFile nc = NcFile::open(path);
  PredictandOutput o;
  o.variable = variable;
  o.lon = nc.read_coord("lon");
  o.lat = nc.read_coord("lat");
  o.days = read_cf_days(nc, &o.calendar);
  const size_t nt = o.days.size(), ny = o.lat.size(), nx = o.lon.size();
  auto read = [&](const std::string& name, std::vector<float>& out) {
    const int v = nc.var_id(name);
    out.resize(nt * ny * nx);
    if (!out.empty()) nc.read(v, {0, 0, 0}, {nt, ny, nx}, out.data());
    const float fill = static_cast<float>(nc.att_double(v, "_FillValue", kFill));
    for (auto& x : out)
      if (x == fill || !std::isfinite(x)) x = std::numeric_limits<float>::quiet_NaN();
    return v;
  };
  const int vm = read(variable, o.mean);
  if (nc.has_var(variable + "_sd")) read(variable + "_sd", o.sd);
  o.units = nc.att_text(vm, "units");
  o.history = nc.att_text(NC_GLOBAL, "history");
  o.checkpoint = nc.att_text(NC_GLOBAL, "checkpoint");
  get_prediction_checks(nc, o.attributes);
  o.config_file = nc.att_text(NC_GLOBAL, "config");
  return o;
}

}  // namespace ds
