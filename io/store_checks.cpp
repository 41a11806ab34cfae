#include "io/store_checks.h"

#include <fmt/format.h>

#include <cmath>

#include "io/calendar.h"
#include "io/error.h"

namespace ds {

namespace {
// `how`: why the value is wrong, after "is <value>"; "" for a NaN or Inf.
[[noreturn]] void insane_in_store(const StoreReader& store, const std::string& split, size_t row, const char* what,
                                     float value, size_t offset, const std::string& how) {
  const auto& m = store.meta();
  const std::vector<int64_t> days = store.read_time(split);
  const std::string date = row < days.size() ? to_string(date_from_days(days[row], parse_calendar(m.calendar, store.path())))
                                             : std::to_string(row);
  std::string point;
  if (what[0] == 'x') {
    const size_t hw = size_t(m.H()) * m.W(), c = offset / hw, p = offset % hw;
    point = "channel " + m.channels.at(c) + " at lat " + fmt::format("{:g}", m.predictor_lat[p / m.W()]) + ", lon " +
            fmt::format("{:g}", m.predictor_lon[p % m.W()]);
  } else {
    point = "lat " + fmt::format("{:g}", m.predictand_lat[offset / m.Wy()]) + ", lon " +
            fmt::format("{:g}", m.predictand_lon[offset % m.Wy()]);
  }
  throw InputError(store.path() + ": /" + split + "/" + what + " is " + fmt::format("{}", value) + how + " on " + date +
                   " (row " + std::to_string(row) + "), " + point +
                   ": the store is corrupt; rebuild it with `downscale preprocess`");
}
}  // namespace

void check_sane_rows(const StoreReader& store, const std::string& split, const std::vector<size_t>& rows,
                     const float* x) {
  const auto& m = store.meta();
  const size_t xs = size_t(m.C()) * m.H() * m.W();
  // One pass on the host: a NaN or Inf in the store (a bit flip, an edited file) would otherwise
  // train NaN weights.
  for (size_t i = 0; i < rows.size(); ++i) check_sane_x(store, split, rows[i], 1, x + i * xs);
}

void check_sane_x(const StoreReader& store, const std::string& split, size_t first, size_t n, const float* x) {
  const auto& m = store.meta();
  const size_t xs = size_t(m.C()) * m.H() * m.W();
  for (size_t k = 0; k < n * xs; ++k)
    if (!(std::fabs(x[k]) <= kImpossibleStandardized))  // also NaN
      insane_in_store(store, split, first + k / xs, "x", x[k], k % xs,
                      std::isfinite(x[k]) ? fmt::format(", more than {:g} training standard deviations from the "
                                                        "training mean (no weather is)",
                                                        kImpossibleStandardized)
                                          : "");
}

void check_recorded_range(const StoreReader& store, const std::string& split, const char* field, size_t first, size_t n,
                          const float* values) {
  const auto& m = store.meta();
  const bool y = field[0] == 'y';
  const float lo = y ? m.y_min : m.obs_min, hi = y ? m.y_max : m.obs_max;
  const bool recorded = !std::isnan(lo);
  const size_t ys = size_t(m.Hy()) * m.Wy();
  for (size_t k = 0; k < n * ys; ++k) {
    const float v = values[k];
    if (std::isnan(v) || (recorded ? v >= lo && v <= hi : !std::isinf(v))) continue;
    insane_in_store(store, split, first + k / ys, field, v, k % ys,
                    recorded && std::isfinite(v)
                        ? fmt::format(", outside [{:g}, {:g}], the range preprocess wrote ({}_range)", lo, hi, field)
                        : "");
  }
}

}  // namespace ds
