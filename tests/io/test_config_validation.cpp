// Config validation up front (issue 12): every number in range, disjoint splits, duplicate keys,
// and errors from --set blamed on the --set that caused them.
#include <gtest/gtest.h>

#include <fstream>

#include "io/config.h"
#include "io/error.h"
#include "config_test_util.h"
#include "support/test_support.h"

using ds::load_config;

namespace {

using ds::test::write;

// The message of the UsageError load_config throws for `text` with `overrides`.
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  ds::test::TempDir d;
  const auto p = write(d, text);
  try {
    load_config(p, overrides);
  } catch (const ds::UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError for " << text;
  return "";
}

bool has(const std::string& msg, const std::string& part) { return msg.find(part) != std::string::npos; }

const std::string kRun = "run: {dir: x}\n";

}  // namespace

TEST(ConfigValidation, EveryNumberOutOfRangeNamesItsKey) {
  // One value out of range at a time; each message names the key.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run.threads=100000", "run.threads"},
      {"fetch.season=[]", "fetch.season"},
      {"run.threads=-1", "run.threads"},
      {"train.epochs=0", "train.epochs"},
      {"train.epochs=-3", "train.epochs"},
      {"train.learning_rate=-0.001", "train.learning_rate"},
      {"train.learning_rate=0", "train.learning_rate"},
      {"train.learning_rate=.nan", "train.learning_rate"},
      {"train.learning_rate=.inf", "train.learning_rate"},
      {"train.batch_size=0", "train.batch_size"},
      {"train.patience=-1", "train.patience"},
      {"train.momentum=1", "train.momentum"},
      {"train.warmup_epochs=-1", "train.warmup_epochs"},
      {"train.allreduce_bucket_mb=.nan", "train.allreduce_bucket_mb"},
      {"train.stall_abort_seconds=-5", "train.stall_abort_seconds"},
      {"train.allreduce_dtype=int8", "train.allreduce_dtype"},
      {"train.device_check=yes", "train.device_check"},
      {"run.communicator=gloo", "run.communicator"},
      {"fetch.parallel=0", "fetch.parallel"},
      {"fetch.attempts=0", "fetch.attempts"},
      {"fetch.retry_delay=-1", "fetch.retry_delay"},
      {"fetch.piece_mb=0", "fetch.piece_mb"},
      {"fetch.timeout_s=-1", "fetch.timeout_s"},
      {"fetch.lat=[-100,10]", "fetch.lat"},
      {"fetch.lon=[-200,10]", "fetch.lon"},
      {"synth.lon=[100,200]", "synth.lon"},  // synth writes -180..180: it refused this after loading
      {"fetch.season=[1,1]", "fetch.season"},
      {"preprocess.min_valid_fraction=1.5", "preprocess.min_valid_fraction"},
      {"preprocess.wet_threshold=-1", "preprocess.wet_threshold"},
      {"preprocess.compression=10", "preprocess.compression"},
      {"preprocess.block_days=0", "preprocess.block_days"},
      {"model.filters=[16,0,16]", "model.filters"},
      {"predict.members=-1", "predict.members"},
      {"evaluate.pcs=0", "evaluate.pcs"},
      {"evaluate.ridge=-1", "evaluate.ridge"},
      {"run.log_level=loud", "run.log_level"},
  };
  for (const auto& [set, key] : cases) {
    const auto msg = error_of(kRun, {set});
    EXPECT_TRUE(has(msg, "key '" + key + "'")) << set << ": " << msg;
    EXPECT_TRUE(has(msg, "--set " + set + ":")) << set << ": " << msg;
  }
}

TEST(ConfigValidation, ValuesInRangeLoad) {
  ds::test::TempDir d;
  const auto c = load_config(write(d, kRun), {"run.threads=1024", "train.epochs=1", "train.learning_rate=1e-3",
                                              "fetch.timeout_s=0", "preprocess.min_valid_fraction=1"});
  EXPECT_EQ(c.run.threads, 1024);
  EXPECT_EQ(c.train.epochs, 1);
  EXPECT_DOUBLE_EQ(c.fetch.timeout_s, 0);
  EXPECT_DOUBLE_EQ(load_config(write(d, kRun)).fetch.timeout_s, 300);  // a time-out by default
}

TEST(ConfigValidation, FileValuesBlameTheFile) {
  ds::test::TempDir d;
  const auto p = write(d, kRun + "train: {epochs: 0}\n");
  try {
    load_config(p);
    FAIL() << "epochs 0 accepted";
  } catch (const ds::UsageError& e) {
    EXPECT_TRUE(has(e.what(), p + ": key 'train.epochs'")) << e.what();
    EXPECT_EQ(e.code(), ds::kExitUsage);
  }
}

TEST(ConfigValidation, OverlappingSplitsNameTheYears) {
  const std::string splits = kRun + "preprocess:\n  train_years: [2000, 2005]\n  validation_years: [2006, 2006]\n"
                                    "  test_years: [2007, 2008]\n";
  ds::test::TempDir d;
  EXPECT_NO_THROW(load_config(write(d, splits)));
  auto msg = error_of(splits, {"preprocess.test_years=[2004,2008]"});
  EXPECT_TRUE(has(msg, "--set preprocess.test_years=[2004,2008]: key 'preprocess.test_years'")) << msg;
  EXPECT_TRUE(has(msg, "'preprocess.train_years' [2000, 2005] in years 2004..2005")) << msg;
  // The override of the earlier split is blamed when the later one is the file's.
  msg = error_of(splits, {"preprocess.train_years=[2000,2006]"});
  EXPECT_TRUE(has(msg, "--set preprocess.train_years=[2000,2006]: key 'preprocess.train_years'")) << msg;
  EXPECT_TRUE(has(msg, "in year 2006")) << msg;
  // An empty split overlaps nothing.
  EXPECT_NO_THROW(load_config(write(d, splits), {"preprocess.validation_years=[]", "preprocess.test_years=[2006,2008]"}));
}

TEST(ConfigValidation, DuplicateKeyNamesKeyAndLines) {
  auto msg = error_of(kRun + "train:\n  epochs: 5\n  batch_size: 4\n  epochs: 50\n");
  EXPECT_TRUE(has(msg, "line 5: key 'train.epochs' is given twice (first on line 3)")) << msg;
  msg = error_of(kRun + "train: {epochs: 5}\nrun: {threads: 1}\n");
  EXPECT_TRUE(has(msg, "key 'run' is given twice")) << msg;
}

// Aliases of aliases ("billion laughs": 10^12 nodes by reference) are walked once each, so the
// file's own mistake is named at once: the duplicate-key walk followed every reference and ran
// for minutes (10^10 nodes: 436 s) before the unknown key. A duplicate under an alias is still
// found, once.
TEST(ConfigValidation, NestedAliasesAreWalkedOnce) {
  std::string laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 12; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) laughs += (k ? ", *a" : "*a") + std::to_string(i - 1);
    laughs += "]\n";
  }
  auto msg = error_of(kRun + laughs);
  EXPECT_TRUE(has(msg, "unknown key 'a0'")) << msg;
  msg = error_of(kRun + "base: &b {epochs: 5, epochs: 6}\ntrain: *b\n");
  EXPECT_TRUE(has(msg, "key 'base.epochs' is given twice")) << msg;
}

// On the command line the last --set of a key wins (a wrapper script's default yields to the
// user's own), and the config says so for the stage to warn.
TEST(ConfigValidation, LastSetOfAKeyWinsAndIsSaid) {
  ds::test::TempDir d;
  const auto c = load_config(write(d, kRun), {"train.epochs=2", "train.batch_size=4", "train.epochs=3"});
  EXPECT_EQ(c.train.epochs, 3);
  ASSERT_EQ(c.replaced_overrides.size(), 1u);
  EXPECT_EQ(c.replaced_overrides[0], "--set train.epochs=3 replaces --set train.epochs=2 (the last --set of a key wins)");
  EXPECT_TRUE(load_config(write(d, kRun), {"train.epochs=2", "train.batch_size=4"}).replaced_overrides.empty());
}

TEST(ConfigValidation, SetErrorsQuoteTheSet) {
  auto msg = error_of(kRun, {"train.epocs=3"});
  EXPECT_TRUE(has(msg, "--set train.epocs=3: unknown key 'train.epocs'")) << msg;
  // The same key in another section is suggested when no near miss is.
  msg = error_of(kRun, {"train.members=3"});
  EXPECT_TRUE(has(msg, "unknown key 'train.members' (did you mean 'predict.members'?)")) << msg;
  // A key without its section: its one key; none where a section is named so too (fetch.predictors).
  msg = error_of(kRun, {"threads=1"});
  EXPECT_TRUE(has(msg, "unknown key 'threads' (did you mean 'run.threads'?)")) << msg;
  msg = error_of(kRun, {"predictors=1"});
  EXPECT_TRUE(has(msg, "unknown key 'predictors'")) << msg;
  EXPECT_FALSE(has(msg, "did you mean")) << msg;
  // An unquoted list, cut by the shell at its space, gets the quoting hint.
  msg = error_of(kRun, {"fetch.years=[2000,"});
  EXPECT_TRUE(has(msg, "cannot parse the value of key 'fetch.years'")) << msg;
  EXPECT_TRUE(has(msg, "only when quoted: --set 'fetch.years=[2000, ...'")) << msg;
  msg = error_of(kRun, {"train.epochs=many"});
  EXPECT_TRUE(has(msg, "--set train.epochs=many: key 'train.epochs' has a value of the wrong type")) << msg;
  // A whole number outside the key's type is named so, with the range, not as the wrong type.
  msg = error_of(kRun, {"train.seed=-1"});
  EXPECT_TRUE(has(msg, "--set train.seed=-1: key 'train.seed' is -1, outside the whole numbers it takes (0 to ")) << msg;
  msg = error_of(kRun, {"train.batch_size=2147483648"});
  EXPECT_TRUE(has(msg, "key 'train.batch_size' is 2147483648, outside the whole numbers it takes (-2147483648 to "
                       "2147483647)"))
      << msg;
  msg = error_of(kRun, {"train.epochs=2.5"});
  EXPECT_TRUE(has(msg, "has a value of the wrong type: 2.5")) << msg;
  // A whole section set at once: its keys are blamed on that --set.
  msg = error_of(kRun, {"predict.checkpoint=''"});
  EXPECT_TRUE(has(msg, "key 'predict.checkpoint' is empty: best, last")) << msg;
  // A step so small that the grid has no size preprocess could build (it was std::bad_alloc).
  msg = error_of(kRun, {"preprocess.predictor_grid={lon: [0, 10], lat: [0, 10], step: 0.000001}"});
  EXPECT_TRUE(has(msg, "key 'preprocess.predictor_grid.step' is 1e-06 degrees: the grid would have")) << msg;
  EXPECT_TRUE(has(msg, "points, more than the 50 million preprocess builds")) << msg;
  msg = error_of(kRun, {"preprocess.predictor_grid={lon: [0, 10], lat: [0, 10], step: 0}"});
  EXPECT_TRUE(has(msg, "--set preprocess.predictor_grid={lon: [0, 10], lat: [0, 10], step: 0}: key "
                       "'preprocess.predictor_grid.step'")) << msg;
}

// A grid given without one of lon, lat and step is an error naming the grid and the part, not
// GridSpec's default (lon 0..0, lat 0..0, step 1) used without a word.
TEST(ConfigValidation, AGridGivesLonLatAndStep) {
  ds::test::TempDir d;
  const std::string grid = kRun + "preprocess:\n  predictand_grid: {lon: [-10, 4], lat: [35, 45]}\n";
  auto msg = error_of(grid);
  EXPECT_TRUE(has(msg, "key 'preprocess.predictand_grid' gives no step: a grid is {lon: [first, last], lat: [first, "
                       "last], step} (degrees)")) << msg;
  msg = error_of(kRun, {"preprocess.predictor_grid={lat: [0, 10], step: 2}"});
  EXPECT_TRUE(has(msg, "--set preprocess.predictor_grid={lat: [0, 10], step: 2}: key 'preprocess.predictor_grid' gives "
                       "no lon")) << msg;
  // A misspelt part is named beside the one missing.
  msg = error_of(kRun + "preprocess:\n  predictor_grid: {lon: [0, 10], lat: [0, 10], stpe: 2}\n");
  EXPECT_TRUE(has(msg, "key 'preprocess.predictor_grid' gives no step: a grid is {lon: [first, last], lat: [first, "
                       "last], step} (degrees); it gives 'stpe'")) << msg;
  // Given whole, or not at all: no error.
  EXPECT_NO_THROW(load_config(write(d, kRun + "preprocess:\n  predictor_grid: {lon: [0, 10], lat: [0, 10], step: 2}\n")));
  EXPECT_NO_THROW(load_config(write(d, kRun)));
}

TEST(ConfigValidation, EvaluateSeasons) {
  ds::test::TempDir d;
  EXPECT_EQ(load_config(write(d, kRun)).evaluate.seasons, (std::vector<std::string>{"annual"}));
  EXPECT_EQ(load_config(write(d, kRun + "evaluate: {seasons: [annual, DJF, JJA]}\n")).evaluate.seasons,
            (std::vector<std::string>{"annual", "DJF", "JJA"}));
  // An unknown name lists the known ones; a repeated or empty list is refused too.
  const std::string unknown = error_of(kRun + "evaluate: {seasons: [annual, winter]}\n");
  EXPECT_TRUE(has(unknown, "evaluate.seasons") && has(unknown, "'winter'") && has(unknown, "DJF, MAM, JJA or SON"))
      << unknown;
  EXPECT_TRUE(has(error_of(kRun, {"evaluate.seasons=[DJF, DJF]"}), "lists DJF twice"));
  EXPECT_TRUE(has(error_of(kRun, {"evaluate.seasons=[]"}), "is empty"));
}

// A section given a value is named as a section, not offered as a near miss of itself; an unknown
// section that a --set made is blamed on that --set, not on the file.
TEST(ConfigValidation, SectionGivenAValueAndUnknownSectionsFromASet) {
  auto msg = error_of(kRun, {"train=5"});
  EXPECT_TRUE(has(msg, "--set train=5: 'train' is a section, not a value: set its keys, e.g. 'train.")) << msg;
  EXPECT_FALSE(has(msg, "did you mean")) << msg;
  msg = error_of("run: [1, 2]\n");
  EXPECT_TRUE(has(msg, "'run' is a section, not a value")) << msg;
  msg = error_of(kRun, {"fetch.predictor.fields=[z@500]"});
  EXPECT_TRUE(has(msg, "--set fetch.predictor.fields=[z@500]: unknown key 'fetch.predictor'")) << msg;
}

// A --set that descends into a value (`run.dir.x`, run.dir a path) is refused as itself, saying
// why and where the value came from: made a section, it was refused later as a value of the wrong
// type and blamed on the --set (or file) that had given run.dir its value. A null section is
// still filled.
TEST(ConfigValidation, ASetInsideAValueIsRefusedAsItself) {
  // The message begins with the --set refused: that one is blamed.
  const auto begins = [](const std::string& msg, const std::string& start) { return msg.rfind(start, 0) == 0; };
  auto msg = error_of(kRun, {"run.dir=elsewhere", "run.dir.x=1"});
  EXPECT_TRUE(begins(msg, "--set run.dir.x=1: 'run.dir' is a value (elsewhere, from --set run.dir=elsewhere), not a "
                          "section: it has no key 'x'")) << msg;
  msg = error_of(kRun, {"run.dir.x=1"});
  EXPECT_TRUE(begins(msg, "--set run.dir.x=1: 'run.dir' is a value (x, from ")) << msg;
  EXPECT_TRUE(has(msg, "c.yaml), not a section: it has no key 'x'")) << msg;
  msg = error_of(kRun, {"run=5", "run.dir.x=1"});
  EXPECT_TRUE(begins(msg, "--set run.dir.x=1: 'run' is a value (5, from --set run=5), not a section: it has no key "
                          "'dir'")) << msg;
  ds::test::TempDir d;
  EXPECT_TRUE(load_config(write(d, kRun + "fetch: {predictand: null}\n"), {"fetch.predictand.source=obs.nc"})
                  .fetch.has_predictand());
}

// yaml-cpp reads the first YAML document of a file alone: a second one, after '---', is refused
// with its line, not ignored. An empty one (a '---' closing the file) is nothing to ignore.
TEST(ConfigValidation, ASecondYamlDocumentIsRefused) {
  const auto msg = error_of(kRun + "---\ntrain: {epochs: 3}\n");
  EXPECT_TRUE(has(msg, "c.yaml: line 3: a second YAML document after '---': only one document is read (join the "
                       "two, or remove the '---')")) << msg;
  const auto after_empty = error_of(kRun + "---\n---\n- 1\n");
  EXPECT_TRUE(has(after_empty, "c.yaml: line 4: a second YAML document")) << after_empty;
  ds::test::TempDir d;
  EXPECT_NO_THROW(load_config(write(d, kRun + "---\n")));
  EXPECT_EQ(load_config(write(d, "---\n" + kRun + "...\n")).run.dir, "x");
}

// A field listed twice would be cut twice into one file: refused before any download.
TEST(ConfigValidation, PredictorListedTwiceIsRefused) {
  const auto msg = error_of(kRun, {"fetch.predictors.fields=[z@500, ta@850, z@500]"});
  EXPECT_TRUE(has(msg, "key 'fetch.predictors.fields' lists z@500 twice")) << msg;
}

// The fetch box must share area with the grids preprocess regrids onto, through the seam too.
TEST(ConfigValidation, FetchBoxOffTheRegriddingGridsIsRefused) {
  const std::string grid = kRun + "preprocess: {predictor_grid: {lon: [-116, -86], lat: [28, 46], step: 2}}\n";
  auto msg = error_of(grid + "fetch: {lon: [-170, -160], lat: [30, 44]}\n");
  EXPECT_TRUE(has(msg, "key 'fetch.lon' gives the box (lon -170..-160, lat 30..44) that shares no area with "
                       "preprocess.predictor_grid's cells (lon -117..-85, lat 27..47)")) << msg;
  msg = error_of(grid + "fetch: {lon: [-110, -90], lat: [-40, -30]}\n");
  EXPECT_TRUE(has(msg, "key 'fetch.lat' gives the box")) << msg;
  // A grid a --set moved off the file's box: the --set is blamed.
  msg = error_of(grid + "fetch: {lon: [-110, -90], lat: [30, 44]}\n", {"preprocess.predictor_grid.lon=[86, 116]"});
  EXPECT_TRUE(has(msg, "--set preprocess.predictor_grid.lon=[86, 116]: key 'preprocess.predictor_grid.lon' gives "
                       "preprocess.predictor_grid's cells (lon 85..117, lat 27..47) that share no area with the box "
                       "(lon -110..-90, lat 30..44)")) << msg;
  // Across the seam: a grid written past 180 and a box just west of it.
  msg = error_of(kRun + "preprocess: {predictor_grid: {lon: [170, 190], lat: [28, 46], step: 2}}\n"
                        "fetch: {lon: [-150, -140], lat: [30, 44]}\n");
  EXPECT_TRUE(has(msg, "shares no area")) << msg;
  // An empty value is no box: nothing to compare.
  ds::test::TempDir e;
  EXPECT_NO_THROW(load_config(write(e, grid + "fetch: {lon: , lat: [30, 44]}\n")));
  ds::test::TempDir d;
  // Overlapping; a half cell past the points still counts.
  EXPECT_NO_THROW(load_config(write(d, grid + "fetch: {lon: [-110, -90], lat: [30, 44]}\n")));
  EXPECT_NO_THROW(load_config(write(d, grid + "fetch: {lon: [-120, -116.5], lat: [30, 44]}\n")));
  EXPECT_NO_THROW(load_config(write(d, kRun + "preprocess: {predictor_grid: {lon: [170, 190], lat: [28, 46], step: 2}}\n"
                                              "fetch: {lon: [170, 190], lat: [30, 44]}\n")));
  // Overlapping only a turn away: preprocess compares longitudes as written (fetch writes the
  // box's), so the grid is refused with the values that would do.
  msg = error_of(kRun + "preprocess: {predictor_grid: {lon: [244, 274], lat: [28, 46], step: 2}}\n"
                        "fetch: {lon: [-110, -90], lat: [30, 44]}\n");
  EXPECT_TRUE(has(msg, "key 'preprocess.predictor_grid.lon' is [244, 274], a turn away from fetch.lon [-110, -90]: write "
                       "the grid in the box's longitudes, [-116, -86]")) << msg;
  msg = error_of(kRun + "preprocess: {predictor_grid: {lon: [170, 190], lat: [28, 46], step: 2}}\n"
                        "fetch: {lon: [-180, -170], lat: [30, 44]}\n");
  EXPECT_TRUE(has(msg, "[170, 190], a turn away from fetch.lon [-180, -170]: write the grid in the box's longitudes, "
                       "[-190, -170]")) << msg;
  // No box (a config for the later stages alone): nothing to compare.
  EXPECT_NO_THROW(load_config(write(d, grid)));
}

// Keys the chosen model or optimizer does not read are said (warned by the stage), not refused.
TEST(ConfigValidation, KeysTheChosenModelOrOptimizerIgnoresAreSaid) {
  ds::test::TempDir d;
  auto c = load_config(write(d, kRun + "model: {name: mnn, filters: [8, 8, 8]}\n"), {"train.momentum=0.5"});
  ASSERT_EQ(c.ignored_keys.size(), 2u);
  EXPECT_TRUE(has(c.ignored_keys[0], "model.filters sets the widths of model 'demo' only; model 'mnn'")) << c.ignored_keys[0];
  EXPECT_TRUE(has(c.ignored_keys[1], "--set train.momentum=0.5: train.momentum applies to train.optimizer sgd only; 'adam'"))
      << c.ignored_keys[1];
  c = load_config(write(d, kRun + "model: {name: demo, filters: [8, 8, 8]}\ntrain: {optimizer: sgd, momentum: 0.5}\n"));
  EXPECT_TRUE(c.ignored_keys.empty());
  EXPECT_TRUE(load_config(write(d, kRun + "model: {name: mnn}\n")).ignored_keys.empty());
}
