#include "support/test_support.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace ds::test {

TempDir::TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "downscale-test-XXXXXX").string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string source_dir() {
  const char* s = std::getenv("DS_SOURCE_DIR");
  return s ? s : ".";
}

}  // namespace ds::test

#include <cmath>

#include "io/calendar.h"
#include "io/netcdf_file.h"

namespace ds::test {

void write_source(const std::string& path, const SourceSpec& s) {
  NcFile f = NcFile::create(path);
  const int dt = f.def_dim("time", 0);
  const int dz = s.levels.empty() ? -1 : f.def_dim("plev", s.levels.size());
  const int dy = f.def_dim("lat", s.lat.size()), dx = f.def_dim("lon", s.lon.size());
  const int vt = f.def_var("time", NC_DOUBLE, {dt});
  f.put_att(vt, "units", "hours since 1979-01-01 00:00:00");
  f.put_att(vt, "calendar", "standard");
  int vz = -1;
  if (dz >= 0) {
    vz = f.def_var("plev", NC_DOUBLE, {dz});
    f.put_att(vz, "units", "hPa");
  }
  const int vy = f.def_var("lat", NC_DOUBLE, {dy}), vx = f.def_var("lon", NC_DOUBLE, {dx});
  std::vector<int> dims{dt};
  if (dz >= 0) dims.push_back(dz);
  dims.push_back(dy);
  dims.push_back(dx);
  const int vv = f.def_var(s.variable, NC_FLOAT, dims);
  f.put_att(vv, "units", s.units);
  f.put_att(vv, "_FillValue", 1e20, NC_FLOAT);
  for (const auto& [name, text] : s.globals) f.put_att(NC_GLOBAL, name, text);
  f.end_define();
  if (vz >= 0) f.write(vz, s.levels.data());
  f.write(vy, s.lat.data());
  f.write(vx, s.lon.data());
  const int64_t day0 = days_from_civil({s.first_year, 1, 1}) - days_from_civil({1979, 1, 1});
  const size_t nz = s.levels.empty() ? 1 : s.levels.size(), ny = s.lat.size(), nx = s.lon.size();
  std::vector<float> plane(nz * ny * nx);
  for (int t = 0; t < s.ndays; ++t) {
    const double hours = (day0 + t) * 24.0 + 12.0;  // mid-day stamps, like daily means
    f.write(vt, {size_t(t)}, {1}, &hours);
    for (size_t z = 0; z < nz; ++z)
      for (size_t j = 0; j < ny; ++j)
        for (size_t i = 0; i < nx; ++i) {
          const double v = s.value(t, int(z), int(j), int(i));
          plane[(z * ny + j) * nx + i] = std::isfinite(v) ? float(v) : 1e20f;
        }
    if (s.levels.empty()) f.write(vv, {size_t(t), 0, 0}, {1, ny, nx}, plane.data());
    else f.write(vv, {size_t(t), 0, 0, 0}, {1, nz, ny, nx}, plane.data());
  }
  f.close();
}

}  // namespace ds::test
