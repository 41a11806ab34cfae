// The predictand as the Bernoulli-Gamma model sees it. Daily precipitation arrives in
// kg m-2 s-1 (a flux) and becomes mm/day; the target is the amount above the wet-day threshold
// (pr - 0.99 where pr >= 0.99, else 0), so the gamma part models wet-day amounts and the
// Bernoulli part the occurrence. Points missing on any day are ocean: the land mask is 0 there
// and they never enter the loss.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds {

constexpr double kSecondsPerDay = 86400.0;

// Converts a flux in kg m-2 s-1 to mm/day in place (1 kg m-2 of water is 1 mm). Throws InputError
// naming `where` if the units are neither a flux nor mm/day.
void to_mm_per_day(std::vector<float>& pr, const std::string& units, const std::string& where);

// 1 where every time step is finite, 0 elsewhere. fields: ntime x npoints, time-major.
std::vector<uint8_t> land_mask(const std::vector<float>& pr, size_t npoints);

// Target from mm/day: pr - threshold where pr >= threshold, else 0; 0 over the ocean (mask 0).
std::vector<float> wet_day_target(const std::vector<float>& pr, const std::vector<uint8_t>& mask, double threshold);

}  // namespace ds
