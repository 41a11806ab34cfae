// The ERA-Interim-like predictors: z, hus, ta, ua, va on four pressure levels, each the sum of a
// climatology (latitude, level, season) and a fixed mix of the travelling waves (modes.h).
// Geopotential, temperature and moisture use their own mixes of the same waves, so they are
// correlated as in the atmosphere (warm air is moist, ridges are warm); the winds are the
// geostrophic winds of the geopotential anomaly, so low geopotential has cyclonic flow around it.
#pragma once
#include <array>

#include "io/calendar.h"
#include "synth/modes.h"

namespace ds::synth {

enum class Var { z, hus, ta, ua, va };
constexpr int kVars = 5;
constexpr std::array<Var, kVars> kAllVars{Var::z, Var::hus, Var::ta, Var::ua, Var::va};
// hPa, from the surface up: the order of the plev coordinate in the file.
constexpr int kLevels = 4;
constexpr std::array<int, kLevels> kLevelsHpa{1000, 850, 700, 500};
int level_index(int hpa);  // -1 if not one of kLevelsHpa

struct VarInfo {
  const char* name;
  const char* standard_name;
  const char* long_name;
  const char* units;
};
const VarInfo& var_info(Var v);

// The seasonal cycle in [-1, 1]: +1 in late July, -1 in late January (northern summer peak).
double seasonal_cycle(const Date& d);

// Bounded standardized anomaly: ~x for |x| < 1, never beyond +-2.5, so every value stays inside
// its variable's physical range however extreme the Gaussian amplitudes get.
double soft_clip(double x);

// The large-scale state of one day, evaluable at any point.
class LargeScaleDay {
 public:
  LargeScaleDay(const PairArray& amplitudes, const Date& date);
  // Standardized anomaly (about unit variance, soft-clipped) of a variable at a level index.
  double anomaly(Var v, int level, const PointBasis& b) const;
  // The value in the file's units (climatology + scaled anomaly).
  double value(Var v, int level, const PointBasis& b) const;
  double season() const { return season_; }

 private:
  std::array<std::array<DayField, kLevels>, kVars> fields_;
  double season_;
};

}  // namespace ds::synth
