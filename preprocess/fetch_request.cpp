#include "preprocess/fetch_request.h"

#include <fmt/format.h>

namespace ds {

namespace {
// The manifest round-trips the config's doubles through JSON exactly, so any difference at all
// is an edit.
bool same(double a, double b) { return a == b; }

std::string describe(double lon0, double lon1, double lat0, double lat1, int y0, int y1) {
  return fmt::format("lon [{}, {}], lat [{}, {}], years [{}, {}]", lon0, lon1, lat0, lat1, y0, y1);
}
}  // namespace

std::string fetch_request_change(const FetchManifest& m, const Config::Fetch& f) {
  const auto& r = m.request;
  if (!r.present) return "";
  if (same(r.lon_min, f.lon_min) && same(r.lon_max, f.lon_max) && same(r.lat_min, f.lat_min) &&
      same(r.lat_max, f.lat_max) && r.first_year == f.years.first && r.last_year == f.years.last)
    return "";
  return m.dir + "/manifest.json was fetched for " +
         describe(r.lon_min, r.lon_max, r.lat_min, r.lat_max, r.first_year, r.last_year) + " but the config's fetch now asks for " +
         describe(f.lon_min, f.lon_max, f.lat_min, f.lat_max, f.years.first, f.years.last) +
         ": preprocessing what was fetched; run `downscale fetch` again for what the config asks";
}

}  // namespace ds
