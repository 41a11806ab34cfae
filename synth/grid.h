// The coordinate axes of the two synthetic files, derived from the configured region:
// ERA-Interim-like 2-degree points at even degrees, EWEMBI-like 0.5-degree cell centres at
// x.25/x.75, both with latitude descending (north to south) as the real products store it.
#pragma once
#include <vector>

#include "io/config.h"

namespace ds::synth {

struct Grid {
  std::vector<double> lat;  // descending
  std::vector<double> lon;  // ascending
  size_t size() const { return lat.size() * lon.size(); }
};

// Multiples of 2 inside the region (predictors).
Grid coarse_grid(const Config::Synth& cfg);
// Centres k*0.5 + 0.25 inside the region (precipitation).
Grid fine_grid(const Config::Synth& cfg);

// Every day of cfg.years as days since 1970-01-01 (the calendar.h count), contiguous.
std::vector<int64_t> day_axis(const Config::Synth& cfg);

// The CF time unit written to both files, and the epoch it counts from (days since 1970).
extern const char* const kTimeUnits;
int64_t time_epoch_days();

}  // namespace ds::synth
