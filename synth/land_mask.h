// The EWEMBI-like land-sea mask: EWEMBI has no values over the ocean, so neither does the
// synthetic precipitation. A fixed smooth, irregular coastline cuts ocean off the west and south
// edges of the region (a Pacific-like and a Gulf-like coast), leaving ~70% land, so masking code
// downstream is exercised the way the real data exercise it.
#pragma once
#include <cstdint>
#include <vector>

#include "io/config.h"
#include "synth/grid.h"

namespace ds::synth {

// Whether (lon, lat) is land. The coastline is placed relative to the region's box so every
// region has both coasts and the same land share.
bool is_land(double lon, double lat, const Config::Synth& region);

// 1 for land, 0 for ocean, on grid order [lat][lon].
std::vector<uint8_t> land_mask(const Grid& grid, const Config::Synth& region);

}  // namespace ds::synth
