// Whether the config's preprocess.*_years are still those the store was built with (its
// split_years attribute): train, predict and evaluate use the store's splits, and a user who
// edited the years and did not run preprocess again would otherwise train, predict or score
// other years than the ones the config says, without a word.
#pragma once
#include <string>

#include "io/config.h"
#include "io/training_store.h"

namespace ds {

// "" when the store's recorded split years are the config's, when the store records none (built
// before they were recorded) or when the config gives none (a config for the later stages
// alone); otherwise a sentence naming both and what to run again.
std::string split_years_change(const Config& cfg, const StoreReader& store);

}  // namespace ds
