// The same configuration gives the same values; another seed gives other weather.
#include <gtest/gtest.h>

#include <algorithm>

#include "synth_test_data.h"

namespace ds::synth {
namespace {

using test::read_all;

struct Arrays {
  std::vector<float> z, hus, pr;
};

Arrays write_and_read(uint64_t seed) {
  ds::test::TempDir dir;
  auto cfg = test::small_config(dir.path(), seed);
  cfg.years = {2004, 2004};
  const SynthFiles files = write_synthetic_dataset(cfg);
  const NcFile pred = NcFile::open(files.predictors), pr = NcFile::open(files.predictand);
  return {read_all(pred, "z"), read_all(pred, "hus"), read_all(pr, "pr")};
}

TEST(SynthDeterminism, SameSeedGivesIdenticalValues) {
  const Arrays a = write_and_read(7), b = write_and_read(7);
  EXPECT_EQ(a.z, b.z);
  EXPECT_EQ(a.hus, b.hus);
  EXPECT_EQ(a.pr, b.pr);
}

TEST(SynthDeterminism, DifferentSeedGivesDifferentValues) {
  const Arrays a = write_and_read(7), b = write_and_read(8);
  EXPECT_NE(a.z, b.z);
  EXPECT_NE(a.pr, b.pr);
}

TEST(SynthDeterminism, WeatherOnADateDoesNotDependOnTheFirstYear) {
  // The modes always start at 1979-01-01, so 2004 written alone equals 2004 within 2003-2004.
  ds::test::TempDir dir;
  const SynthFiles both = write_synthetic_dataset(test::small_config(dir.path(), 7));
  const std::vector<float> z_both = read_all(NcFile::open(both.predictors), "z");
  const std::vector<float> z_2004 = write_and_read(7).z;
  ASSERT_EQ(z_both.size() - z_2004.size(), z_2004.size() / 366 * 365);
  EXPECT_TRUE(std::equal(z_2004.begin(), z_2004.end(), z_both.end() - z_2004.size()));
}

}  // namespace
}  // namespace ds::synth
