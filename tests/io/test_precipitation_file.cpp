#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cmath>
#include <filesystem>
#include <vector>

#include <netcdf.h>

#include "io/error.h"
#include "io/netcdf_file.h"
#include "io/precipitation_file.h"
#include "io/stop_signal.h"
#include "support/test_support.h"

using namespace ds;

namespace {

// Two days on a 2 x 3 grid, every fifth value missing; member 0 is pr, member 1 twice pr.
PrecipitationOutput two_day_output() {
  PrecipitationOutput o;
  o.lon = {-110, -109.5, -109};
  o.lat = {30, 30.5};
  o.days = {12000, 12001};
  const size_t n = 2 * 2 * 3;
  for (size_t i = 0; i < n; ++i) {
    const float v = i % 5 == 0 ? NAN : static_cast<float>(i);
    o.pr.push_back(v);
    o.pr_expected.push_back(v * 0.5f);
    o.p_wet.push_back(std::isnan(v) ? NAN : 0.25f);
    o.gamma_shape.push_back(std::isnan(v) ? NAN : 0.8f);
    o.gamma_scale.push_back(std::isnan(v) ? NAN : 4.0f);
  }
  o.members = 2;
  o.pr_members = o.pr;
  for (float v : o.pr) o.pr_members.push_back(2 * v);
  o.occurrence_rule = "test rule";
  o.history = "test";
  return o;
}

}  // namespace

TEST(PrecipitationFile, RoundTripWithMembersFillAndUnits) {
  test::TempDir d;
  const PrecipitationOutput o = two_day_output();
  const size_t n = o.pr.size();
  write_precipitation(d / "p.nc", o);

  // On disk: a flux in kg m-2 s-1, the fill value over NaN, CF attributes.
  NcFile f = NcFile::open(d / "p.nc");
  const int v = f.var_id("pr");
  EXPECT_EQ(f.att_text(v, "units"), "kg m-2 s-1");
  EXPECT_EQ(f.att_text(v, "standard_name"), "precipitation_flux");
  EXPECT_EQ(f.att_text(v, "cell_methods"), "time: mean");
  EXPECT_EQ(f.att_text(v, "long_name"), "downscaled daily precipitation");  // a label, not a paragraph
  EXPECT_EQ(f.att_text(v, "comment"), "wet days: test rule");
  // The distribution's parameters are no daily means; gamma_scale is in pr's units.
  EXPECT_FALSE(f.has_att(f.var_id("p_wet"), "cell_methods"));
  EXPECT_FALSE(f.has_att(f.var_id("gamma_scale"), "cell_methods"));
  EXPECT_EQ(f.att_text(f.var_id("gamma_scale"), "units"), "kg m-2 s-1");
  EXPECT_EQ(f.att_text(f.var_id("member"), "standard_name"), "realization");
  EXPECT_EQ(f.att_text(f.var_id("time"), "bounds"), "time_bnds");
  EXPECT_EQ(f.att_text(NC_GLOBAL, "Conventions"), "CF-1.8");
  float raw[2];
  f.read(v, {0, 0, 0}, {1, 1, 2}, raw);
  EXPECT_EQ(raw[0], 1e20f);
  EXPECT_NEAR(raw[1], 1.0 / 86400, 1e-12);
  // A chunk per day and member: members are written and read one at a time, and chunks that
  // spanned several were decompressed and recompressed once per member (quadratic in members).
  int storage = -1;
  size_t chunks[4] = {0, 0, 0, 0};
  ASSERT_EQ(nc_inq_var_chunking(f.id(), f.var_id("pr_stochastic"), &storage, chunks), NC_NOERR);
  EXPECT_EQ(storage, NC_CHUNKED);
  EXPECT_EQ(std::vector<size_t>(chunks, chunks + 4), (std::vector<size_t>{1, 1, 2, 3}));
  double bnds[2];
  f.read(f.var_id("time_bnds"), {1, 0}, {1, 2}, bnds);
  EXPECT_EQ(bnds[0], 12001);
  EXPECT_EQ(bnds[1], 12002);

  const PrecipitationOutput back = read_precipitation(d / "p.nc");
  EXPECT_EQ(back.days, o.days);
  EXPECT_EQ(back.members, 2);
  ASSERT_EQ(back.pr.size(), n);
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(o.pr[i])) {
      EXPECT_TRUE(std::isnan(back.pr[i]));
      EXPECT_TRUE(std::isnan(back.pr_members[n + i]));
      continue;
    }
    // float32 on disk in kg m-2 s-1 and back: relative 1e-6.
    EXPECT_NEAR(back.pr[i], o.pr[i], 1e-6 * o.pr[i] + 1e-9);
    EXPECT_NEAR(back.pr_members[i], o.pr[i], 1e-6 * o.pr[i] + 1e-9);
    EXPECT_NEAR(back.pr_members[n + i], 2 * o.pr[i], 2e-6 * o.pr[i] + 1e-9);
    EXPECT_NEAR(back.gamma_scale[i], 4.0f, 4e-6f);  // through kg m-2 s-1 in float32
  }
  // What evaluate reads: the same fields less the gamma parameters.
  const PrecipitationOutput scored = read_precipitation(d / "p.nc", /*gamma=*/false);
  EXPECT_TRUE(scored.gamma_shape.empty() && scored.gamma_scale.empty());
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {  // NaN over the ocean
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
             return x == y || (std::isnan(x) && std::isnan(y));
           });
  };
  EXPECT_TRUE(same(scored.pr_members, back.pr_members));
  EXPECT_TRUE(same(scored.p_wet, back.p_wet));
  EXPECT_TRUE(same(scored.pr, back.pr));
  EXPECT_TRUE(same(scored.pr_expected, back.pr_expected));
  EXPECT_EQ(scored.attributes, back.attributes);
}

// Ctrl-C or Slurm's SIGTERM while the members are written: Interrupted naming the member, and
// neither the file nor its temporary left behind.
TEST(PrecipitationFile, StopRequestWhileWritingMembersLeavesNothing) {
  test::TempDir d;
  set_stop_request(SIGTERM);
  try {
    write_precipitation(d / "p.nc", two_day_output());
    ADD_FAILURE() << "no Interrupted";
  } catch (const Interrupted& e) {
    EXPECT_NE(std::string(e.what()).find("writing stochastic member 1 of 2 to "), std::string::npos) << e.what();
    EXPECT_EQ(e.signal_number(), SIGTERM);
  }
  set_stop_request(0);
  EXPECT_TRUE(std::filesystem::is_empty(d.path())) << "left behind in " << d.path();
}

// predict writes a long run a block of days at a time: blocks of one day each give the file of
// one write (every variable, the members included, equal as floats), and a file not given all
// its days is never renamed into place: commit() names the file and the days, and the previous
// output stays as it was, without a temporary beside it.
TEST(PrecipitationFile, BlocksOfDaysGiveTheFileOfOneWriteAndAnIncompleteFileIsNotCommitted) {
  test::TempDir d;
  const PrecipitationOutput o = two_day_output();
  write_precipitation(d / "whole.nc", o);
  const size_t plane = o.lat.size() * o.lon.size();
  {
    PrecipitationWriter w(d / "blocks.nc", o);
    for (size_t t = 0; t < o.days.size(); ++t) {
      std::vector<float> members;
      for (int m = 0; m < o.members; ++m)
        members.insert(members.end(), o.pr_members.begin() + (m * o.days.size() + t) * plane,
                       o.pr_members.begin() + (m * o.days.size() + t + 1) * plane);
      const size_t at = t * plane;
      w.write({1, o.pr.data() + at, o.pr_expected.data() + at, o.p_wet.data() + at, o.gamma_shape.data() + at,
               o.gamma_scale.data() + at, members.data()});
      EXPECT_EQ(w.days_written(), t + 1);
    }
    w.commit();
  }
  const PrecipitationOutput a = read_precipitation(d / "whole.nc"), b = read_precipitation(d / "blocks.nc");
  auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!(x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i])))) return false;
    return true;
  };
  EXPECT_EQ(a.days, b.days);
  for (const auto& [x, y] : {std::pair{&a.pr, &b.pr}, {&a.pr_expected, &b.pr_expected}, {&a.p_wet, &b.p_wet},
                             {&a.gamma_shape, &b.gamma_shape}, {&a.gamma_scale, &b.gamma_scale},
                             {&a.pr_members, &b.pr_members}})
    EXPECT_TRUE(same(*x, *y));

  // One day of two, then commit: an Error naming the file and the count; blocks.nc unchanged.
  const auto before = std::filesystem::last_write_time(d / "blocks.nc");
  try {
    PrecipitationWriter w(d / "blocks.nc", o);
    std::vector<float> members(o.members * plane, 0.0f);
    w.write({1, o.pr.data(), o.pr_expected.data(), o.p_wet.data(), o.gamma_shape.data(), o.gamma_scale.data(),
             members.data()});
    w.commit();
    ADD_FAILURE() << "an incomplete file was committed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blocks.nc: 1 of 2 days written"), std::string::npos) << e.what();
  }
  EXPECT_EQ(std::filesystem::last_write_time(d / "blocks.nc"), before);
  EXPECT_EQ(read_precipitation(d / "blocks.nc").pr_members.size(), b.pr_members.size());
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 2u) << "a temporary file was left in " << d.path();
  // More days than the file holds, or a block without its members: Error, nothing written.
  PrecipitationWriter w(d / "more.nc", o);
  std::vector<float> three(3 * plane, 1.0f), members(o.members * 3 * plane, 1.0f);
  EXPECT_THROW(w.write({3, three.data(), three.data(), three.data(), three.data(), three.data(), members.data()}), Error);
  EXPECT_THROW(w.write({1, three.data(), three.data(), three.data(), three.data(), three.data(), nullptr}), Error);
  EXPECT_EQ(w.days_written(), 0u);
}

// A field in units other than the writer's (K under pr's name, an edit, another tool's file) was
// scaled as a flux and scored with exit 0: the reader names the variable and its units.
TEST(PrecipitationFile, FieldsInOtherUnitsAreRefused) {
  test::TempDir d;
  for (const char* variable : {"pr", "pr_expected", "p_wet", "pr_stochastic"}) {
    const std::string path = d / (std::string(variable) + ".nc");
    write_precipitation(path, two_day_output());
    int nc = -1, var = -1;
    ASSERT_EQ(nc_open(path.c_str(), NC_WRITE, &nc), NC_NOERR);
    ASSERT_EQ(nc_redef(nc), NC_NOERR);
    ASSERT_EQ(nc_inq_varid(nc, variable, &var), NC_NOERR);
    ASSERT_EQ(nc_put_att_text(nc, var, "units", 1, "K"), NC_NOERR);
    ASSERT_EQ(nc_close(nc), NC_NOERR);
    try {
      read_precipitation(path, false);
      ADD_FAILURE() << variable << " in K was read";
    } catch (const InputError& e) {
      const std::string want = std::string(variable) + " is in 'K', not the '" +
                               (std::string(variable) == "p_wet" ? "1" : "kg m-2 s-1") + "' downscale predict writes";
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}
