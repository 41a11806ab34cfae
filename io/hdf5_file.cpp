#include "io/hdf5_file.h"

#include <algorithm>

#include <hdf5_hl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "io/error.h"
#include "io/sha256.h"

namespace ds {

namespace {

// HDF5 1.10 frees part of a file whose H5Fclose failed (a full disk, EIO) but keeps its id; the
// library's own atexit handler (H5_term_library) then closes that id again and segfaults, so a
// failed write ended in a crash instead of our one-line error and exit 1. Every file we write is
// closed explicitly (and checked) before its rename, so the handler has nothing useful to do:
// switch it off before HDF5 initializes (this runs at static initialization, before main).
const bool kNoHdf5Atexit = [] {
  H5dont_atexit();
  return true;
}();

// RAII for the many small hid_t handles HDF5 hands out. The destructor only cleans up (after an
// exception); writers call close() and check it, as closing a dataset is where HDF5 writes the
// chunks it cached.
struct Handle {
  hid_t id;
  herr_t (*closer)(hid_t);
  Handle(hid_t i, herr_t (*c)(hid_t)) : id(i), closer(c) {}
  ~Handle() {
    if (id >= 0) closer(id);
  }
  herr_t close() {
    const herr_t st = id >= 0 ? closer(id) : 0;
    id = -1;
    return st;
  }
  operator hid_t() const { return id; }
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

// A failed write: the message ends with the system's cause when HDF5 recorded one.
[[noreturn]] void fail_write(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what + ": " + hdf5_error_cause());
}

// A failed read: bad input (exit 3). HDF5's own cause, read before any other call clears it: a
// checksum that does not match is said as such, anything else (an I/O error, a truncated file)
// as HDF5 says it.
[[noreturn]] void fail_read(const std::string& path, const std::string& dataset) {
  const std::string cause = hdf5_error_cause();
  static const std::regex checksum("fletcher", std::regex::icase);  // not HDF5's "metadata checksum"
  throw InputError(path + ": cannot read dataset " + dataset +
                   (std::regex_search(cause, checksum)
                        ? " (its Fletcher-32 checksum does not match: the file was changed or damaged after it "
                          "was written)"
                        : ": " + cause));
}

}  // namespace

std::string hdf5_error_cause() {
  // The file drivers put "errno = 28, error message = 'No space left on device'" in their
  // entry's description; otherwise the innermost entry says the most.
  struct Found {
    std::string system, innermost;
  } found;
  auto walk = [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
    auto* f = static_cast<Found*>(data);
    const std::string desc = e->desc ? e->desc : "";
    static const std::regex sys("errno = ([0-9]+)");
    std::smatch m;
    if (f->system.empty() && std::regex_search(desc, m, sys)) f->system = std::strerror(std::stoi(m[1].str()));
    if (f->innermost.empty() && !desc.empty()) f->innermost = desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk, &found);
  H5Eclear2(H5E_DEFAULT);
  if (!found.system.empty()) return found.system;
  return found.innermost.empty() ? std::string("HDF5 error") : found.innermost;
}

namespace {

// A creation property list of `cls` (file, group, dataset) without HDF5's object timestamps:
// they would make two files of the same content differ (a checkpoint's sha256 in a prediction
// then told an identical retraining from another model), and say nothing the files' own mtime
// does not.
hid_t untimed(hid_t cls) {
  const hid_t p = H5Pcreate(cls);
  H5Pset_obj_track_times(p, false);
  return p;
}

}  // namespace

H5File H5File::create(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // our messages, not HDF5's stack dumps
  Handle fcpl(untimed(H5P_FILE_CREATE), H5Pclose);  // the root group's
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
  if (id < 0) fail_write(path, "cannot create HDF5 file");
  return H5File(id, path);
}

H5File H5File::open(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw InputError(path + ": cannot open HDF5 file (missing or not HDF5)");
  return H5File(id, path);
}

H5File::H5File(H5File&& o) noexcept : id_(o.id_), path_(std::move(o.path_)) { o.id_ = -1; }
H5File& H5File::operator=(H5File&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0) H5Fclose(id_);  // noexcept: a file to keep is closed with close() first
    id_ = o.id_;
    path_ = std::move(o.path_);
    o.id_ = -1;
  }
  return *this;
}
H5File::~H5File() {
  // Only after an exception (or for a file opened to read): the error, if any, is already on
  // its way; HDF5's own messages stay off (H5Eset_auto2 in create/open).
  if (id_ >= 0) {
    H5Fclose(id_);
    H5Eclear2(H5E_DEFAULT);
  }
}
void H5File::close() {
  if (id_ < 0) return;
  // Flush first, while the file is intact: a failure here leaves HDF5 in a sane state, whereas
  // a failed H5Fclose leaves a half-destroyed file behind.
  const hid_t id = id_;
  id_ = -1;
  const bool writable = [&] {
    unsigned intent = 0;
    return H5Fget_intent(id, &intent) >= 0 && (intent & H5F_ACC_RDWR);
  }();
  if (writable && H5Fflush(id, H5F_SCOPE_LOCAL) < 0) {
    const std::string cause = hdf5_error_cause();
    H5Fclose(id);
    H5Eclear2(H5E_DEFAULT);
    fail(path_, "cannot write: " + cause);
  }
  if (H5Fclose(id) < 0) fail_write(path_, "cannot close");
}

bool H5File::exists(const std::string& name) const {
  // H5Lexists must be asked one path component at a time.
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    const size_t next = name.find('/', pos + 1);
    partial = name.substr(0, next);
    if (!partial.empty() && partial != "/" && H5Lexists(id_, partial.c_str(), H5P_DEFAULT) <= 0) return false;
    pos = next;
  }
  return true;
}

std::vector<std::string> H5File::datasets(const std::string& group) const {
  std::vector<std::string> out;
  Handle g(H5Oopen(id_, group.c_str(), H5P_DEFAULT), H5Oclose);
  if (g < 0) return out;
  struct Ctx {
    std::vector<std::string>* out;
    std::string prefix;
  } ctx{&out, group == "/" ? "/" : group + "/"};
  auto visit = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    auto* c = static_cast<Ctx*>(data);
    if (info->type == H5O_TYPE_DATASET) c->out->push_back(c->prefix + name);
    return 0;
  };
  H5Ovisit2(g, H5_INDEX_NAME, H5_ITER_INC, visit, &ctx, H5O_INFO_BASIC);
  return out;
}

void H5File::create_group(const std::string& name) {
  Handle gcpl(untimed(H5P_GROUP_CREATE), H5Pclose);
  Handle g(H5Gcreate2(id_, name.c_str(), H5P_DEFAULT, gcpl, H5P_DEFAULT), H5Gclose);
  if (g < 0 || g.close() < 0) fail_write(path_, "cannot create group " + name);
}

void H5File::create_dataset(const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                            hsize_t chunk_rows, int deflate) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle plist(untimed(H5P_DATASET_CREATE), H5Pclose);
  if (chunk_rows > 0 && !dims.empty() && dims[0] > 0) {
    std::vector<hsize_t> chunk = dims;
    chunk[0] = std::min(chunk_rows, dims[0]);
    H5Pset_chunk(plist, static_cast<int>(chunk.size()), chunk.data());
    if (checksummed_) H5Pset_fletcher32(plist);  // verified on every read of a chunk
    if (deflate > 0) {
      H5Pset_shuffle(plist);
      H5Pset_deflate(plist, static_cast<unsigned>(deflate));
    }
  }
  Handle ds(H5Dcreate2(id_, name.c_str(), type, space, H5P_DEFAULT, plist, H5P_DEFAULT), H5Dclose);
  if (ds < 0) fail_write(path_, "cannot create dataset " + name);
  if (ds.close() < 0) fail_write(path_, "cannot write dataset " + name);
}

void H5File::rows_any(const std::string& name, hid_t type, hsize_t row, hsize_t nrows, void* data, bool write) const {
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (ds < 0) throw InputError(path_ + ": no dataset " + name);
  Handle space(H5Dget_space(ds), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space);
  std::vector<hsize_t> dims(rank), start(rank, 0);
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  if (rank == 0 || row + nrows > dims[0])
    throw InputError(path_ + ": dataset " + name + ": rows " + std::to_string(row) + "+" +
                     std::to_string(nrows) + " out of range " + std::to_string(rank ? dims[0] : 0));
  std::vector<hsize_t> count = dims;
  start[0] = row;
  count[0] = nrows;
  H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  Handle mem(H5Screate_simple(rank, count.data(), nullptr), H5Sclose);
  if (!write) {
    if (H5Dread(ds, type, mem, space, H5P_DEFAULT, data) < 0) fail_read(path_, name);
    return;
  }
  // Closing the dataset writes the chunks HDF5 cached: a full disk shows up there.
  if (H5Dwrite(ds, type, mem, space, H5P_DEFAULT, data) < 0 || ds.close() < 0)
    fail_write(path_, "cannot write dataset " + name);
}

void H5File::write_rows(const std::string& n, hsize_t r, hsize_t k, const float* d) { rows_any(n, H5T_NATIVE_FLOAT, r, k, const_cast<float*>(d), true); }
void H5File::write_rows(const std::string& n, hsize_t r, hsize_t k, const double* d) { rows_any(n, H5T_NATIVE_DOUBLE, r, k, const_cast<double*>(d), true); }
void H5File::write_rows(const std::string& n, hsize_t r, hsize_t k, const int64_t* d) { rows_any(n, H5T_NATIVE_INT64, r, k, const_cast<int64_t*>(d), true); }
void H5File::read_rows(const std::string& n, hsize_t r, hsize_t k, float* d) const { rows_any(n, H5T_NATIVE_FLOAT, r, k, d, false); }
void H5File::read_rows(const std::string& n, hsize_t r, hsize_t k, double* d) const { rows_any(n, H5T_NATIVE_DOUBLE, r, k, d, false); }
void H5File::read_rows(const std::string& n, hsize_t r, hsize_t k, int64_t* d) const { rows_any(n, H5T_NATIVE_INT64, r, k, d, false); }

void H5File::write_any(const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const void* data) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  // Intermediate groups are created on the way, so "weights/conv1/W" needs no separate calls
  // (here, untimed as the rest: HDF5's own way would stamp them).
  for (size_t slash = name.find('/', 1); slash != std::string::npos; slash = name.find('/', slash + 1)) {
    const std::string parent = name.substr(0, slash);
    if (H5Lexists(id_, parent.c_str(), H5P_DEFAULT) <= 0) create_group(parent);
  }
  Handle dcpl(untimed(H5P_DATASET_CREATE), H5Pclose);
  const bool nonempty = !dims.empty() && std::all_of(dims.begin(), dims.end(), [](hsize_t d) { return d > 0; });
  // The filter needs a chunked layout (the whole dataset, one chunk) and fixed-size elements:
  // variable-length strings (a store's channel names) are stored outside the chunks, unchecked.
  if (checksummed_ && nonempty && H5Tis_variable_str(type) <= 0) {
    H5Pset_chunk(dcpl, static_cast<int>(dims.size()), dims.data());
    H5Pset_fletcher32(dcpl);
  }
  Handle ds(H5Dcreate2(id_, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (ds < 0) fail_write(path_, "cannot create dataset " + name);
  if (H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 || ds.close() < 0)
    fail_write(path_, "cannot write dataset " + name);
}
void H5File::write(const std::string& n, const std::vector<hsize_t>& d, const float* p) { write_any(n, H5T_NATIVE_FLOAT, d, p); }
void H5File::write(const std::string& n, const std::vector<hsize_t>& d, const double* p) { write_any(n, H5T_NATIVE_DOUBLE, d, p); }
void H5File::write(const std::string& n, const std::vector<hsize_t>& d, const int64_t* p) { write_any(n, H5T_NATIVE_INT64, d, p); }
void H5File::write(const std::string& n, const std::vector<hsize_t>& d, const uint8_t* p) { write_any(n, H5T_NATIVE_UINT8, d, p); }

void H5File::write_strings(const std::string& name, const std::vector<std::string>& values) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  write_any(name, type, {hsize_t(values.size())}, ptrs.data());
}

std::vector<std::string> H5File::read_strings(const std::string& name) const {
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (ds < 0) throw InputError(path_ + ": no dataset " + name);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, H5T_VARIABLE);
  const auto n = dims(name);
  std::vector<char*> ptrs(n.empty() ? 0 : n[0], nullptr);
  if (H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
    throw InputError(path_ + ": cannot read dataset " + name + " as strings");
  std::vector<std::string> out;
  for (char* p : ptrs) {
    out.emplace_back(p ? p : "");
    std::free(p);  // variable-length strings are malloc'ed by the library
  }
  return out;
}

void H5File::make_scale(const std::string& scale, const std::string& dim) {
  Handle ds(H5Dopen2(id_, scale.c_str(), H5P_DEFAULT), H5Dclose);
  if (ds < 0 || H5DSset_scale(ds, dim.c_str()) < 0 || ds.close() < 0)
    fail_write(path_, "cannot make " + scale + " the dimension scale " + dim);
}

void H5File::attach_scale(const std::string& dataset, const std::string& scale, unsigned index) {
  Handle ds(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  Handle sc(H5Dopen2(id_, scale.c_str(), H5P_DEFAULT), H5Dclose);
  if (ds < 0 || sc < 0 || H5DSattach_scale(ds, sc, index) < 0 || ds.close() < 0 || sc.close() < 0)
    fail_write(path_, "cannot attach the dimension scale " + scale + " to dimension " + std::to_string(index) +
                          " of " + dataset);
}

std::vector<hsize_t> H5File::dims(const std::string& name) const {
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (ds < 0) throw InputError(path_ + ": no dataset " + name);
  Handle space(H5Dget_space(ds), H5Sclose);
  std::vector<hsize_t> d(H5Sget_simple_extent_ndims(space));
  H5Sget_simple_extent_dims(space, d.data(), nullptr);
  return d;
}

void H5File::read_any(const std::string& name, hid_t type, void* out) const {
  Handle ds(H5Dopen2(id_, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (ds < 0) throw InputError(path_ + ": no dataset " + name);
  if (H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0) fail_read(path_, name);
}
void H5File::read(const std::string& n, float* o) const { read_any(n, H5T_NATIVE_FLOAT, o); }
void H5File::read(const std::string& n, double* o) const { read_any(n, H5T_NATIVE_DOUBLE, o); }
void H5File::read(const std::string& n, int64_t* o) const { read_any(n, H5T_NATIVE_INT64, o); }
void H5File::read(const std::string& n, uint8_t* o) const { read_any(n, H5T_NATIVE_UINT8, o); }

namespace {
void put_attr(hid_t file, const std::string& path, const std::string& obj, const std::string& name, hid_t type,
              hid_t space, const void* value) {
  Handle o(H5Oopen(file, obj.c_str(), H5P_DEFAULT), H5Oclose);
  if (o < 0) fail(path, "no object " + obj);
  if (H5Aexists(o, name.c_str()) > 0 && H5Adelete(o, name.c_str()) < 0)
    fail_write(path, "cannot replace attribute " + obj + ":" + name);
  Handle a(H5Acreate2(o, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (a < 0 || H5Awrite(a, type, value) < 0 || a.close() < 0 || o.close() < 0)
    fail_write(path, "cannot write attribute " + obj + ":" + name);
}
}  // namespace

void H5File::set_attr(const std::string& obj, const std::string& name, const std::string& value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, value.empty() ? 1 : value.size());
  H5Tset_strpad(type, H5T_STR_NULLTERM);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  std::string v = value.empty() ? std::string(1, '\0') : value;
  put_attr(id_, path_, obj, name, type, space, v.data());
}
void H5File::set_attr(const std::string& obj, const std::string& name, double value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  put_attr(id_, path_, obj, name, H5T_NATIVE_DOUBLE, space, &value);
}
void H5File::set_attr(const std::string& obj, const std::string& name, int64_t value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  put_attr(id_, path_, obj, name, H5T_NATIVE_INT64, space, &value);
}

bool H5File::has_attr(const std::string& obj, const std::string& name) const {
  Handle o(H5Oopen(id_, obj.c_str(), H5P_DEFAULT), H5Oclose);
  return o >= 0 && H5Aexists(o, name.c_str()) > 0;
}

std::string H5File::attr_string(const std::string& obj, const std::string& name) const {
  Handle o(H5Oopen(id_, obj.c_str(), H5P_DEFAULT), H5Oclose);
  if (o < 0) throw InputError(path_ + ": no object " + obj);
  Handle a(H5Aopen(o, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (a < 0) throw InputError(path_ + ": " + obj + " has no attribute " + name);
  Handle ftype(H5Aget_type(a), H5Tclose);
  const size_t size = H5Tget_size(ftype);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type, size + 1);
  std::string s(size + 1, '\0');
  if (H5Aread(a, type, s.data()) < 0) throw InputError(path_ + ": cannot read attribute " + obj + ":" + name);
  s.resize(std::strlen(s.c_str()));
  return s;
}

double H5File::attr_double(const std::string& obj, const std::string& name) const {
  Handle o(H5Oopen(id_, obj.c_str(), H5P_DEFAULT), H5Oclose);
  Handle a(o < 0 ? -1 : H5Aopen(o, name.c_str(), H5P_DEFAULT), H5Aclose);
  double v = 0;
  if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) throw InputError(path_ + ": " + obj + " has no attribute " + name);
  return v;
}

int64_t H5File::attr_int(const std::string& obj, const std::string& name) const {
  Handle o(H5Oopen(id_, obj.c_str(), H5P_DEFAULT), H5Oclose);
  Handle a(o < 0 ? -1 : H5Aopen(o, name.c_str(), H5P_DEFAULT), H5Aclose);
  int64_t v = 0;
  if (a < 0 || H5Aread(a, H5T_NATIVE_INT64, &v) < 0) throw InputError(path_ + ": " + obj + " has no attribute " + name);
  return v;
}

std::string H5File::root_attributes_sha256(std::initializer_list<TypedAttr> names) const {
  Sha256 h;
  for (const TypedAttr& a : names) {
    if (!has_attr("/", a.name)) continue;
    h.update(std::string(a.name));
    switch (a.type) {
      case AttrType::kInt: h.update(std::to_string(attr_int("/", a.name))); break;
      case AttrType::kDouble: {
        char text[40];
        std::snprintf(text, sizeof text, "%a", attr_double("/", a.name));
        h.update(std::string(text));
        break;
      }
      case AttrType::kString: h.update(attr_string("/", a.name)); break;
    }
  }
  return h.hex();
}

}  // namespace ds
