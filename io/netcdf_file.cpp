#include "io/netcdf_file.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "io/error.h"
#include "io/hdf5_file.h"

namespace ds {

void nc_check(int status, const std::string& where) {
  if (status == NC_NOERR) return;
  // netCDF-C's words for a damaged file ("NetCDF: HDF error") do not say what to do.
  // A failed HDF5 file lock (Lustre, NFS) comes as the same HDF error as a damaged file.
  const bool damaged = status == NC_EHDFERR || status == NC_ENOTNC || status == NC_EFILEMETA;
  const std::string hdf5 = status == NC_EHDFERR ? hdf5_error_cause() : "";
  const bool lock = hdf5.find("lock") != std::string::npos;
  throw InputError(where + ": " + nc_strerror(status) +
                   (lock ? " (HDF5: " + hdf5 + "; on a file system without locks, set HDF5_USE_FILE_LOCKING=FALSE)"
                    : damaged ? " (the file is damaged, cut short or not NetCDF: compare its size with what wrote it, "
                                "or write it again)"
                              : ""));
}

namespace {
// A failed write or close is an output failure (exit 1), not bad input. netCDF-4 says only "HDF
// error"; the system's cause (a full disk) is on HDF5's error stack.
// HDF5 does not always record the system's errno (a full disk found while it flushes its
// metadata cache): then a file system with (almost) nothing left is named as the cause.
std::string write_cause(int status, const std::string& path = "") {
  if (status == NC_EHDFERR || status == NC_EIO || status == NC_EFILEMETA) {
    const std::string cause = hdf5_error_cause();
    if (cause.find(std::strerror(ENOSPC)) != std::string::npos || path.empty()) return cause;
    struct statvfs fs {};
    const std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/') + 1);
    if (::statvfs(dir.c_str(), &fs) == 0 && double(fs.f_bavail) * double(fs.f_frsize) < 1024.0 * 1024.0)
      return std::string(std::strerror(ENOSPC)) + " (less than 1 MiB free" +
             (cause == "HDF5 error" ? std::string(")") : "; HDF5 said: " + cause + ")");
    return cause;
  }
  return status > 0 ? std::strerror(status) : nc_strerror(status);
}
// Why nc_create failed: netCDF-C reports EACCES (or an HDF error) for a read-only file system or
// a full disk too. The system's answer to creating and writing the file itself, else netCDF's.
std::string create_cause(const std::string& path, int status) {
  // NC_CLOBBER asked for the file to be replaced, and the failed create has cut it already (an
  // AtomicFile's temporary, in downscale's use): probing it and removing it loses nothing.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return std::strerror(errno);
  // A page of zeros, flushed: a full disk says so here.
  static const char page[4096] = {};
  int err = 0;
  if (::write(fd, page, sizeof page) != static_cast<ssize_t>(sizeof page) || ::fsync(fd) != 0) err = errno;
  ::close(fd);
  ::unlink(path.c_str());
  if (err) return std::strerror(err);
  return write_cause(status, path);  // names a file system with (almost) nothing left
}
void nc_check_write(int status, const std::string& where, const std::string& path) {
  if (status != NC_NOERR) throw Error(where + ": cannot write: " + write_cause(status, path));
}
}  // namespace

NcFile NcFile::open(const std::string& path_or_url) {
  int id = -1;
  const int st = nc_open(path_or_url.c_str(), NC_NOWRITE, &id);
  if (st == ENOENT || st == NC_ENOTFOUND) throw InputError(path_or_url + ": no such file");
  nc_check(st, path_or_url);
  return NcFile(id, path_or_url);
}

NcFile NcFile::create(const std::string& path) {
  int id = -1;
  const int st = nc_create(path.c_str(), NC_CLOBBER | NC_NETCDF4, &id);
  if (st != NC_NOERR) throw Error(path + ": cannot create: " + create_cause(path, st));
  NcFile f(id, path);
  f.writable_ = true;
  return f;
}

NcFile::NcFile(NcFile&& o) noexcept : id_(o.id_), path_(std::move(o.path_)), writable_(o.writable_) { o.id_ = -1; }
NcFile& NcFile::operator=(NcFile&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0) nc_close(id_);
    id_ = o.id_;
    path_ = std::move(o.path_);
    writable_ = o.writable_;
    o.id_ = -1;
  }
  return *this;
}
NcFile::~NcFile() {
  // Only cleanup (after an exception, or a file read): writers call close() and check it.
  if (id_ >= 0) nc_close(id_);
}

void NcFile::close() {
  if (id_ < 0) return;
  const int id = id_;
  id_ = -1;
  // A failed close of a written file means lost data: report it as an output failure. Sync
  // first (a no-op for a file opened to read), so a write-back failure is seen while the file is
  // still intact rather than in the middle of its teardown.
  if (writable_) {
    const int st = nc_sync(id);
    if (st != NC_NOERR) {
      const std::string cause = write_cause(st, path_);
      nc_close(id);
      throw Error(path_ + ": cannot write: " + cause);
    }
  }
  nc_check_write(nc_close(id), path_, path_);
}

std::string NcFile::where(int varid) const {
  if (varid == NC_GLOBAL) return path_;
  char name[NC_MAX_NAME + 1] = {0};
  nc_inq_varname(id_, varid, name);
  return path_ + ": variable '" + name + "'";
}

bool NcFile::has_var(const std::string& name) const {
  int v;
  return nc_inq_varid(id_, name.c_str(), &v) == NC_NOERR;
}

int NcFile::var_id(const std::string& name) const {
  int v;
  if (nc_inq_varid(id_, name.c_str(), &v) == NC_NOERR) return v;
  int nvars = 0;
  nc_inq_nvars(id_, &nvars);
  std::string have;
  for (int i = 0; i < nvars; ++i) {
    char n[NC_MAX_NAME + 1] = {0};
    nc_inq_varname(id_, i, n);
    have += (i ? ", " : "") + std::string(n);
  }
  throw InputError(path_ + ": no variable '" + name + "' (the file has: " + have + ")");
}

nc_type NcFile::var_type(int varid) const {
  nc_type t = NC_NAT;
  nc_check(nc_inq_vartype(id_, varid, &t), where(varid));
  return t;
}

std::vector<std::string> NcFile::var_dims(int varid) const {
  int nd = 0;
  nc_check(nc_inq_varndims(id_, varid, &nd), where(varid));
  std::vector<int> ids(nd);
  nc_check(nc_inq_vardimid(id_, varid, ids.data()), where(varid));
  std::vector<std::string> names;
  for (int d : ids) {
    char n[NC_MAX_NAME + 1] = {0};
    nc_check(nc_inq_dimname(id_, d, n), where(varid));
    names.emplace_back(n);
  }
  return names;
}

size_t NcFile::dim_len(const std::string& name) const {
  int d;
  nc_check(nc_inq_dimid(id_, name.c_str(), &d), path_ + ": dimension '" + name + "'");
  size_t len = 0;
  nc_check(nc_inq_dimlen(id_, d, &len), path_ + ": dimension '" + name + "'");
  return len;
}

std::vector<double> NcFile::read_coord(const std::string& name) const {
  const int v = var_id(name);
  const auto dims = var_dims(v);
  if (dims.size() != 1) throw InputError(where(v) + ": expected a 1-D coordinate");
  std::vector<double> out(dim_len(dims[0]));
  if (!out.empty()) nc_check(nc_get_var_double(id_, v, out.data()), where(v));
  return out;
}

bool NcFile::has_att(int varid, const std::string& name) const {
  size_t len;
  return nc_inq_attlen(id_, varid, name.c_str(), &len) == NC_NOERR;
}

std::vector<std::string> NcFile::att_names(int varid) const {
  int n = 0;
  nc_check(nc_inq_varnatts(id_, varid, &n), varid == NC_GLOBAL ? path_ + ": global attributes" : where(varid));
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    char name[NC_MAX_NAME + 1] = {};
    nc_check(nc_inq_attname(id_, varid, i, name), path_ + ": attribute " + std::to_string(i));
    names.emplace_back(name);
  }
  return names;
}

std::string NcFile::att_text(int varid, const std::string& name, const std::string& fallback) const {
  size_t len = 0;
  nc_type type;
  if (nc_inq_att(id_, varid, name.c_str(), &type, &len) != NC_NOERR) return fallback;
  // NetCDF-4 writers (netCDF4-python's setncattr_string, some CMOR and xarray versions) store text
  // as NC_STRING: a calendar or units read as absent would give another calendar's dates or a
  // false "no units". One string is the value; several are joined, as CF reads a list.
  if (type == NC_STRING) {
    std::vector<char*> v(len, nullptr);
    nc_check(nc_get_att_string(id_, varid, name.c_str(), v.data()), where(varid) + ": attribute " + name);
    std::string s;
    for (size_t i = 0; i < len; ++i) s += (i ? " " : "") + std::string(v[i] ? v[i] : "");
    nc_free_string(len, v.data());
    return s;
  }
  if (type != NC_CHAR) return fallback;
  std::string s(len, '\0');
  nc_check(nc_get_att_text(id_, varid, name.c_str(), s.data()), where(varid) + ": attribute " + name);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::vector<double> NcFile::att_numbers(int varid, const std::string& name, const std::string& where) const {
  size_t len = 0;
  nc_type type;
  if (nc_inq_att(id_, varid, name.c_str(), &type, &len) != NC_NOERR || len < 1) return {};
  if (type == NC_CHAR || type == NC_STRING) {
    // NcML's attributes are text unless typed: netCDF-Java reads "-999" as the number, and so do
    // we where the whole text is numbers (space or comma separated). Anything else is refused.
    const std::string text = att_text(varid, name);
    std::vector<double> v;
    const char* p = text.c_str();
    while (true) {
      while (std::isspace(static_cast<unsigned char>(*p)) || *p == ',') ++p;
      if (!*p) break;
      if (*p == '0' && (p[1] == 'x' || p[1] == 'X')) {  // strtod reads hex; netCDF-Java does not
        v.clear();
        break;
      }
      char* end = nullptr;
      const double x = std::strtod(p, &end);
      if (end == p) {
        v.clear();
        break;
      }
      v.push_back(x);
      p = end;
    }
    if (v.empty())
      throw InputError(where + ": attribute " + name + " is text ('" + text +
                       "'), not a number as CF has it: the values it marks or scales cannot be told");
    return v;
  }
  std::vector<double> v(len);
  nc_check(nc_get_att_double(id_, varid, name.c_str(), v.data()), where + ": attribute " + name);
  return v;
}

double NcFile::att_double(int varid, const std::string& name, double fallback) const {
  size_t len = 0;
  if (nc_inq_attlen(id_, varid, name.c_str(), &len) != NC_NOERR || len < 1) return fallback;
  std::vector<double> v(len);
  if (nc_get_att_double(id_, varid, name.c_str(), v.data()) != NC_NOERR) return fallback;
  return v[0];
}

void NcFile::read(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, float* out) const {
  nc_check(nc_get_vara_float(id_, varid, start.data(), count.data(), out), where(varid));
}
void NcFile::read(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, double* out) const {
  nc_check(nc_get_vara_double(id_, varid, start.data(), count.data(), out), where(varid));
}

int NcFile::def_dim(const std::string& name, size_t len) {
  int d;
  nc_check_write(nc_def_dim(id_, name.c_str(), len == 0 ? NC_UNLIMITED : len, &d), path_ + ": dimension " + name,
                 path_);
  return d;
}

int NcFile::def_var(const std::string& name, nc_type type, const std::vector<int>& dims, int deflate) {
  int v;
  nc_check_write(nc_def_var(id_, name.c_str(), type, static_cast<int>(dims.size()), dims.data(), &v),
                 path_ + ": variable " + name, path_);
  if (deflate > 0 && !dims.empty()) nc_check_write(nc_def_var_deflate(id_, v, 1, 1, deflate), where(v), path_);
  return v;
}

void NcFile::def_chunks(int varid, const std::vector<size_t>& chunks) {
  nc_check_write(nc_def_var_chunking(id_, varid, NC_CHUNKED, chunks.data()), where(varid) + ": chunking", path_);
}

void NcFile::put_att(int varid, const std::string& name, const std::string& text) {
  nc_check_write(nc_put_att_text(id_, varid, name.c_str(), text.size(), text.c_str()),
                 where(varid) + ": attribute " + name, path_);
}

void NcFile::put_att(int varid, const std::string& name, double value, nc_type type) {
  if (type == NC_FLOAT) {
    const float f = static_cast<float>(value);
    nc_check_write(nc_put_att_float(id_, varid, name.c_str(), NC_FLOAT, 1, &f), where(varid) + ": attribute " + name, path_);
  } else {
    nc_check_write(nc_put_att_double(id_, varid, name.c_str(), type, 1, &value), where(varid) + ": attribute " + name, path_);
  }
}

void NcFile::end_define() { nc_check_write(nc_enddef(id_), path_, path_); }

void NcFile::write(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, const float* data) {
  nc_check_write(nc_put_vara_float(id_, varid, start.data(), count.data(), data), where(varid), path_);
}
void NcFile::write(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, const double* data) {
  nc_check_write(nc_put_vara_double(id_, varid, start.data(), count.data(), data), where(varid), path_);
}
void NcFile::write(int varid, const double* data) { nc_check_write(nc_put_var_double(id_, varid, data), where(varid), path_); }

}  // namespace ds
