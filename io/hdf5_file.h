// A thin owner of an HDF5 file for the training store and checkpoints: whole datasets, or rows
// (slices along the first, sample, dimension) for streaming writes and batch reads.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace ds {

class H5File {
 public:
  static H5File create(const std::string& path);  // truncates; use AtomicFile for the name
  static H5File open(const std::string& path);    // read-only; InputError naming the path
  H5File(H5File&& o) noexcept;
  H5File& operator=(H5File&& o) noexcept;
  ~H5File();
  // Flushes and closes, checked: a writer calls it before AtomicFile::commit(); throws Error
  // naming the file and the cause ("No space left on device"). The destructor only cleans up.
  void close();
  const std::string& path() const { return path_; }

  bool exists(const std::string& name) const;
  // Full paths of every dataset below `group`, recursively, in name order.
  std::vector<std::string> datasets(const std::string& group) const;
  void create_group(const std::string& name);

  // Creates a float dataset with the given shape, chunked `chunk_rows` rows at a time along the
  // first dimension (so one sample, or one batch, is one contiguous read), optionally deflated.
  void create_dataset(const std::string& name, hid_t type, const std::vector<hsize_t>& dims,
                      hsize_t chunk_rows = 0, int deflate = 0);
  // Writes rows [row, row+nrows) of a dataset made by create_dataset.
  void write_rows(const std::string& name, hsize_t row, hsize_t nrows, const float* data);
  void write_rows(const std::string& name, hsize_t row, hsize_t nrows, const double* data);
  void write_rows(const std::string& name, hsize_t row, hsize_t nrows, const int64_t* data);
  // Datasets created from now on carry HDF5's Fletcher-32 checksum (per chunk: one for a
  // dataset written whole, one per block of rows for create_dataset's), which every read
  // verifies: a checkpoint or store damaged after it was written is refused naming the dataset
  // instead of predicting, or training, with a flipped bit.
  void checksum_datasets() { checksummed_ = true; }
  // Whole datasets in one call.
  void write(const std::string& name, const std::vector<hsize_t>& dims, const float* data);
  void write(const std::string& name, const std::vector<hsize_t>& dims, const double* data);
  void write(const std::string& name, const std::vector<hsize_t>& dims, const int64_t* data);
  void write(const std::string& name, const std::vector<hsize_t>& dims, const uint8_t* data);

  std::vector<hsize_t> dims(const std::string& name) const;
  void read(const std::string& name, float* out) const;
  void read(const std::string& name, double* out) const;
  void read(const std::string& name, int64_t* out) const;
  void read(const std::string& name, uint8_t* out) const;
  void read_rows(const std::string& name, hsize_t row, hsize_t nrows, float* out) const;
  void read_rows(const std::string& name, hsize_t row, hsize_t nrows, double* out) const;
  void read_rows(const std::string& name, hsize_t row, hsize_t nrows, int64_t* out) const;

  // A 1-D dataset of variable-length UTF-8 strings (netCDF reads it as NC_STRING).
  void write_strings(const std::string& name, const std::vector<std::string>& values);
  std::vector<std::string> read_strings(const std::string& name) const;
  // HDF5 dimension scales (H5DS, the high-level library): the 1-D dataset `scale` becomes the
  // coordinate of a dimension named `dim`; attach_scale makes it the coordinate of dimension
  // `index` of `dataset`. netCDF-4 and xarray then show named dimensions with coordinates instead
  // of phony_dim_N.
  void make_scale(const std::string& scale, const std::string& dim);
  void attach_scale(const std::string& dataset, const std::string& scale, unsigned index);

  // Attributes on the object at `obj` ("/" for the file).
  void set_attr(const std::string& obj, const std::string& name, const std::string& value);
  void set_attr(const std::string& obj, const std::string& name, double value);
  void set_attr(const std::string& obj, const std::string& name, int64_t value);
  std::string attr_string(const std::string& obj, const std::string& name) const;
  double attr_double(const std::string& obj, const std::string& name) const;
  int64_t attr_int(const std::string& obj, const std::string& name) const;
  bool has_attr(const std::string& obj, const std::string& name) const;

  // The SHA-256 of the root attributes `names` (those present, in the list's order, each with its
  // name; doubles as hex floats, exact): the checksum a checkpoint or store keeps over the
  // metadata its readers act on, since HDF5's default format checks no metadata.
  enum class AttrType { kInt, kDouble, kString };
  struct TypedAttr {
    const char* name;
    AttrType type;
  };
  std::string root_attributes_sha256(std::initializer_list<TypedAttr> names) const;

 private:
  H5File(hid_t id, std::string path) : id_(id), path_(std::move(path)) {}
  void write_any(const std::string& name, hid_t type, const std::vector<hsize_t>& dims, const void* data);
  void read_any(const std::string& name, hid_t type, void* out) const;
  void rows_any(const std::string& name, hid_t type, hsize_t row, hsize_t nrows, void* data, bool write) const;
  hid_t id_ = -1;
  std::string path_;
  bool checksummed_ = false;
};

// The system's cause of the HDF5 call that just failed ("No space left on device", read from
// HDF5's error stack; netCDF-4 files fail there too), else HDF5's innermost message. Clears the
// stack.
std::string hdf5_error_cause();

}  // namespace ds
