// The split years a store was built with, recorded beside its data (attribute split_years), so
// that train, predict and evaluate can say when the config's preprocess.*_years have been edited
// since: they use the store's splits, and a user who edited the years and did not run
// preprocess again would otherwise train or score other years than the ones they read.
#pragma once
#include <string>

#include "io/config.h"
#include "io/training_store.h"

namespace ds {

// "train 1979..2002, validation none, test 2003..2008": what the store records and compares.
std::string split_years_text(const Config::Preprocess& pp);

// "" when the store's recorded split years are the config's (or the store records none: built
// before they were recorded); otherwise a sentence naming both and what to do.
std::string split_years_change(const Config& cfg, const StoreReader& store);

}  // namespace ds
