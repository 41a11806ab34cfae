// Fetching in tests the way `downscale fetch` does (pipeline/fetch.cpp), and reading a fetched
// file back. Header only: the test folders that link ds_fetch (fetch, preprocess) include it.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fetch/chunk.h"
#include "fetch/dataset.h"
#include "fetch/plan.h"
#include "io/calendar.h"
#include "io/config.h"
#include "io/netcdf_file.h"

namespace ds::test {

// A fetched file (a chunk or a joined field) read back whole.
struct Field {
  std::string variable, units, path;
  int level = 0;
  std::vector<double> lon, lat;  // ascending
  std::vector<int64_t> days;     // days since 1970-01-01 in the file's calendar (stamps floored)
  std::vector<float> values;     // time-major (time, lat, lon); NaN where missing
  size_t field_size() const { return lon.size() * lat.size(); }
};

inline Field read_field(const std::string& path, const std::string& variable) {
  NcFile f = NcFile::open(path);
  Field out;
  out.path = path;
  out.variable = variable;
  const int v = f.var_id(variable);
  out.units = f.att_text(v, "units");
  out.level = static_cast<int>(f.att_double(v, "level_hPa", 0));
  out.lon = f.read_coord("lon");
  out.lat = f.read_coord("lat");
  const auto t = f.read_coord("time");
  const int vt = f.var_id("time");
  const TimeUnits tu = TimeUnits::parse(f.att_text(vt, "units"), f.att_text(vt, "calendar"), path + ": time");
  for (double x : t) out.days.push_back(tu.day_of(x));
  out.values.resize(t.size() * out.lat.size() * out.lon.size());
  if (!out.values.empty()) f.read(v, {0, 0, 0}, {t.size(), out.lat.size(), out.lon.size()}, out.values.data());
  const float fill = static_cast<float>(f.att_double(v, "_FillValue", kFetchFill));
  for (auto& x : out.values)
    if (x == fill) x = std::numeric_limits<float>::quiet_NaN();
  return out;
}

struct LocalFetch {
  FetchPlan plan;            // one field
  size_t ntime = 0;          // days in the joined file
  double missing_share = 0;  // over all its values
};

// Field `w` of the file `source` fetched as `downscale fetch` does for a config naming only a
// source (the pass-through dataset: no unit conversion, any share missing): planned from the
// source's metadata, one chunk per season-year read into <folder of out_path>/chunks/<name>/
// <year>.nc, the chunks joined into `out_path`. Without the worker processes, retries and ledger
// (tests/fetch/test_fetch_workers.cpp and the CLI tests cover those). Errors as the command's:
// InputError naming the source and variable, nothing left at `out_path`.
inline LocalFetch fetch_local(const std::string& source, const FieldWanted& w, const Config::Fetch& request,
                              const std::string& out_path) {
  constexpr size_t kPiece = 64 << 20;
  std::map<std::string, NcFile> opened;
  const SourceOpener open = [&](const std::string& url) -> const NcFile& {
    auto it = opened.find(url);
    if (it == opened.end()) it = opened.emplace(url, open_source(url)).first;
    return it->second;
  };
  LocalFetch r;
  plan_field(open, source, passthrough_dataset(source), w, request, r.plan);
  const FieldPlan& f = r.plan.fields.at(0);
  const std::string dir = out_path.substr(0, out_path.find_last_of('/') + 1) + "chunks/" + f.name + "/";
  std::vector<std::string> chunks;
  double missing = 0;
  for (const ChunkPlan& c : r.plan.chunks) {
    chunks.push_back(dir + std::to_string(c.year) + ".nc");
    missing += fetch_chunk(f, c, open, chunks.back(), kPiece).missing_share * static_cast<double>(c.values(f));
  }
  r.ntime = join_chunks(f, chunks, out_path, "test", kPiece);
  r.missing_share = r.ntime ? missing / static_cast<double>(r.ntime * f.plane()) : 0.0;
  return r;
}

// A request for the box, years and season (months 1..12; a season across the new year takes
// December from the year before, as the command does).
inline Config::Fetch fetch_request(double lon_min, double lon_max, double lat_min, double lat_max, YearRange years,
                                   std::vector<int> season) {
  Config::Fetch f;
  f.lon_min = lon_min, f.lon_max = lon_max, f.lat_min = lat_min, f.lat_max = lat_max, f.has_box = true;
  f.years = years;
  f.season = std::move(season);
  return f;
}

}  // namespace ds::test
