// A thin owner of a netCDF-C file handle. netCDF-C's nc_open is also our OPeNDAP client: a
// path that is a URL is read through its DAP library, with only the requested hyperslab on the
// wire. Every error names the file (or URL) and the variable.
#pragma once
#include <netcdf.h>

#include <string>
#include <vector>

namespace ds {

// Throws InputError("<where>: <netCDF message>") if status is not NC_NOERR.
void nc_check(int status, const std::string& where);

class NcFile {
 public:
  static NcFile open(const std::string& path_or_url);
  // Creates a NetCDF-4 file (deflate-capable). Use with AtomicFile for the temporary name.
  static NcFile create(const std::string& path);
  // Takes ownership of a handle opened by a caller that classifies nc_open's errors itself
  // (fetch tells a dropped connection from a 404).
  static NcFile adopt(int ncid, std::string path) { return NcFile(ncid, std::move(path)); }
  NcFile(NcFile&& o) noexcept;
  NcFile& operator=(NcFile&& o) noexcept;
  ~NcFile();

  int id() const { return id_; }
  const std::string& path() const { return path_; }
  // Closes, checked: a writer calls it before AtomicFile::commit(); a failed sync or close is
  // Error (exit 1) naming the file and the cause. The destructor only cleans up.
  void close();

  // --- reading ---
  bool has_var(const std::string& name) const;
  int var_id(const std::string& name) const;  // InputError listing the variables present if absent
  std::vector<std::string> var_dims(int varid) const;
  nc_type var_type(int varid) const;  // as stored (NC_FLOAT, NC_DOUBLE, ...)
  size_t dim_len(const std::string& name) const;
  std::vector<double> read_coord(const std::string& name) const;  // a whole 1-D variable
  std::string att_text(int varid, const std::string& name, const std::string& fallback = "") const;
  bool has_att(int varid, const std::string& name) const;
  std::vector<std::string> att_names(int varid) const;  // NC_GLOBAL: the file's global attributes
  double att_double(int varid, const std::string& name, double fallback) const;
  // Every value of a numeric attribute (missing_value may list several, valid_range has two);
  // empty when absent. Text that is numbers ("-999", as NcML writes untyped attributes) is read
  // as them; other text is an InputError naming `where` (the variable, with credentials
  // redacted) and the attribute: read as a fallback, it would mask or scale the wrong values.
  std::vector<double> att_numbers(int varid, const std::string& name, const std::string& where) const;
  void read(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, float* out) const;
  void read(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, double* out) const;

  // --- writing (define mode until end_define) ---
  int def_dim(const std::string& name, size_t len);  // len 0: unlimited
  int def_var(const std::string& name, nc_type type, const std::vector<int>& dims, int deflate = 0);
  // HDF5 chunk shape of a variable (one length per dimension), before end_define().
  void def_chunks(int varid, const std::vector<size_t>& chunks);
  void put_att(int varid, const std::string& name, const std::string& text);
  void put_att(int varid, const std::string& name, double value, nc_type type = NC_DOUBLE);
  void end_define();
  void write(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, const float* data);
  void write(int varid, const std::vector<size_t>& start, const std::vector<size_t>& count, const double* data);
  void write(int varid, const double* data);  // a whole variable

  std::string where(int varid) const;  // "file: variable 'x'"

 private:
  NcFile(int id, std::string path) : id_(id), path_(std::move(path)) {}
  int id_ = -1;
  std::string path_;
  bool writable_ = false;  // made by create(): close() syncs and reports write failures
};

}  // namespace ds
