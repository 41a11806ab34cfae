// Whether the config's preprocess settings are still those the store was built with. train,
// predict and evaluate use the store as it is (its splits, predictors, wet-day threshold, grids,
// standardization, gap filling, mask rule, regridding); a user who edited one of those in the
// config and did not run preprocess again would otherwise train, predict or score with the old
// setting without a word.
#pragma once
#include <string>
#include <vector>

#include "io/config.h"
#include "io/training_store.h"

namespace ds {

struct StoreSettingChange {
  // e.g. "preprocess.wet_threshold 0.99 mm/day (the config now gives 3, from --set
  // preprocess.wet_threshold=3)": the store's value, the config's and where it came from.
  std::string text;
  bool needs_fetch = false;  // other predictors: fetch them before preprocess can use them
};

// One entry per setting that differs from the store's record of it. A config that gives no
// preprocess key (one for the later stages alone) is compared only on the split years and the
// predictors it gives; one that gives any preprocess key describes the store, and its defaults
// count too (a deleted `wet_threshold: 3` line is a change to 0.99). The predictor grid and the
// predictors are compared only where the config gives them (absent: the source's grid, the
// fetched fields). Settings the store does not record (built before they were recorded) are not
// compared.
std::vector<StoreSettingChange> store_setting_changes(const Config& cfg, const StoreReader& store);

// "" when there are no changes; otherwise one sentence naming the store, each change and what to
// run again, for the stage to warn with.
std::string store_settings_change(const Config& cfg, const StoreReader& store);

}  // namespace ds
