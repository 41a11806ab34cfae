#include "preprocess/fetch_request.h"

#include <fmt/format.h>

#include <set>
#include <vector>

#include "io/dataset_definition.h"

namespace ds {

namespace {
std::string describe(const FetchManifest::Request& r) {
  return fmt::format("lon [{}, {}], lat [{}, {}], years [{}, {}]", r.lon_min, r.lon_max, r.lat_min, r.lat_max,
                     r.first_year, r.last_year);
}
}  // namespace

std::string fetch_request_change(const FetchManifest& m, const Config::Fetch& f) {
  const auto& r = m.request;
  if (!r.present || !f.has_box || f.years.empty()) return "";  // nothing recorded, or nothing asked to compare
  const auto asked =
      FetchManifest::Request::box(f.lon_min, f.lon_max, f.lat_min, f.lat_max, f.years.first, f.years.last);
  // The manifest round-trips the config's doubles through JSON exactly, so any difference at all
  // is an edit.
  if (r.lon_min == asked.lon_min && r.lon_max == asked.lon_max && r.lat_min == asked.lat_min &&
      r.lat_max == asked.lat_max && r.first_year == asked.first_year && r.last_year == asked.last_year)
    return "";
  return m.dir + "/manifest.json was fetched for " + describe(r) + " but the config's fetch now asks for " +
         describe(asked) + ": preprocessing what was fetched; run `downscale fetch` again for what the config asks";
}

std::string fetched_fields_change(const FetchManifest& m, const Config::Fetch& f) {
  if (f.predictors.empty()) return "";  // a config for the later stages alone lists none
  std::set<std::string> fetched, asked;
  for (const auto& p : m.predictors) fetched.insert(p.name);
  for (const auto& p : f.predictors) asked.insert(p.name());
  if (fetched == asked) return "";
  std::string extra, missing;
  for (const auto& n : fetched)
    if (!asked.count(n)) extra += (extra.empty() ? "" : ", ") + n;
  for (const auto& n : asked)
    if (!fetched.count(n)) missing += (missing.empty() ? "" : ", ") + n;
  return m.dir + "/manifest.json holds other predictors than fetch.predictors.fields lists" +
         (missing.empty() ? "" : " (not fetched: " + missing + ")") +
         (extra.empty() ? "" : " (fetched, not listed: " + extra + ")") +
         ": the store's channels would not be the config's; run `downscale fetch` again, or list what was fetched";
}

std::string fetched_datasets_change(const FetchManifest& m, const Config::Fetch& f, const std::string& config_file,
                                    std::string* key) {
  std::vector<std::string> changes;
  const auto changed = [&](const char* k, std::string what) {
    if (changes.empty() && key) *key = k;
    changes.push_back(std::move(what));
  };
  const auto& r = m.request;
  // Two spellings can read alike ("eobs" and "eobs"): the definition files say what differs.
  const auto files = [&](const std::string& fetched_definition, const std::string& asked) {
    const std::string now = resolved_definition(asked, config_file);
    if (fetched_definition.empty() && now.empty()) return std::string();
    return " (definition " + (fetched_definition.empty() ? std::string("not recorded") : fetched_definition) +
           " then, " + (now.empty() ? std::string("none found") : now) + " now)";
  };
  if (r.datasets_present && !f.predictors.empty() &&
      !same_dataset(r.predictors_dataset, r.predictors_definition, f.predictors_dataset, config_file))
    changed("fetch.predictors.dataset", "predictors from dataset '" + r.predictors_dataset + "', fetch.predictors.dataset is now '" +
                      f.predictors_dataset + "'" + files(r.predictors_definition, f.predictors_dataset));
  if (m.has_predictand() && f.has_predictand()) {
    if (r.datasets_present &&
        !same_dataset(r.predictand_dataset, r.predictand_definition, f.predictand_dataset, config_file))
      changed("fetch.predictand.dataset", "the predictand from dataset '" + r.predictand_dataset +
                        "', fetch.predictand.dataset is now '" + f.predictand_dataset + "'" +
                        files(r.predictand_definition, f.predictand_dataset));
    if (m.predictand.name != f.predictand_variable)
      changed("fetch.predictand.variable", "predictand " + m.predictand.name + ", fetch.predictand.variable is now " +
                        f.predictand_variable);
  }
  if (changes.empty()) return "";
  std::string what;
  for (const auto& c : changes) what += (what.empty() ? "" : "; ") + c;
  return m.dir + "/manifest.json was fetched with " + what +
         ": the store would hold other data than the config asks for; run `downscale fetch` again";
}

}  // namespace ds
