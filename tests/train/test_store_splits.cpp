// The split years preprocess was given travel with the store (attribute split_years); a config
// edited since is said by the stages that use the store's splits (train/store_splits.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/config.h"
#include "io/training_store.h"
#include "support/test_support.h"
#include "train/store_splits.h"

using namespace ds;

namespace {

std::string write_store(const std::string& path, const std::string& split_years) {
  StoreMeta m;
  m.channels = {"z@500"};
  m.predictor_lon = {-10, -8};
  m.predictor_lat = {36, 38};
  m.predictand_lon = {-10, -9, -8, -7, -6};
  m.predictand_lat = {36, 37, 38, 39, 40};
  m.mask.assign(25, 1);
  m.mean.assign(4, 0.0f);
  m.sd.assign(4, 1.0f);
  m.split_years = split_years;
  const size_t n = 2;
  std::vector<float> x(n * 4, 0.5f), y(n * 25, 1.0f);
  std::vector<int64_t> t{0, 1};
  StoreWriter w(path, m);
  w.write_split("train", x, y, y, t);
  w.close();
  return path;
}

}  // namespace

TEST(StoreSplitYears, RecordedAndComparedWithTheConfig) {
  test::TempDir d;
  Config cfg;
  cfg.preprocess.train_years = {1979, 2002};
  cfg.preprocess.test_years = {2003, 2008};
  EXPECT_EQ(cfg.preprocess.split_years_text(), "train 1979..2002, validation none, test 2003..2008");
  const StoreReader recorded(write_store(d / "recorded.h5", cfg.preprocess.split_years_text()));
  EXPECT_EQ(recorded.meta().split_years, "train 1979..2002, validation none, test 2003..2008");
  EXPECT_EQ(split_years_change(cfg, recorded), "");

  Config edited = cfg;
  edited.preprocess.test_years = {2004, 2008};
  const std::string said = split_years_change(edited, recorded);
  EXPECT_NE(said.find("recorded.h5 was built with the split years train 1979..2002, validation none, test "
                      "2003..2008; the config now gives train 1979..2002, validation none, test 2004..2008"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("run `downscale preprocess` again and the stages after it"), std::string::npos) << said;

  // A store from before the years were recorded, or a config that gives none (for the later
  // stages alone): nothing to compare.
  const StoreReader older(write_store(d / "older.h5", ""));
  EXPECT_EQ(older.meta().split_years, "");
  EXPECT_EQ(split_years_change(edited, older), "");
  EXPECT_EQ(Config().preprocess.split_years_text(), "");
  EXPECT_EQ(split_years_change(Config(), recorded), "");
}
