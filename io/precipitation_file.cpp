#include "io/precipitation_file.h"

#include <cmath>

#include "io/atomic_file.h"
#include "io/netcdf_file.h"

namespace ds {

void write_precipitation(const std::string& path, const PrecipitationOutput& o) {
  constexpr float kFill = 1.0e20f;
  const size_t nt = o.days.size(), ny = o.lat.size(), nx = o.lon.size();
  AtomicFile file(path);
  NcFile nc = NcFile::create(file.temp_path());
  const int dt = nc.def_dim("time", 0), dy = nc.def_dim("lat", ny), dx = nc.def_dim("lon", nx), db = nc.def_dim("bnds", 2);
  const int vt = nc.def_var("time", NC_DOUBLE, {dt});
  nc.put_att(vt, "standard_name", "time");
  nc.put_att(vt, "units", "days since 1970-01-01 00:00:00");
  nc.put_att(vt, "calendar", "standard");
  nc.put_att(vt, "bounds", "time_bnds");
  nc.put_att(vt, "axis", "T");
  const int vb = nc.def_var("time_bnds", NC_DOUBLE, {dt, db});
  const int vy = nc.def_var("lat", NC_DOUBLE, {dy});
  nc.put_att(vy, "standard_name", "latitude");
  nc.put_att(vy, "units", "degrees_north");
  nc.put_att(vy, "axis", "Y");
  const int vx = nc.def_var("lon", NC_DOUBLE, {dx});
  nc.put_att(vx, "standard_name", "longitude");
  nc.put_att(vx, "units", "degrees_east");
  nc.put_att(vx, "axis", "X");
  const int vp = nc.def_var("pr", NC_FLOAT, {dt, dy, dx}, 4);
  nc.put_att(vp, "standard_name", "precipitation_flux");
  nc.put_att(vp, "long_name", "downscaled daily precipitation (expected value)");
  nc.put_att(vp, "units", "kg m-2 s-1");
  nc.put_att(vp, "cell_methods", "time: mean");
  nc.put_att(vp, "_FillValue", kFill, NC_FLOAT);
  const int vq = nc.def_var("p_wet", NC_FLOAT, {dt, dy, dx}, 4);
  nc.put_att(vq, "long_name", "probability of a wet day (precipitation above the wet-day threshold)");
  nc.put_att(vq, "units", "1");
  nc.put_att(vq, "_FillValue", kFill, NC_FLOAT);
  nc.put_att(NC_GLOBAL, "Conventions", "CF-1.7");
  nc.put_att(NC_GLOBAL, "title", "downscaled daily precipitation");
  nc.put_att(NC_GLOBAL, "source", "downscale " DOWNSCALE_VERSION);
  nc.put_att(NC_GLOBAL, "history", o.history);
  nc.put_att(NC_GLOBAL, "checkpoint", o.checkpoint);
  nc.put_att(NC_GLOBAL, "config", o.config_file);
  nc.end_define();

  nc.write(vy, o.lat.data());
  nc.write(vx, o.lon.data());
  std::vector<double> t(nt), bnds(2 * nt);
  for (size_t i = 0; i < nt; ++i) {
    t[i] = static_cast<double>(o.days[i]) + 0.5;  // the middle of the day the mean is over
    bnds[2 * i] = static_cast<double>(o.days[i]);
    bnds[2 * i + 1] = static_cast<double>(o.days[i] + 1);
  }
  if (nt) {
    nc.write(vt, {0}, {nt}, t.data());
    nc.write(vb, {0, 0}, {nt, 2}, bnds.data());
    std::vector<float> flux(o.pr.size()), prob(o.probability.size());
    for (size_t i = 0; i < flux.size(); ++i) flux[i] = std::isfinite(o.pr[i]) ? static_cast<float>(o.pr[i] / 86400.0) : kFill;
    for (size_t i = 0; i < prob.size(); ++i) prob[i] = std::isfinite(o.probability[i]) ? o.probability[i] : kFill;
    nc.write(vp, {0, 0, 0}, {nt, ny, nx}, flux.data());
    nc.write(vq, {0, 0, 0}, {nt, ny, nx}, prob.data());
  }
  nc.close();
  file.commit();
}

}  // namespace ds
