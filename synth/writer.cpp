#include "synth/writer.h"

#include <algorithm>

#include "io/error.h"

namespace ds::synth {

namespace {

// The time, lat and lon coordinates, with the CF attributes both real products carry.
struct Axes {
  int time_dim, plev_dim = -1, lat_dim, lon_dim;
};

// Dimensions in the order of the data variables (time, [plev,] lat, lon), so `ncdump -h` lists
// them as a reader expects.
Axes define_axes(NcFile& f, const Grid& grid, size_t ntime, bool with_plev) {
  Axes a;
  a.time_dim = f.def_dim("time", ntime);
  if (with_plev) a.plev_dim = f.def_dim("plev", kLevels);
  a.lat_dim = f.def_dim("lat", grid.lat.size());
  a.lon_dim = f.def_dim("lon", grid.lon.size());

  const int t = f.def_var("time", NC_DOUBLE, {a.time_dim});
  f.put_att(t, "standard_name", "time");
  f.put_att(t, "long_name", "time");
  f.put_att(t, "units", kTimeUnits);
  f.put_att(t, "calendar", "standard");
  f.put_att(t, "axis", "T");

  const int lat = f.def_var("lat", NC_DOUBLE, {a.lat_dim});
  f.put_att(lat, "standard_name", "latitude");
  f.put_att(lat, "long_name", "latitude");
  f.put_att(lat, "units", "degrees_north");
  f.put_att(lat, "axis", "Y");

  const int lon = f.def_var("lon", NC_DOUBLE, {a.lon_dim});
  f.put_att(lon, "standard_name", "longitude");
  f.put_att(lon, "long_name", "longitude");
  f.put_att(lon, "units", "degrees_east");
  f.put_att(lon, "axis", "X");
  return a;
}

void write_axes(NcFile& f, const Grid& grid, const std::vector<int64_t>& days) {
  std::vector<double> time(days.size());
  const int64_t epoch = time_epoch_days();
  std::transform(days.begin(), days.end(), time.begin(), [&](int64_t d) { return static_cast<double>(d - epoch); });
  if (!time.empty()) f.write(f.var_id("time"), time.data());
  f.write(f.var_id("lat"), grid.lat.data());
  f.write(f.var_id("lon"), grid.lon.data());
}

void global_attributes(NcFile& f, const std::string& title, const std::string& source, const Config::Synth& cfg) {
  f.put_att(NC_GLOBAL, "title", title);
  f.put_att(NC_GLOBAL, "institution", "downscale synthetic");
  f.put_att(NC_GLOBAL, "source", source);
  f.put_att(NC_GLOBAL, "Conventions", "CF-1.7");
  // No wall-clock time here: the same configuration must give the same file.
  f.put_att(NC_GLOBAL, "history", "downscale synth: seed " + std::to_string(cfg.seed) + ", years " +
                                      std::to_string(cfg.years.first) + "-" + std::to_string(cfg.years.last));
}

// Chunks of whole days over the whole region: `fetch` reads time ranges, so a chunk is never
// read for a few points only, and one block write fills whole chunks.
void chunk_by_days(NcFile& f, int varid, std::vector<size_t> chunk) {
  nc_check(nc_def_var_chunking(f.id(), varid, NC_CHUNKED, chunk.data()), f.where(varid) + ": chunking");
}

}  // namespace

PredictorWriter::PredictorWriter(const std::string& path, const Grid& grid, const std::vector<int64_t>& days,
                                 const Config::Synth& cfg)
    : file_(NcFile::create(path)), grid_(grid) {
  const Axes a = define_axes(file_, grid, days.size(), true);
  const int plev = file_.def_var("plev", NC_DOUBLE, {a.plev_dim});
  file_.put_att(plev, "standard_name", "air_pressure");
  file_.put_att(plev, "long_name", "pressure level");
  file_.put_att(plev, "units", "hPa");
  // Pressure grows downwards; the levels are stored from the surface (1000 hPa) up.
  file_.put_att(plev, "positive", "down");
  file_.put_att(plev, "axis", "Z");

  const size_t tchunk = std::max<size_t>(1, std::min(kBlockDays, days.size()));
  for (Var v : kAllVars) {
    const VarInfo& info = var_info(v);
    const int id = file_.def_var(info.name, NC_FLOAT, {a.time_dim, a.plev_dim, a.lat_dim, a.lon_dim}, 1);
    chunk_by_days(file_, id, {tchunk, size_t(kLevels), grid.lat.size(), grid.lon.size()});
    file_.put_att(id, "standard_name", info.standard_name);
    file_.put_att(id, "long_name", info.long_name);
    file_.put_att(id, "units", info.units);
    var_ids_[static_cast<int>(v)] = id;
  }
  global_attributes(file_, "Synthetic ERA-Interim-like daily predictors", "downscale synthetic large-scale model: travelling waves with AR(1) amplitudes on a seasonal climatology", cfg);
  file_.end_define();

  write_axes(file_, grid, days);
  std::vector<double> levels(kLevelsHpa.begin(), kLevelsHpa.end());
  file_.write(plev, levels.data());
}

void PredictorWriter::write_block(size_t t0, size_t nt, const std::array<std::vector<float>, kVars>& data) {
  if (nt == 0) return;
  for (int v = 0; v < kVars; ++v)
    file_.write(var_ids_[v], {t0, 0, 0, 0}, {nt, size_t(kLevels), grid_.lat.size(), grid_.lon.size()}, data[v].data());
}

PrecipWriter::PrecipWriter(const std::string& path, const Grid& grid, const std::vector<int64_t>& days,
                           const Config::Synth& cfg)
    : file_(NcFile::create(path)), grid_(grid) {
  const Axes a = define_axes(file_, grid, days.size(), false);
  pr_id_ = file_.def_var("pr", NC_FLOAT, {a.time_dim, a.lat_dim, a.lon_dim}, 1);
  const size_t tchunk = std::max<size_t>(1, std::min(kBlockDays, days.size()));
  chunk_by_days(file_, pr_id_, {tchunk, grid.lat.size(), grid.lon.size()});
  file_.put_att(pr_id_, "standard_name", "precipitation_flux");
  file_.put_att(pr_id_, "long_name", "Precipitation");
  file_.put_att(pr_id_, "units", "kg m-2 s-1");
  file_.put_att(pr_id_, "_FillValue", kFillValue, NC_FLOAT);
  file_.put_att(pr_id_, "missing_value", kFillValue, NC_FLOAT);
  global_attributes(file_, "Synthetic EWEMBI-like daily precipitation", "downscale synthetic Bernoulli-Gamma precipitation driven by the synthetic predictors; missing over the ocean", cfg);
  file_.end_define();
  write_axes(file_, grid, days);
}

void PrecipWriter::write_block(size_t t0, size_t nt, const std::vector<float>& pr) {
  if (nt == 0) return;
  file_.write(pr_id_, {t0, 0, 0}, {nt, grid_.lat.size(), grid_.lon.size()}, pr.data());
}

}  // namespace ds::synth
