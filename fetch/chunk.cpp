#include "fetch/chunk.h"
#include "fetch/server_probe.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/cf_axes.h"

namespace ds {

namespace {

// Failures of the network or the server, as netCDF-C's DAP client reports them (measured
// against tests/dap_server: a dropped connection gives NC_EDATADDS, a 500 NC_EDAPSVC, a
// refused connection NC_EIO, curl's own time-out NC_ECURL).
bool transient(int status) {
  switch (status) {
    case NC_EDATADDS: case NC_EDAPSVC: case NC_EIO: case NC_ECURL: case NC_EDAP: case NC_EDDS: case NC_EDAS:
      return true;
    default:
      return false;
  }
}

std::string hint(int status) {
  switch (status) {
    case NC_EACCESS: case NC_EAUTH:
      return " (HTTP 401/403: the server wants credentials; put them in ~/.netrc and name it with HTTP.NETRC in ~/.dodsrc)";
    case NC_ENOTFOUND:
      return " (HTTP 404 or no such file: check the dataset's url and the variable)";
    default:
      return "";
  }
}

// A relative path is read from the working folder (as run.dir is): the error names that folder,
// so a definition's `url: tests/data/...` run from elsewhere says where it looked.
std::string working_folder_note(const std::string& path) {
  if (path.empty() || path.front() == '/') return "";
  std::error_code ec;
  const std::string cwd = std::filesystem::current_path(ec).string();
  return ec ? "" : " (a relative path, read from the working folder " + cwd + ")";
}

// The output file's header; the caller writes the coordinates and values.
struct FieldFile {
  NcFile nc;
  int time = -1, time_bnds = -1, lat = -1, lon = -1, var = -1;
};

// One time convention across a run's files (predictions, CMIP daily means): a daily value is
// stamped at 12:00 of its day with time_bnds [00:00, next 00:00], so xarray aligns fetched
// observations with predictions. Readers floor the time, so files stamped at 00:00 (written
// before this convention) still read as the same days.
void write_daily_times(FieldFile& out, size_t start, const std::vector<int64_t>& days) {
  const size_t n = days.size();
  if (!n) return;
  std::vector<double> t(n), bnds(2 * n);
  for (size_t i = 0; i < n; ++i) {
    t[i] = static_cast<double>(days[i]) + 0.5;
    bnds[2 * i] = static_cast<double>(days[i]);
    bnds[2 * i + 1] = static_cast<double>(days[i] + 1);
  }
  out.nc.write(out.time, {start}, {n}, t.data());
  out.nc.write(out.time_bnds, {start, 0}, {n, 2}, bnds.data());
}

// `contiguous`: one block of values (a chunk file, written and read whole a year at a time: one
// write and one read instead of one per day); otherwise chunked by runs of days (the joined file).
FieldFile create_field_file(const std::string& path, const FieldPlan& f, size_t ntime, int deflate, bool contiguous,
                            const std::string& history) {
  FieldFile out{NcFile::create(path)};
  NcFile& nc = out.nc;
  const int dt = nc.def_dim("time", ntime), dy = nc.def_dim("lat", f.lat.size()), dx = nc.def_dim("lon", f.lon.size());
  out.time = nc.def_var("time", NC_DOUBLE, {dt});
  nc.put_att(out.time, "standard_name", "time");
  nc.put_att(out.time, "units", "days since 1970-01-01 00:00:00");
  nc.put_att(out.time, "calendar", cf_name(f.calendar));
  nc.put_att(out.time, "long_name", "time");
  nc.put_att(out.time, "bounds", "time_bnds");
  nc.put_att(out.time, "axis", "T");
  out.time_bnds = nc.def_var("time_bnds", NC_DOUBLE, {dt, nc.def_dim("bnds", 2)});
  out.lat = nc.def_var("lat", NC_DOUBLE, {dy});
  nc.put_att(out.lat, "standard_name", "latitude");
  nc.put_att(out.lat, "units", "degrees_north");
  nc.put_att(out.lat, "axis", "Y");
  out.lon = nc.def_var("lon", NC_DOUBLE, {dx});
  nc.put_att(out.lon, "standard_name", "longitude");
  nc.put_att(out.lon, "units", "degrees_east");
  nc.put_att(out.lon, "axis", "X");
  out.var = nc.def_var(f.var, NC_FLOAT, {dt, dy, dx}, deflate);
  if (contiguous && deflate == 0) {
    nc_check(nc_def_var_chunking(nc.id(), out.var, NC_CONTIGUOUS, nullptr), nc.where(out.var));
    // Every value is written; prefilling would write the whole block twice (HDF5 fills a
    // contiguous dataset entirely on its first write).
    nc_check(nc_def_var_fill(nc.id(), out.var, NC_NOFILL, nullptr), nc.where(out.var));
  } else if (ntime > 0) {
    // Chunks of whole days, about 256 KiB: readers go by runs of days (preprocess 128 at a time
    // through a 1 MiB chunk cache), and a chunk of one day of a small grid (6 KB for the
    // reference predictors) costs more in HDF5's per-chunk index and I/O calls than in data.
    const size_t days = std::max<size_t>(1, std::min<size_t>(ntime, (256u << 10) / (f.plane() * sizeof(float))));
    std::vector<size_t> chunk{days, f.lat.size(), f.lon.size()};
    nc_check(nc_def_var_chunking(nc.id(), out.var, NC_CHUNKED, chunk.data()), nc.where(out.var));
  }
  nc.put_att(out.var, "units", f.out_units());
  // The source's names stay: the long name always, the standard name where the quantity was
  // kept: the units as they were, or converted by udunits2 alone (Celsius -> degC, Pascals -> Pa:
  // a standard name allows any units of its dimension). The definition's scale or offset makes
  // another quantity (a flux in kg m-2 s-1 written as mm/day is lwe_precipitation_rate): then,
  // and for a source without one, the standard variable's name in the units written.
  if (!f.source_long_name.empty()) nc.put_att(out.var, "long_name", f.source_long_name);
  if (!f.source_cell_methods.empty()) nc.put_att(out.var, "cell_methods", f.source_cell_methods);
  const bool same_quantity = f.source_units == f.out_units() || (f.def.scale == 1 && f.def.offset == 0);
  std::string standard_name = same_quantity ? f.source_standard_name : "";
  if (standard_name.empty()) standard_name = standard_name_for(f.var, f.out_units());
  if (!standard_name.empty()) nc.put_att(out.var, "standard_name", standard_name);
  nc.put_att(out.var, "_FillValue", kFetchFill, NC_FLOAT);
  int plev = -1;
  if (f.level > 0) {
    // A scalar pressure coordinate in Pa (CF), so CDO and xarray see the level and a stack of
    // levels concatenates along plev; level_hPa stays for the readers of earlier files.
    nc.put_att(out.var, "level_hPa", f.level, NC_INT);
    plev = define_scalar_vertical(nc, "plev", "air_pressure", "pressure", "Pa", "down");
    nc.put_att(out.var, "coordinates", "plev");
  }
  nc.put_att(out.var, "source_variable", f.native);
  nc.put_att(NC_GLOBAL, "Conventions", "CF-1.8");
  nc.put_att(NC_GLOBAL, "source", f.redacted());
  nc.put_att(NC_GLOBAL, "history", history);
  for (const auto& [name, text] : f.source_globals) nc.put_att(NC_GLOBAL, "original_" + name, text);
  nc.end_define();
  nc.write(out.lat, f.lat.data());
  nc.write(out.lon, f.lon.data());
  if (plev >= 0) {
    const double pa = f.level * 100.0;
    nc.write(plev, &pa);
  }
  return out;
}

namespace {
// A bound as a float, as the values are read; beyond float's range (a valid_max of 1e300) the
// cast would be undefined: infinity of its sign.
float as_float_bound(double b) {
  const double most = std::numeric_limits<float>::max();
  if (b > most) return INFINITY;
  if (b < -most) return -INFINITY;
  return static_cast<float>(b);  // NaN stays NaN
}
}  // namespace

bool is_missing(float raw, const FieldPlan::Encoding& e) {
  if (!std::isfinite(raw) || std::abs(raw) >= 1e19f) return true;
  if (e.has_fill && raw == as_float_bound(e.fill)) return true;
  for (double m : e.missing_values)
    if (raw == as_float_bound(m)) return true;
  // Compared as floats, as the values are read (a double 290.1 would refuse the float 290.1,
  // which is 290.1000061), like the fill and missing values: in the stored numbers, or unpacked.
  const float v = e.range_unpacked ? static_cast<float>(raw * e.pack_scale + e.pack_offset) : raw;
  return !(v >= as_float_bound(e.valid_min) && v <= as_float_bound(e.valid_max));
}

// netCDF-C's DAP client reports some damaged responses only as a line on stderr: a body cut
// short by a dropped connection gives "Error:DAP DATADDS packet is apparently too short" and
// nc_get_vara returns NC_NOERR with garbage in the buffer (netCDF-C 4.9.0, seen against
// tests/dap_server's drop fault). While reading, stderr goes to a pipe that is checked after
// every call; a reported error makes the read fail (and be retried) instead of being written.
class StderrWatch {
 public:
  StderrWatch() {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) return;  // unwatched rather than failing
    saved_ = dup(STDERR_FILENO);
    dup2(fds_[1], STDERR_FILENO);
  }
  ~StderrWatch() {
    if (saved_ < 0) return;
    dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  StderrWatch(const StderrWatch&) = delete;
  StderrWatch& operator=(const StderrWatch&) = delete;
  // What the library wrote since the last call (the pipe is non-blocking on both ends: a flood
  // is dropped, never a deadlock).
  std::string take() {
    std::string out;
    if (saved_ < 0) return out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds_[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  // Throws TransientError if the library reported an error since the last check.
  void check(const std::string& where) {
    const std::string text = take();
    const auto at = text.find("Error");
    if (at == std::string::npos) return;
    throw TransientError(where + ": the DAP client reported: " + text.substr(at, text.find('\n', at) - at));
  }

 private:
  int fds_[2] = {-1, -1};
  int saved_ = -1;
};

}  // namespace

std::string url_host(const std::string& url) {
  const size_t from = url.find("://") + 3, to = url.find('/', from);
  std::string host = url.substr(from, to == std::string::npos ? std::string::npos : to - from);
  if (const size_t at = host.rfind('@'); at != std::string::npos) host.erase(0, at + 1);
  return host;
}

void source_check(int status, const std::string& where) {
  if (status == NC_NOERR) return;
  const std::string msg = where + ": " + nc_strerror(status) + hint(status);
  if (transient(status)) throw TransientError(msg);
  throw InputError(msg);
}

std::string network_hint(const std::string& url) {
  return " (host " + url_host(url) +
         " unreachable? This node may have no network: compute nodes often have none, run fetch on a login node. "
         "Credentials go in ~/.netrc, named by HTTP.NETRC in ~/.dodsrc)";
}

std::string timeout_hint(const std::string& url) {
  // A hang on a URL is how a node whose packets are dropped (no route out) looks too: a
  // connection the server still accepts (within 2 s) tells a silent server from that.
  if (probe_server(url, 2) == ServerProbe::accepts)
    return " (host " + url_host(url) +
           " accepted the connection but did not answer: the server is hung or overloaded; try again later)";
  return network_hint(url);
}

NcFile open_source(const std::string& url) {
  int id = -1;
  int st;
  {
    // The DAP client's notes and parser complaints (a 401 page is parsed as a DDS) are noise
    // next to our one-line error, and could echo a URL: keep them off the terminal.
    StderrWatch quiet;
    st = nc_open(url.c_str(), NC_NOWRITE, &id);
  }
  const bool remote = url.find("://") != std::string::npos;
  if ((st == ENOENT || st == NC_ENOTFOUND) && !remote) throw InputError(url + ": no such file" + working_folder_note(url));
  if (st == ENOENT) throw InputError(redact_credentials(url) + ": no such file");
  // A URL that fails to open for another reason than 404 or 401/403 (which say so): most often
  // no route to the server. Name the host and the usual causes on the same line.
  if (st != NC_NOERR && remote && st != NC_ENOTFOUND && st != NC_EACCESS && st != NC_EAUTH) {
    const std::string msg = redact_credentials(url) + ": " + nc_strerror(st) + network_hint(url);
    if (transient(st)) throw TransientError(msg);
    throw InputError(msg);
  }
  source_check(st, redact_credentials(url));
  return NcFile::adopt(id, redact_credentials(url));
}

ChunkResult fetch_chunk(const FieldPlan& f, const ChunkPlan& c, const std::string& out_path, size_t piece_bytes,
                        const std::function<void(uint64_t)>& on_bytes) {
  std::map<std::string, NcFile> opened;
  const SourceOpener open = [&](const std::string& url) -> const NcFile& {
    auto it = opened.find(url);
    if (it == opened.end()) it = opened.emplace(url, open_source(url)).first;
    return it->second;
  };
  return fetch_chunk(f, c, open, out_path, piece_bytes, on_bytes);
}

ChunkResult fetch_chunk(const FieldPlan& f, const ChunkPlan& c, const NcFile& src, const std::string& out_path,
                        size_t piece_bytes, const std::function<void(uint64_t)>& on_bytes) {
  const SourceOpener open = [&](const std::string& url) -> const NcFile& {
    if (url != f.url) throw Error(redact_credentials(url) + ": not the open source " + f.redacted());
    return src;
  };
  return fetch_chunk(f, c, open, out_path, piece_bytes, on_bytes);
}

ChunkResult fetch_chunk(const FieldPlan& f, const ChunkPlan& c, const SourceOpener& open, const std::string& out_path,
                        size_t piece_bytes, const std::function<void(uint64_t)>& on_bytes) {
  const std::string where0 = ": variable '" + f.native + "', chunk " + c.label(f);
  StderrWatch watch;

  AtomicFile file(out_path);
  FieldFile out = create_field_file(file.temp_path(), f, c.days.size(), 0, true,
                                    "downscale fetch " + c.label(f) + " from " + f.redacted());
  write_daily_times(out, 0, c.days);

  // The chunk's own name, not its temporary one, and where its values came from.
  const std::string file_where = out_path + " (chunk " + c.label(f) + " of " + f.redacted() + ")";
  const size_t ny = f.lat.size(), nx = f.lon.size(), plane = ny * nx;
  const size_t rows = std::max<size_t>(1, piece_bytes / (plane * sizeof(float)));
  // Uninitialized buffers (every element is written before it is read): zero-filling a year of
  // a field twice per chunk showed up in the profile.
  const size_t piece_values = std::min(rows, c.days.size()) * plane;
  std::unique_ptr<float[]> raw(new float[piece_values]), piece(new float[piece_values]);
  size_t t_out = 0, missing = 0;
  std::string first_missing;  // "on 1983-12-11 at lon -4.22, lat 38.5", for the message
  for (const TimeRun& tr : c.time_runs) {
    // The run's file (a field kept in yearly files reads two for a season across the new year).
    const std::string where = redact_credentials(f.urls[tr.source]) + where0;
    const NcFile& src = open(f.urls[tr.source]);
    const FieldPlan::Encoding& enc = f.encodings.at(tr.source);
    // Unpacking and unit conversion are most often the identity; the values are then copied as
    // they are (the double arithmetic below gives the same floats, only slower).
    const bool identity =
        enc.pack_scale == 1 && enc.pack_offset == 0 && f.convert.identity() && f.def.scale == 1 && f.def.offset == 0;
    int v = -1;
    source_check(nc_inq_varid(src.id(), f.native.c_str(), &v), where);
    for (size_t t = tr.start; t < tr.start + tr.count; t += rows) {
      const size_t nt = std::min(rows, tr.start + tr.count - t);
      size_t x_out = 0;  // first output column of this longitude run; the runs cover the grid
      for (const IndexRun& xr : f.lon_runs) {
        std::vector<size_t> start(f.ndims, 0), count(f.ndims, 1);
        start[f.t_ax] = t, count[f.t_ax] = nt;
        if (f.z_ax >= 0) start[f.z_ax] = enc.level_index;
        start[f.y_ax] = f.lat_run.start, count[f.y_ax] = ny;
        start[f.x_ax] = xr.start, count[f.x_ax] = xr.count;
        // Only this hyperslab crosses the network: netCDF-C sends it as a DAP constraint.
        source_check(nc_get_vara_float(src.id(), v, start.data(), count.data(), raw.get()), where);
        watch.check(where);
        // The values are checked as they are converted, rather than read back from the file:
        // the same test validate_chunk makes (missing share, no non-finite value), one pass.
        for (size_t k = 0; k < nt; ++k)
          for (size_t j = 0; j < ny; ++j) {
            const size_t jj = f.lat_descending ? ny - 1 - j : j;
            const float* in = &raw[(k * ny + jj) * xr.count];
            float* o = &piece[k * plane + j * nx + x_out];
            for (size_t i = 0; i < xr.count; ++i) {
              float y = kFetchFill;
              if (!is_missing(in[i], enc)) {
                y = identity ? in[i]
                             : static_cast<float>((((in[i] * enc.pack_scale + enc.pack_offset) * f.convert.scale) +
                                                   f.convert.offset) * f.def.scale + f.def.offset);
                if (!std::isfinite(y))
                  throw InputError(file_where + ": check failed: non-finite value on " + f.date(c.days[t_out + k]));
              }
              if (y == kFetchFill && !missing++) first_missing = missing_point(f, c.days[t_out + k], j, x_out + i);
              o[i] = y;
            }
          }
        x_out += xr.count;
        if (on_bytes) on_bytes(nt * ny * xr.count * sizeof(float));
      }
      out.nc.write(out.var, {t_out, 0, 0}, {nt, ny, nx}, piece.get());
      t_out += nt;
    }
  }
  out.nc.close();

  ChunkResult res;
  res.ntime = c.days.size();
  {
    // What the file says about itself (dimensions, coordinates, time axis, units): metadata only.
    NcFile nc = NcFile::open(file.temp_path());
    check_chunk_layout(nc, file_where, f, c);
  }
  res.missing_share = check_missing_share(missing, file_where, f, c, first_missing);
  res.crc32 = file_crc32(file.temp_path(), &res.bytes);
  file.commit();
  return res;
}

void check_chunk_layout(const NcFile& nc, const std::string& where, const FieldPlan& f, const ChunkPlan& c) {
  auto fail = [&](const std::string& check) { throw InputError(where + ": check failed: " + check); };
  if (!nc.has_var(f.var)) fail("no variable '" + f.var + "'");
  const int v = nc.var_id(f.var);
  if (nc.var_dims(v) != std::vector<std::string>{"time", "lat", "lon"}) fail("dimensions are not (time, lat, lon)");
  if (nc.dim_len("lat") != f.lat.size() || nc.dim_len("lon") != f.lon.size() || nc.dim_len("time") != c.days.size())
    fail("dimension sizes " + std::to_string(nc.dim_len("time")) + " x " + std::to_string(nc.dim_len("lat")) + " x " +
         std::to_string(nc.dim_len("lon")) + ", planned " + std::to_string(c.days.size()) + " x " +
         std::to_string(f.lat.size()) + " x " + std::to_string(f.lon.size()));
  if (nc.read_coord("lat") != f.lat) fail("latitudes differ from the source's");
  if (nc.read_coord("lon") != f.lon) fail("longitudes differ from the source's");
  const auto time = nc.read_coord("time");
  for (size_t i = 0; i < time.size(); ++i) {
    // The day the value is of (12:00 now, 00:00 in chunks an earlier version fetched).
    if (std::floor(time[i]) != static_cast<double>(c.days[i]))
      fail("time step " + std::to_string(i) + " is " + std::to_string(time[i]) + ", planned " + f.date(c.days[i]));
    // The planned days are whole months; inside a month a step of one day is required.
    if (i > 0 && date_from_days(c.days[i], f.calendar).day != 1 && time[i] - time[i - 1] != 1)
      fail("time axis has a gap before " + f.date(c.days[i]));
  }
  if (nc.att_text(v, "units") != f.out_units())
    fail("units '" + nc.att_text(v, "units") + "', expected '" + f.out_units() + "'");
}

std::string missing_point(const FieldPlan& f, int64_t day, size_t row, size_t col) {
  char buf[96];
  std::snprintf(buf, sizeof buf, " at lon %g, lat %g", f.lon[col], f.lat[row]);
  return "on " + f.date(day) + buf;
}

double check_missing_share(size_t missing, const std::string& where, const FieldPlan& f, const ChunkPlan& c,
                          const std::string& first) {
  const size_t total = c.days.size() * f.plane();
  const double share = total ? static_cast<double>(missing) / static_cast<double>(total) : 0.0;
  if (share > f.def.max_missing + 1e-12) {
    // %.3g: one value in a year of a field is 0.0144 %, which %.1f printed as 0.0 %.
    char buf[200];
    std::snprintf(buf, sizeof buf, "%zu of %zu values are missing (%.3g%%), more than the %.3g%% allowed (max_missing)",
                  missing, total, 100 * share, 100 * f.def.max_missing);
    throw InputError(where + ": check failed: " + buf + (first.empty() ? "" : "; the first " + first));
  }
  return share;
}

double validate_chunk(const std::string& path, const FieldPlan& f, const ChunkPlan& c) {
  const std::string where = path + " (chunk " + c.label(f) + ")";
  NcFile nc = NcFile::open(path);
  check_chunk_layout(nc, where, f, c);
  // The missing share, a day at a time.
  const int v = nc.var_id(f.var);
  const size_t plane = f.plane();
  std::vector<float> day(plane);
  size_t missing = 0;
  std::string first;
  for (size_t t = 0; t < c.days.size(); ++t) {
    nc.read(v, {t, 0, 0}, {1, f.lat.size(), f.lon.size()}, day.data());
    for (size_t k = 0; k < plane; ++k) {
      if (day[k] == kFetchFill) {
        if (!missing++) first = missing_point(f, c.days[t], k / f.lon.size(), k % f.lon.size());
      } else if (!std::isfinite(day[k])) {
        throw InputError(where + ": check failed: non-finite value on " + f.date(c.days[t]));
      }
    }
  }
  return check_missing_share(missing, where, f, c, first);
}

std::string file_crc32(const std::string& path, uint64_t* size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot read");
  uLong crc = crc32(0L, Z_NULL, 0);
  const std::streamsize bufsize = 1 << 20;
  std::unique_ptr<char[]> buf(new char[bufsize]);  // not zero-filled: read into before use
  uint64_t total = 0;
  while (in) {
    in.read(buf.get(), bufsize);
    const auto n = in.gcount();
    if (n > 0) crc = crc32(crc, reinterpret_cast<const Bytef*>(buf.get()), static_cast<uInt>(n));
    total += static_cast<uint64_t>(n);
  }
  if (size) *size = total;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  return hex;
}

struct FieldJoiner::Impl {
  FieldPlan f;
  size_t ntime = 0, t_out = 0, piece_bytes = 0;
  AtomicFile file;
  FieldFile out;
  std::vector<float> buf;
  Impl(const FieldPlan& f_, size_t ntime_, const std::string& out_path, const std::string& history, size_t piece)
      : f(f_), ntime(ntime_), piece_bytes(piece), file(out_path),
        out(create_field_file(file.temp_path(), f_, ntime_, 0, false, history)) {
    // Written once, front to back, in whole HDF5 chunks: a small cache is all it needs (the
    // default, 16 MiB per variable, would hold that much of every joined field at once).
    nc_set_var_chunk_cache(out.nc.id(), out.var, size_t{1} << 20, 31, 0.75f);
  }
};

FieldJoiner::FieldJoiner(const FieldPlan& f, size_t ntime, const std::string& out_path, const std::string& history,
                         size_t piece_bytes)
    : impl_(std::make_unique<Impl>(f, ntime, out_path, history, piece_bytes)) {}

FieldJoiner::~FieldJoiner() = default;

size_t FieldJoiner::days() const { return impl_->t_out; }

void FieldJoiner::append(const std::string& chunk_path, size_t expected_days) {
  Impl& j = *impl_;
  NcFile in = NcFile::open(chunk_path);
  const int v = in.var_id(j.f.var);
  const auto time = in.read_coord("time");
  if (time.size() != expected_days || j.t_out + time.size() > j.ntime)
    throw InputError(chunk_path + ": " + std::to_string(time.size()) + " days, planned " + std::to_string(expected_days));
  const size_t ny = j.f.lat.size(), nx = j.f.lon.size(), plane = ny * nx;
  const size_t rows = std::max<size_t>(1, j.piece_bytes / (plane * sizeof(float)));
  std::vector<int64_t> days;
  for (double t : time) days.push_back(static_cast<int64_t>(std::floor(t)));  // chunks of either convention
  write_daily_times(j.out, j.t_out, days);
  for (size_t t = 0; t < time.size(); t += rows) {
    const size_t nt = std::min(rows, time.size() - t);
    j.buf.resize(nt * plane);
    in.read(v, {t, 0, 0}, {nt, ny, nx}, j.buf.data());
    j.out.nc.write(j.out.var, {j.t_out + t, 0, 0}, {nt, ny, nx}, j.buf.data());
  }
  j.t_out += time.size();
}

void FieldJoiner::finish() {
  Impl& j = *impl_;
  if (j.t_out != j.ntime)
    throw Error(j.file.final_path() + ": joined " + std::to_string(j.t_out) + " of " + std::to_string(j.ntime) + " days");
  j.out.nc.close();
  j.file.commit();
}

size_t join_chunks(const FieldPlan& f, const std::vector<std::string>& chunk_paths, const std::string& out_path,
                   const std::string& history, size_t piece_bytes) {
  std::vector<size_t> days;
  size_t ntime = 0;
  for (const auto& p : chunk_paths) ntime += days.emplace_back(NcFile::open(p).dim_len("time"));
  FieldJoiner joiner(f, ntime, out_path, history, piece_bytes);
  for (size_t i = 0; i < chunk_paths.size(); ++i) joiner.append(chunk_paths[i], days[i]);
  joiner.finish();
  return ntime;
}

}  // namespace ds
