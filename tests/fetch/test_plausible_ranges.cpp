// Plausible ranges: the defaults in each field's written unit, a definition's `ranges:` override,
// and the manifest carrying them to preprocess.
#include <gtest/gtest.h>

#include <fstream>

#include "fetch/dataset.h"
#include "fetch/plausible_ranges.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "support/test_support.h"

using namespace ds;

TEST(PlausibleRanges, DefaultsFollowTheWrittenUnit) {
  const std::string cfg = test::source_dir() + "/configs/demo.yaml";
  const Dataset era = load_dataset("synth_era_interim", cfg);
  const ValueRange ta = plausible_range(era.variable("ta"), "ta", "K");
  EXPECT_DOUBLE_EQ(ta.min, 150);
  EXPECT_DOUBLE_EQ(ta.max, 350);
  // E-OBS keeps Celsius: the same bounds, converted.
  const Dataset eobs = load_dataset("iberia_eobs", cfg);
  const ValueRange tg = plausible_range(eobs.variable("tas"), "tas", "degC");
  EXPECT_NEAR(tg.min, -123.15, 1e-9);
  EXPECT_NEAR(tg.max, 76.85, 1e-9);
  const ValueRange pr = plausible_range(load_dataset("synth_ewembi", cfg).variable("pr"), "pr", "mm/day");
  EXPECT_DOUBLE_EQ(pr.min, 0);  // never negative
  EXPECT_FALSE(plausible_range(DatasetVariable{}, "snowfall", "m").known());  // no default: no check
  EXPECT_FALSE(plausible_range(DatasetVariable{}, "ta", "m").known());  // not convertible: no false alarm
}

TEST(PlausibleRanges, DefinitionOverridesAndIsChecked) {
  test::TempDir d;
  std::ofstream(d / "ok.yaml") << "name: x\nurl: a\nvariables:\n  ta: {native: T, units: K}\n"
                                  "ranges:\n  ta: [200, 300]\n";
  const Dataset ok = load_dataset(d / "ok.yaml", d / "run.yaml");
  const ValueRange r = plausible_range(ok.variable("ta"), "ta", "K");
  EXPECT_DOUBLE_EQ(r.min, 200);
  EXPECT_DOUBLE_EQ(r.max, 300);
  std::ofstream(d / "unknown.yaml") << "name: x\nurl: a\nvariables:\n  ta: {native: T, units: K}\n"
                                       "ranges:\n  ua: [-100, 100]\n";
  EXPECT_THROW(load_dataset(d / "unknown.yaml", d / "run.yaml"), UsageError);
  std::ofstream(d / "reversed.yaml") << "name: x\nurl: a\nvariables:\n  ta: {native: T, units: K}\n"
                                        "ranges:\n  ta: [300, 200]\n";
  EXPECT_THROW(load_dataset(d / "reversed.yaml", d / "run.yaml"), UsageError);
}

TEST(PlausibleRanges, TheManifestCarriesThem) {
  test::TempDir d;
  FetchManifest m;
  FetchedFile f;
  f.name = f.variable = "ta@850";
  f.file = "predictors/ta@850.nc";
  f.valid_min = 150, f.valid_max = 350;
  m.predictors.push_back(f);
  f.name = f.variable = "q";
  f.valid_min = f.valid_max = NAN;  // no range known
  m.predictors.push_back(f);
  m.write(d / "manifest.json");
  const FetchManifest back = FetchManifest::read(d / "manifest.json");
  EXPECT_DOUBLE_EQ(back.predictors[0].valid_min, 150);
  EXPECT_DOUBLE_EQ(back.predictors[0].valid_max, 350);
  EXPECT_TRUE(std::isnan(back.predictors[1].valid_min));
}
