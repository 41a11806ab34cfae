// Whether the config's preprocess settings are still those the store was built with. train,
// predict and evaluate use the store as it is (its splits, wet-day threshold, fields, grids,
// standardization, gap filling, regridding); a user who edited one of those in the config and did
// not run preprocess again would otherwise train, predict or score with the old setting without a
// word.
#pragma once
#include <string>
#include <vector>

#include "io/config.h"
#include "io/training_store.h"

namespace ds {

// One entry per setting the config gives that differs from the store's record of it, e.g.
// "preprocess.wet_threshold 0.99 (the config now gives 3, from --set preprocess.wet_threshold=3)".
// Settings the config does not give (a config for the later stages alone) and settings the store
// does not record (built before they were recorded) are not compared.
std::vector<std::string> store_setting_changes(const Config& cfg, const StoreReader& store);

// "" when there are no changes; otherwise one sentence naming the store, each change and what to
// run again, for the stage to warn with.
std::string store_settings_change(const Config& cfg, const StoreReader& store);

}  // namespace ds
