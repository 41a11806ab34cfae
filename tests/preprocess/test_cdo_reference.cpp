// Our regridding against CDO's (`cdo remapbil`, `cdo remapcon`, Debian's cdo package) on the
// same NetCDF input, the target grid given to CDO as a grid description file. CDO is the
// reference climate scientists already trust; if we disagree with it, we are wrong or we can say
// exactly why.
//
// Tolerances. Both sides read float32, compute in double and round the result once to float32,
// so with the same weights the outputs are identical; the tolerance is what different weights
// may cost after that single rounding. Measured (CDO 2.1.1, Debian 12, values of order 300):
//   remapcon 0.5° -> 2°, 2° -> 0.5°, and with missing values (CDO's default "fracarea"
//     renormalization): identical, max |diff| 0. CDO's lon-lat cells are bounded by meridians
//     and parallels halfway between centres, as ours (grid.h: cell_edges), and its overlap
//     areas agree with our exact (l2 - l1)(sin p2 - sin p1) to well below float precision.
//     With cell edges inside source cells (2° -> 1.5°, partial overlaps): 1 ulp (3.05e-5, relative
//     1.1e-7) on a few values, the overlap areas differing in the last bits of a double.
//     Asserted: relative 2.4e-7 (2 float32 ulp), room for another CDO build's summation order.
//   remapbil 2° -> model grid and 2° -> 0.5° output grid: max |diff| 3.05e-5 = 1 ulp at 256..512
//     (relative 1.1e-7) on a few values. CDO's bilinear (SCRIP's) finds each target point's
//     position in its source cell by Newton iteration in radians, not by the closed form in
//     degrees, so its weights differ from ours in the last bits of a double, which flips the
//     rounding of some results by one ulp. Asserted: relative 2.4e-7 (2 ulp).
// Before we summed in double (regrid.cpp: apply_weights) the bilinear difference was 6e-5 and
// the conservative one 6e-5: float accumulation, not the method, was the difference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "io/netcdf_file.h"
#include "preprocess/fetched_field.h"
#include "preprocess/regrid.h"
#include "support/test_support.h"

using namespace ds;

namespace {

Grid grid(double lon0, double lon1, double lat0, double lat1, double step) {
  return Grid::from_spec(GridSpec{lon0, lon1, lat0, lat1, step});
}

// A smooth field of order 300 with structure on a few-degree scale, different each day; NaN
// (written as _FillValue) where `ocean` says so.
double field(double lon, double lat, int t) {
  return 280.0 + 15.0 * std::sin(lon * M_PI / 17.0 + 0.3 * t) * std::cos(lat * M_PI / 23.0) + 0.2 * lat +
         3.0 * std::cos((lon + lat) * M_PI / 7.0);
}
bool ocean(double lon, double lat) { return lon < -150 + 0.3 * (lat - 10) || (lat < 25 && lon > -100); }

void write_cf(const std::string& path, const Grid& g, int ntime, bool with_ocean) {
  NcFile f = NcFile::create(path);
  const int dt = f.def_dim("time", 0), dy = f.def_dim("lat", g.lat.size()), dx = f.def_dim("lon", g.lon.size());
  const int vt = f.def_var("time", NC_DOUBLE, {dt});
  f.put_att(vt, "standard_name", "time");
  f.put_att(vt, "units", "days since 1970-01-01 00:00:00");
  f.put_att(vt, "calendar", "standard");
  const int vy = f.def_var("lat", NC_DOUBLE, {dy});
  f.put_att(vy, "standard_name", "latitude");
  f.put_att(vy, "units", "degrees_north");
  const int vx = f.def_var("lon", NC_DOUBLE, {dx});
  f.put_att(vx, "standard_name", "longitude");
  f.put_att(vx, "units", "degrees_east");
  const int vv = f.def_var("ta", NC_FLOAT, {dt, dy, dx});
  f.put_att(vv, "units", "K");
  f.put_att(vv, "_FillValue", 1e20, NC_FLOAT);
  f.end_define();
  f.write(vy, g.lat.data());
  f.write(vx, g.lon.data());
  std::vector<float> plane(g.size());
  for (int t = 0; t < ntime; ++t) {
    const double day = 10957 + t;
    f.write(vt, {size_t(t)}, {1}, &day);
    for (int j = 0; j < g.nlat(); ++j)
      for (int i = 0; i < g.nlon(); ++i)
        plane[j * g.nlon() + i] =
            with_ocean && ocean(g.lon[i], g.lat[j]) ? 1e20f : static_cast<float>(field(g.lon[i], g.lat[j], t));
    f.write(vv, {size_t(t), 0, 0}, {1, g.lat.size(), g.lon.size()}, plane.data());
  }
  f.close();
}

// A CDO grid description file for a regular lon-lat grid.
void write_griddes(const std::string& path, const Grid& g) {
  std::ofstream o(path);
  o.precision(17);
  o << "gridtype = lonlat\nxsize = " << g.nlon() << "\nysize = " << g.nlat() << "\nxfirst = " << g.lon.front()
    << "\nxinc = " << (g.lon[1] - g.lon[0]) << "\nyfirst = " << g.lat.front() << "\nyinc = " << (g.lat[1] - g.lat[0]) << "\n";
}

std::vector<float> read_all(const FetchedField& f) {
  std::vector<size_t> idx(f.days().size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::vector<float> v(idx.size() * f.grid().size());
  f.read(idx, v.data());
  return v;
}

struct Diff {
  double max_abs = 0, max_rel = 0;
  size_t compared = 0, nan_mismatch = 0;
};

// Regrids `src` onto `dst` with CDO's `op` and with ours, and returns the largest differences.
Diff compare_with_cdo(const std::string& op, RegridMethod method, const Grid& src, const Grid& dst, bool with_ocean) {
  test::TempDir dir;
  const int ntime = 3;
  write_cf(dir / "in.nc", src, ntime, with_ocean);
  write_griddes(dir / "grid.txt", dst);
  const std::string cmd = "cdo -s -f nc4 " + op + "," + (dir / "grid.txt") + " " + (dir / "in.nc") + " " + (dir / "cdo.nc");
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd + " (is Debian's cdo installed? scripts/install-deps.sh)");
  const FetchedField in(dir / "in.nc", "ta"), ref(dir / "cdo.nc", "ta");
  EXPECT_EQ(ref.grid().lon, dst.lon);
  EXPECT_EQ(ref.grid().lat, dst.lat);
  const Regridder r(method, in.grid(), dst, "test");
  const auto ours = r.apply(read_all(in), ntime), theirs = read_all(ref);
  Diff d;
  EXPECT_EQ(ours.size(), theirs.size());
  for (size_t k = 0; k < ours.size() && k < theirs.size(); ++k) {
    if (std::isnan(ours[k]) || std::isnan(theirs[k])) {
      d.nan_mismatch += std::isnan(ours[k]) != std::isnan(theirs[k]);
      continue;
    }
    const double a = std::abs(double(ours[k]) - theirs[k]);
    d.max_abs = std::max(d.max_abs, a);
    d.max_rel = std::max(d.max_rel, a / std::abs(double(theirs[k])));
    ++d.compared;
  }
  std::printf("%s %s -> %s%s: max abs %.3g, max rel %.3g over %zu values, %zu missing-value mismatches\n", op.c_str(),
              src.describe().c_str(), dst.describe().c_str(), with_ocean ? " (with missing values)" : "", d.max_abs,
              d.max_rel, d.compared, d.nan_mismatch);
  return d;
}

// The North America grids: ERA-Interim-like 2° source, the model grid, the 0.5° output grid.
const Grid kSrc2 = grid(-166, -60, 10, 72, 2.0);
const Grid kModel = grid(-165, -61, 12, 70, 2.0);
const Grid kOut = grid(-164.75, -60.75, 11.75, 69.75, 0.5);
const Grid kSrcHalf = grid(-166.75, -59.25, 10.25, 71.75, 0.5);
// A 1.5° grid whose cell edges fall inside the source cells: partial overlaps everywhere.
const Grid kOdd = grid(-164.6, -61.1, 12.3, 69.3, 1.5);

}  // namespace

TEST(CdoReference, RemapbilOntoModelGrid) {
  const Diff d = compare_with_cdo("remapbil", RegridMethod::bilinear, kSrc2, kModel, false);
  EXPECT_GT(d.compared, 0u);
  EXPECT_LE(d.max_rel, 2.4e-7);
  EXPECT_EQ(d.nan_mismatch, 0u);
}

TEST(CdoReference, RemapbilOntoOutputGrid) {
  const Diff d = compare_with_cdo("remapbil", RegridMethod::bilinear, kSrc2, kOut, false);
  EXPECT_LE(d.max_rel, 2.4e-7);
  EXPECT_EQ(d.nan_mismatch, 0u);
}

TEST(CdoReference, RemapconCoarsensAndRefines) {
  const Diff coarse = compare_with_cdo("remapcon", RegridMethod::conservative, kSrcHalf, kModel, false);
  EXPECT_LE(coarse.max_rel, 2.4e-7);
  const Diff fine = compare_with_cdo("remapcon", RegridMethod::conservative, kSrc2, kOut, false);
  EXPECT_LE(fine.max_rel, 2.4e-7);
}

TEST(CdoReference, RemapconRenormalizesOverMissingValues) {
  const Diff d = compare_with_cdo("remapcon", RegridMethod::conservative, kSrcHalf, kModel, true);
  EXPECT_LE(d.max_rel, 2.4e-7);
  EXPECT_GT(d.compared, 1000u);
  EXPECT_EQ(d.nan_mismatch, 0u);
}

TEST(CdoReference, RemapconAndRemapbilWithPartialOverlaps) {
  const Diff con = compare_with_cdo("remapcon", RegridMethod::conservative, kSrc2, kOdd, false);
  EXPECT_LE(con.max_rel, 2.4e-7);
  const Diff con_missing = compare_with_cdo("remapcon", RegridMethod::conservative, kSrcHalf, kOdd, true);
  EXPECT_LE(con_missing.max_rel, 2.4e-7);
  EXPECT_EQ(con_missing.nan_mismatch, 0u);
  const Diff bil = compare_with_cdo("remapbil", RegridMethod::bilinear, kSrc2, kOdd, false);
  EXPECT_LE(bil.max_rel, 2.4e-7);
}
