// Whether the fetched data is what the config now asks fetch for: a config whose fetch.lon,
// fetch.lat or fetch.years were edited after `downscale fetch` ran would otherwise be
// preprocessed from the older cut without a word.
#pragma once
#include <string>

#include "io/config.h"
#include "io/fetch_manifest.h"

namespace ds {

// "" when the manifest's request matches the config (or the manifest predates the record);
// otherwise a sentence naming what was fetched and what the config asks for.
std::string fetch_request_change(const FetchManifest& manifest, const Config::Fetch& asked);

// "" when the fetched predictors are the ones fetch.predictors.fields lists (in any order), or
// when it lists none;
// otherwise a sentence naming those fetched and not listed and those listed and not fetched.
// preprocess refuses then: a store of other channels than the config's is another model's input.
std::string fetched_fields_change(const FetchManifest& manifest, const Config::Fetch& asked);

// "" when the fetched data are of the datasets and predictand variable the config names (or the
// manifest predates the datasets' record, or the config names no predictand); otherwise a
// sentence naming what was fetched and what the config asks for. preprocess refuses then: a store
// of E-OBS tas when the config asks for EWEMBI, or of tas when it asks for tasmax, would train a
// model on data nobody asked for. Another spelling of the same dataset (a path for a name) is no
// change: both resolve to the definition file fetch recorded, the name looked up from `config_file`
// as fetch looks it up.
// `key`: the first key that differs, for the message's origin.
std::string fetched_datasets_change(const FetchManifest& manifest, const Config::Fetch& asked,
                                    const std::string& config_file, std::string* key);

}  // namespace ds
