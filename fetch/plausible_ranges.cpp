#include "fetch/plausible_ranges.h"

#include <map>

#include "io/units.h"
#include "io/error.h"

namespace ds {

ValueRange default_range(const std::string& var) {
  // In standard_units(var). Wide enough for any level, season and region of the real archives
  // (reanalyses and GCMs), narrow enough that a wrong unit or a corrupt value falls outside:
  static const std::map<std::string, ValueRange> ranges = {
      // Geopotential (m2 s-2) from below sea level at 1000 hPa (about -700 m in deep lows, -7e3)
      // to 1 hPa (about 48 km, 4.7e5); a height in m labelled m2 s-2 is still inside at upper
      // levels, but the standardization makes that field's statistics meaningless anyway.
      {"z", {-1e4, 5e5}},
      // Specific humidity (kg kg-1): at most about 0.03 in the tropics; reanalyses and GCMs hold
      // small negative values from their numerics, so slightly below 0 is accepted. In g/kg it is
      // far above 0.05.
      {"hus", {-1e-3, 0.05}},
      // Air temperature (K): the coldest (about 175 K at the tropical tropopause, 184 K at the
      // surface in Antarctica) and hottest (about 330 K at the surface) leave a margin; degC
      // labelled K (15 "K") falls below.
      {"ta", {150, 350}},
      {"tas", {150, 350}},
      {"tasmin", {150, 350}},
      {"tasmax", {150, 350}},
      // Wind components (m s-1): jet streams reach about 100 m s-1; km h-1 would exceed 150.
      {"ua", {-150, 150}},
      {"va", {-150, 150}},
      // Sea-level pressure (Pa): records are 870 hPa (typhoon Tip) and 1084 hPa (Siberia); hPa
      // labelled Pa (1013) falls far below.
      {"psl", {8e4, 1.1e5}},
      // Precipitation (mm/day): never negative; the world's largest daily total is about 1825 mm
      // (La Reunion, 1966). kg m-2 s-1 read as mm/day is inside but is converted by fetch; mm/day
      // labelled kg m-2 s-1 and converted (x 86400) is far above.
      {"pr", {0, 2000}},
  };
  const auto it = ranges.find(var);
  return it == ranges.end() ? ValueRange{} : it->second;
}

ValueRange plausible_range(const DatasetVariable& def, const std::string& var, const std::string& units) {
  if (def.range_known()) return {def.range_min, def.range_max};
  const ValueRange r = default_range(var);
  const std::string standard = standard_units(var);
  if (!r.known() || standard.empty() || units.empty()) return {};
  try {
    const UnitConversion c = unit_conversion(standard, units, "plausible range of " + var);
    double a = r.min * c.scale + c.offset, b = r.max * c.scale + c.offset;
    if (a > b) std::swap(a, b);
    return {a, b};
  } catch (const Error&) {
    return {};  // not convertible: no range rather than a false alarm
  }
}

}  // namespace ds
