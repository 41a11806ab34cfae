#include <gtest/gtest.h>

#include <cmath>

#include "io/netcdf_file.h"
#include "io/precipitation_file.h"
#include "support/test_support.h"

using namespace ds;

TEST(PrecipitationFile, RoundTripWithMembersFillAndUnits) {
  test::TempDir d;
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
  o.pr_members.insert(o.pr_members.end(), o.pr.begin(), o.pr.end());
  o.occurrence_rule = "test rule";
  o.history = "test";
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
    EXPECT_NEAR(back.pr_members[n + i], o.pr[i], 1e-6 * o.pr[i] + 1e-9);
    EXPECT_NEAR(back.gamma_scale[i], 4.0f, 4e-6f);  // through kg m-2 s-1 in float32
  }
}
