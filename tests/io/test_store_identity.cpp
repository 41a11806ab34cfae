// The store's identity and content hash, and the reader's refusal of stores whose attributes
// disagree with their datasets (an edited `channels` attribute used to corrupt the heap).
#include <gtest/gtest.h>
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "io/error.h"
#include "io/sha256.h"
#include "io/store_identity.h"
#include "io/training_store.h"
#include "support/test_support.h"

using namespace ds;

namespace {

StoreMeta small_meta() {
  StoreMeta m;
  m.channels = {"z@500", "ta@850", "hus@850"};
  m.predictor_lon = {-10, -8, -6, -4};
  m.predictor_lat = {36, 38, 40};
  m.predictand_lon = {-10, -9, -8, -7, -6};
  m.predictand_lat = {36, 37, 38, 39};
  m.mask.assign(4 * 5, 1);
  m.mean.assign(3 * 12, 0.5f);
  m.sd.assign(3 * 12, 2.0f);
  return m;
}

// Writes the store with `n` train samples, rows in blocks of `block`; `bump` changes one x value.
std::string write_store(const std::string& path, const StoreMeta& m, size_t block, float bump = 0) {
  const size_t n = 6, xs = 3 * 12, ys = 4 * 5;
  std::vector<float> x(n * xs), y(n * ys, 1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3;
  x[5] += bump;
  std::vector<int64_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = int64_t(i);
  StoreWriter w(path, m);
  w.create_split("train", n);
  for (size_t a = 0; a < n; a += block) {
    const size_t k = std::min(block, n - a);
    w.write_rows("train", a, k, &x[a * xs], &y[a * ys], &y[a * ys], &t[a]);
  }
  w.close();
  return path;
}

// Replaces a string attribute of the file's root, as a user's h5py or h5edit would.
void set_root_attr(const std::string& path, const std::string& name, const std::string& value) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Adelete(f, name.c_str());
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, value.size());
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(f, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, type, value.c_str());
  H5Aclose(a), H5Sclose(space), H5Tclose(type), H5Fclose(f);
}

void remove_root_attr(const std::string& path, const std::string& name) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  H5Adelete(f, name.c_str());
  H5Fclose(f);
}

// Rewrites a whole dataset through HDF5, as h5py's `f[name][...] = values` does: the chunks'
// Fletcher-32 checksums are recomputed, so only the reader's own checks can see the edit.
template <typename T>
void edit_dataset(const std::string& path, const std::string& name, hid_t type, void (*edit)(std::vector<T>&)) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  const hid_t ds = H5Dopen2(f, name.c_str(), H5P_DEFAULT);
  ASSERT_GE(ds, 0) << name;
  const hid_t space = H5Dget_space(ds);
  std::vector<T> v(static_cast<size_t>(H5Sget_simple_extent_npoints(space)));
  ASSERT_GE(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  edit(v);
  ASSERT_GE(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), 0);
  H5Sclose(space), H5Dclose(ds), H5Fclose(f);
}

std::string refusal(const std::string& path) {
  try {
    StoreReader r(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Sha256, KnownDigest) {
  Sha256 h;
  h.update("abc", 3);
  EXPECT_EQ(h.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(StoreIdentity, RecordedAndReadBack) {
  test::TempDir d;
  const StoreMeta m = small_meta();
  StoreReader r(write_store(d / "a.h5", m, 6));
  EXPECT_EQ(r.identity(), store_identity(r.meta()));  // the metadata as stored (window filled in)
  EXPECT_EQ(r.meta().channels, m.channels);
  EXPECT_EQ(r.identity().size(), 64u);
  EXPECT_EQ(r.content_hash().size(), 64u);
}

TEST(StoreIdentity, ContentHashIndependentOfBlocksButNotOfData) {
  test::TempDir d;
  const StoreMeta m = small_meta();
  const std::string whole = StoreReader(write_store(d / "a.h5", m, 6)).content_hash();
  EXPECT_EQ(StoreReader(write_store(d / "b.h5", m, 4)).content_hash(), whole);
  EXPECT_NE(StoreReader(write_store(d / "c.h5", m, 6, 1e-3f)).content_hash(), whole);
}

TEST(StoreIdentity, ChangesWithChannelsOrderGridsAndStatistics) {
  const StoreMeta m = small_meta();
  StoreMeta swapped = m, grid = m, stats = m;
  std::swap(swapped.channels[0], swapped.channels[1]);
  grid.predictor_lon[3] = -3;
  stats.sd[7] = 2.5f;
  EXPECT_NE(store_identity(swapped), store_identity(m));
  EXPECT_NE(store_identity(grid), store_identity(m));
  EXPECT_NE(store_identity(stats), store_identity(m));
}

TEST(StoreIdentity, DifferenceSaysWhatDiffers) {
  const StoreMeta m = small_meta();
  const StoreProvenance a = provenance_of(m);
  EXPECT_EQ(provenance_difference(a, a), "");
  StoreMeta swapped = m;
  std::swap(swapped.channels[1], swapped.channels[2]);
  EXPECT_EQ(provenance_difference(a, provenance_of(swapped)),
            "the same 3 channels in another order (channel 2 is ta@850 vs hus@850)");
  StoreMeta other = m;
  other.channels[2] = "ua@850";
  EXPECT_NE(provenance_difference(a, provenance_of(other)).find("other channels"), std::string::npos);
  StoreMeta stats = m;
  stats.mean[0] = 9;
  EXPECT_NE(provenance_difference(a, provenance_of(stats)).find("standardization statistics"), std::string::npos);
  StoreMeta grid = m;
  grid.predictand_lat.push_back(40);
  grid.mask.resize(5 * 5, 1);
  EXPECT_NE(provenance_difference(a, provenance_of(grid)).find("other grid sizes (3 x 4 -> 4 x 5 vs 3 x 4 -> 5 x 5)"),
            std::string::npos);
}

TEST(StoreReaderChecks, ChannelsAttributeDisagreeingWithDatasetsRefused) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  set_root_attr(path, "channels", "z@500,ta@850");  // one fewer than x holds
  const std::string msg = refusal(path);
  EXPECT_NE(msg.find("/stats/mean is 3 x 3 x 4 but the channels attribute (2)"), std::string::npos) << msg;
  set_root_attr(path, "channels", "z@500,ta@850,hus@850,ua@850,va@850");  // more: reads would overrun
  EXPECT_NE(refusal(path).find("the store is inconsistent"), std::string::npos);
}

TEST(StoreReaderChecks, EditedMetadataBreaksTheIdentity) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  set_root_attr(path, "channels", "ta@850,z@500,hus@850");  // same count, another order
  std::string msg = refusal(path);
  EXPECT_NE(msg.find(": its channels is not what its identity attribute was computed from"), std::string::npos) << msg;
  // Each edit is named by what it changed (the store records its identity's parts).
  const std::string other = write_store(d / "b.h5", small_meta(), 6);
  set_root_attr(other, "predictand_units", "mm/h");
  set_root_attr(other, "calendar", "noleap");
  msg = refusal(other);
  EXPECT_NE(msg.find(": its predictand and units and calendar are not what"), std::string::npos) << msg;
  // A store written before the parts were recorded: the general message.
  const std::string old = write_store(d / "c.h5", small_meta(), 6);
  remove_root_attr(old, "identity_parts");
  set_root_attr(old, "calendar", "noleap");
  EXPECT_NE(refusal(old).find("its channels, grids, statistics or mask are not what"), std::string::npos);
}

TEST(StoreReaderChecks, ObservationWindowOutsideTheGridRefused) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  set_root_attr(path, "obs_window", "2,0,4,5");
  EXPECT_NE(refusal(path).find("obs_window does not fit"), std::string::npos);
}

TEST(StoreReaderChecks, OlderFormatsAskForARebuild) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  set_root_attr(path, "format", "downscale-store-2");
  EXPECT_NE(refusal(path).find("rebuild it with `downscale preprocess`"), std::string::npos);
}


// A store damaged on disk (a byte flipped in the training split's data) is refused as it is
// read, naming the dataset (exit 3); before, training and scoring went on with the flipped values.
TEST(StoreIdentity, ADamagedSplitIsRefusedAsItIsRead) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  haddr_t address = HADDR_UNDEF;
  {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(f, "/train/x", H5P_DEFAULT);
    const hid_t space = H5Dget_space(ds);
    hsize_t nchunks = 0, size = 0;
    ASSERT_GE(H5Dget_num_chunks(ds, space, &nchunks), 0);
    ASSERT_GE(nchunks, 1u);
    ASSERT_GE(H5Dget_chunk_info(ds, space, 0, nullptr, nullptr, &address, &size), 0);
    H5Sclose(space), H5Dclose(ds), H5Fclose(f);
  }
  {
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(static_cast<std::streamoff>(address + 8));
    char b = 0;
    io.read(&b, 1);
    b = static_cast<char>(b ^ 0x40);
    io.seekp(static_cast<std::streamoff>(address + 8));
    io.write(&b, 1);
  }
  StoreReader r(path);  // the metadata is whole
  std::vector<float> x(3 * 12);
  try {
    r.read_x("train", 0, 1, x.data());
    FAIL() << "a damaged chunk was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/train/x (its Fletcher-32 checksum does not match"), std::string::npos)
        << e.what();
  }
}

// Grids written over with h5py: the identity does not cover the observation grid, which
// preprocess copies from the output grid's window; a NaN there was read as a coordinate.
TEST(StoreReaderChecks, EditedGridsAreRefused) {
  test::TempDir d;
  const std::string nan = write_store(d / "nan.h5", small_meta(), 6);
  edit_dataset<double>(nan, "/grid/obs_lat", H5T_NATIVE_DOUBLE, [](std::vector<double>& v) { v[1] = NAN; });
  std::string msg = refusal(nan);
  EXPECT_NE(msg.find("/grid/obs_lat is nan at index 1, not a strictly ascending latitude"), std::string::npos) << msg;
  const std::string shifted = write_store(d / "shifted.h5", small_meta(), 6);
  edit_dataset<double>(shifted, "/grid/obs_lon", H5T_NATIVE_DOUBLE, [](std::vector<double>& v) {
    for (double& x : v) x += 0.5;
  });
  msg = refusal(shifted);
  EXPECT_NE(msg.find("/grid/obs_lon[0] is not /grid/predictand_lon[0] (obs_window)"), std::string::npos) << msg;
  const std::string north = write_store(d / "north.h5", small_meta(), 6);
  edit_dataset<double>(north, "/grid/obs_lat", H5T_NATIVE_DOUBLE, [](std::vector<double>& v) { v.back() = 91; });
  EXPECT_NE(refusal(north).find("/grid/obs_lat is 91 at index 3"), std::string::npos) << refusal(north);
  EXPECT_EQ(refusal(write_store(d / "whole.h5", small_meta(), 6)), "");
}

// A zeroed /train/time dated every day 1970-01-01: every read of the days says where it stops
// ascending, so no score, prediction or error message is dated from it.
TEST(StoreReaderChecks, DaysThatDoNotAscendAreRefused) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  edit_dataset<int64_t>(path, "/train/time", H5T_NATIVE_INT64, [](std::vector<int64_t>& v) {
    for (auto& t : v) t = 0;
  });
  StoreReader r(path);
  try {
    r.read_time("train");
    FAIL() << "days that do not ascend were read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/train/time does not ascend at row 1 (day 0 after day 0)"), std::string::npos)
        << e.what();
  }
}

// A split's group without its time was taken for an absent split, its days dropped unsaid.
TEST(StoreReaderChecks, ASplitWithoutItsTimeIsRefused) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  ASSERT_GE(H5Ldelete(f, "/train/time", H5P_DEFAULT), 0);
  H5Fclose(f);
  EXPECT_NE(refusal(path).find("/train has no time dataset"), std::string::npos) << refusal(path);
}

// preprocess records the range of what it wrote to obs and y; a value outside it (a split times
// 1e30, written in with h5py) is refused by the read that meets it, naming the date and box.
TEST(StoreReaderChecks, ObservationsOutsideTheRecordedRangeAreRefused) {
  test::TempDir d;
  const std::string path = write_store(d / "a.h5", small_meta(), 6);
  {
    StoreReader r(path);  // write_store's obs and y are 1 throughout
    EXPECT_EQ(r.meta().obs_min, 1.0f);
    EXPECT_EQ(r.meta().obs_max, 1.0f);
    EXPECT_EQ(r.meta().y_max, 1.0f);
  }
  edit_dataset<float>(path, "/train/obs", H5T_NATIVE_FLOAT, [](std::vector<float>& v) {
    for (size_t i = 2 * 20; i < v.size(); ++i) v[i] *= 1e30f;  // from row 2 on
  });
  std::vector<float> values(6 * 20);
  const auto refused = [&](const std::function<void()>& read) {
    try {
      read();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  {
    StoreReader r(path);
    r.read_obs("train", 0, 2, values.data());  // rows 0 and 1 are as written
    r.read_y("train", 0, 6, values.data());
    std::string msg = refused([&] { r.read_obs("train", 0, 6, values.data()); });
    EXPECT_NE(msg.find("/train/obs is 1e+30, outside [1, 1], the range preprocess wrote (obs_range) on 1970-01-03 "
                       "(row 2), lat 36, lon -10"),
              std::string::npos)
        << msg;
    msg = refused([&] { r.for_each_block("train", StoreReader::Field::obs, [](size_t, size_t, const float*) {}); });
    EXPECT_NE(msg.find("/train/obs is 1e+30"), std::string::npos) << msg;
  }
  // A store written before the ranges were recorded refuses infinities only.
  remove_root_attr(path, "obs_range");
  remove_root_attr(path, "metadata_sha256");
  {
    StoreReader old(path);
    EXPECT_TRUE(std::isnan(old.meta().obs_min));
    old.read_obs("train", 0, 6, values.data());
  }
  std::string msg;
  edit_dataset<float>(path, "/train/obs", H5T_NATIVE_FLOAT, [](std::vector<float>& v) { v[45] = INFINITY; });
  msg = refused([&] { StoreReader(path).read_obs("train", 0, 6, values.data()); });
  EXPECT_NE(msg.find("/train/obs is inf on 1970-01-03 (row 2), lat 37, lon -10"), std::string::npos) << msg;
  // The recorded range itself is under the metadata checksum.
  const std::string other = write_store(d / "b.h5", small_meta(), 6);
  set_root_attr(other, "obs_range", "0,1e31");
  EXPECT_NE(refusal(other).find("do not match their checksum metadata_sha256"), std::string::npos) << refusal(other);
}

// The recorded range reads back as the exact extremes written, for values a decimal text does not
// hold exactly (negative temperatures, NaN where not observed), so that no value preprocess wrote
// is refused by the read that meets it.
TEST(StoreReaderChecks, TheRecordedRangeIsTheExactExtremes) {
  test::TempDir d;
  const size_t n = 6, xs = 3 * 12, ys = 4 * 5;
  std::vector<float> x(n * xs, 0.25f), y(n * ys), obs(n * ys);
  std::mt19937 rng(7);
  std::normal_distribution<float> tas(-3.3f, 7.1f);
  for (size_t i = 0; i < obs.size(); ++i) obs[i] = i % 9 == 4 ? NAN : tas(rng), y[i] = obs[i] * 1.0000001f;
  std::vector<int64_t> t{10, 11, 12, 14, 20, 21};
  StoreWriter w(d / "a.h5", small_meta());
  w.write_split("test", x, y, obs, t);
  w.close();
  float lo = INFINITY, hi = -INFINITY;
  for (float v : obs)
    if (!std::isnan(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  StoreReader r(d / "a.h5");
  EXPECT_EQ(r.meta().obs_min, lo);
  EXPECT_EQ(r.meta().obs_max, hi);
  std::vector<float> back(n * ys);
  r.read_obs("test", 0, n, back.data());
  r.read_y("test", 0, n, back.data());
  r.for_each_block("test", StoreReader::Field::obs, [](size_t, size_t, const float*) {}, 4 * ys * sizeof(float));
}
