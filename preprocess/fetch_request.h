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

}  // namespace ds
