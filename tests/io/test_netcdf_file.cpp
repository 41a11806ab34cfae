// io/netcdf_file.h's errors: what a user can act on, where netCDF-C's words do not say it.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <vector>

#include "io/error.h"
#include "io/netcdf_file.h"
#include "support/test_support.h"

using namespace ds;

// A file cut short (a copy that failed, a download that stopped) read as "NetCDF: HDF error"
// alone; the message now says the file is damaged and what to do.
TEST(NcFile, ADamagedFileIsSaidToBeDamaged) {
  test::TempDir d;
  const std::string path = d / "a.nc";
  {
    NcFile nc = NcFile::create(path);
    const int t = nc.def_dim("time", 1000);
    const int v = nc.def_var("x", NC_FLOAT, {t});
    nc.end_define();
    std::vector<float> x(1000, 1.0f);
    nc.write(v, {0}, {1000}, x.data());
    nc.close();
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  const std::string cut = test::message_of<Error>([&] {
    NcFile nc = NcFile::open(path);
    std::vector<float> x(1000);
    nc.read(nc.var_id("x"), {0}, {1000}, x.data());
  });
  EXPECT_NE(cut.find(path), std::string::npos) << cut;
  EXPECT_NE(cut.find("the file is damaged, cut short or not NetCDF"), std::string::npos) << cut;
  std::ofstream(d / "text.nc") << "not a NetCDF file\n";
  const std::string text = test::message_of<Error>([&] { NcFile::open(std::string(d / "text.nc")); });
  EXPECT_NE(text.find("not NetCDF"), std::string::npos) << text;
}

// A create on a full disk said "Permission denied" (netCDF-C's EACCES for any failed create).
TEST(NcFile, ACreateOnAFullDiskSaysSo) {
  test::TempDir d;
  const std::string mnt = d / "small";
  std::filesystem::create_directories(mnt);
  if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=64k") != 0) GTEST_SKIP() << "mount -t tmpfs is not permitted here";
  {
    std::ofstream fill(mnt + "/fill");
    const std::vector<char> block(4096, 'x');
    for (int i = 0; i < 64 && fill; ++i) fill.write(block.data(), block.size());
  }
  const std::string full = test::message_of<Error>([&] { NcFile::create(mnt + "/a.nc.tmp-1"); });
  ::umount(mnt.c_str());
  EXPECT_NE(full.find("a.nc.tmp-1: cannot create: No space left on device"), std::string::npos) << full;
}
