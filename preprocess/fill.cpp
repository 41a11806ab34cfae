#include "preprocess/fill.h"

#include <cmath>
#include <map>

#include "io/calendar.h"
#include "io/error.h"

namespace ds {

FillPolicy parse_fill_policy(const std::string& name) {
  if (name == "none") return FillPolicy::none;
  if (name == "nearest_time") return FillPolicy::nearest_time;
  if (name == "climatology") return FillPolicy::climatology;
  throw UsageError("fill policy '" + name + "': expected none, nearest_time or climatology");
}

size_t fill_missing(const FetchedField& f, const std::vector<size_t>& idx, std::vector<float>& block, FillPolicy policy,
                    const std::string& key) {
  const size_t fs = f.grid().size();
  const auto& days = f.days();
  size_t missing = 0;
  std::map<size_t, std::vector<float>> neighbours;  // file index -> that day's field, read on demand
  auto day_field = [&](size_t t) -> const std::vector<float>& {
    auto it = neighbours.find(t);
    if (it == neighbours.end()) {
      std::vector<float> v(fs);
      f.read({t}, v.data());
      it = neighbours.emplace(t, std::move(v)).first;
    }
    return it->second;
  };
  for (size_t b = 0; b < idx.size(); ++b)
    for (size_t k = 0; k < fs; ++k) {
      float& v = block[b * fs + k];
      if (std::isfinite(v)) continue;
      ++missing;
      const std::string date = f.date_of(days[idx[b]]);
      const double lon = f.grid().lon[k % f.grid().lon.size()], lat = f.grid().lat[k / f.grid().lon.size()];
      if (policy == FillPolicy::none)
        throw InputError(f.where() + ": missing value on " + date + " at lon " + std::to_string(lon) + ", lat " +
                         std::to_string(lat) + " (set " + key + " to nearest_time or climatology to fill gaps)");
      if (policy == FillPolicy::climatology) continue;
      bool found = false;
      for (int d = 1; d <= kMaxFillDays && !found; ++d)
        for (int sign : {-1, 1}) {
          const long t = static_cast<long>(idx[b]) + sign * d;
          if (t < 0 || t >= static_cast<long>(days.size())) continue;
          if (std::llabs(days[t] - days[idx[b]]) > kMaxFillDays) continue;  // a gap in the record
          const float w = day_field(static_cast<size_t>(t))[k];
          if (std::isfinite(w)) { v = w, found = true; break; }
        }
      if (!found)
        throw InputError(f.where() + ": missing value on " + date + " at lon " + std::to_string(lon) + ", lat " +
                         std::to_string(lat) + " with no value within " + std::to_string(kMaxFillDays) +
                         " days to fill it from (" + key + ": nearest_time)");
    }
  return missing;
}

}  // namespace ds
