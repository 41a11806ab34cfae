#include "io/fetch_manifest.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/atomic_file.h"
#include "io/error.h"

namespace ds {

namespace {
nlohmann::json to_json(const FetchedFile& f) {
  nlohmann::json j = {{"name", f.name}, {"variable", f.variable}, {"file", f.file}, {"source", f.source},
          {"ntime", f.ntime}, {"nlat", f.nlat}, {"nlon", f.nlon}, {"missing_share", f.missing_share},
          {"units", f.units}, {"level", f.level}, {"native", f.native}, {"chunks", f.chunks},
          {"calendar", f.calendar}};
  if (std::isfinite(f.valid_min) && std::isfinite(f.valid_max)) j["valid_range"] = {f.valid_min, f.valid_max};
  return j;
}
FetchedFile from_json(const nlohmann::json& j) {
  FetchedFile f;
  f.name = j.at("name");
  f.variable = j.at("variable");
  f.file = j.at("file");
  f.source = j.value("source", "");
  f.ntime = j.value("ntime", 0);
  f.nlat = j.value("nlat", 0);
  f.nlon = j.value("nlon", 0);
  f.missing_share = j.value("missing_share", 0.0);
  f.units = j.value("units", "");
  f.level = j.value("level", 0);
  f.native = j.value("native", "");
  f.chunks = j.value("chunks", size_t{0});
  f.calendar = j.value("calendar", std::string());
  if (j.contains("valid_range")) {
    f.valid_min = j.at("valid_range").at(0);
    f.valid_max = j.at("valid_range").at(1);
  }
  return f;
}
}  // namespace

void FetchManifest::write(const std::string& path) const {
  nlohmann::json j;
  j["format"] = "downscale-fetch-1";
  for (const auto& p : predictors) j["predictors"].push_back(to_json(p));
  // No predictand (predictors alone): null, read back as a FetchedFile without a name.
  j["predictand"] = predictand.name.empty() ? nlohmann::json(nullptr) : to_json(predictand);
  if (!season.empty()) j["season"] = season;
  if (request.present) {
    j["request"] = {{"lon", {request.lon_min, request.lon_max}}, {"lat", {request.lat_min, request.lat_max}},
                    {"years", {request.first_year, request.last_year}}};
    if (request.datasets_present)
      j["request"]["datasets"] = {{"predictors", request.predictors_dataset},
                                  {"predictand", request.predictand_dataset}};
    if (!request.predictors_definition.empty() || !request.predictand_definition.empty())
      j["request"]["definitions"] = {{"predictors", request.predictors_definition},
                                     {"predictand", request.predictand_definition}};
  }
  write_file_atomically(path, j.dump(2) + "\n");
}

FetchManifest FetchManifest::read(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(path + ": no such file (run `downscale fetch` first)");
  FetchManifest m;
  try {
    const auto j = nlohmann::json::parse(f);
    for (const auto& p : j.at("predictors")) m.predictors.push_back(from_json(p));
    if (!j.at("predictand").is_null()) m.predictand = from_json(j.at("predictand"));
    if (j.contains("season")) m.season = j.at("season").get<std::vector<int>>();
    if (j.contains("request")) {
      const auto& q = j.at("request");
      m.request.present = true;
      m.request.lon_min = q.at("lon").at(0);
      m.request.lon_max = q.at("lon").at(1);
      m.request.lat_min = q.at("lat").at(0);
      m.request.lat_max = q.at("lat").at(1);
      m.request.first_year = q.at("years").at(0);
      m.request.last_year = q.at("years").at(1);
      if (q.contains("datasets")) {
        m.request.datasets_present = true;
        m.request.predictors_dataset = q.at("datasets").at("predictors");
        m.request.predictand_dataset = q.at("datasets").at("predictand");
      }
      if (q.contains("definitions")) {
        m.request.predictors_definition = q.at("definitions").at("predictors");
        m.request.predictand_definition = q.at("definitions").at("predictand");
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not a fetch manifest: " + e.what());
  }
  // fetch writes every file inside its folder (predictors/, predictand/): one named outside it,
  // by an absolute path or through '..', is a manifest edited or corrupt, and preprocess would
  // read whatever it points at.
  auto check_inside = [&](const FetchedFile& f, const std::string& entry) {
    const std::filesystem::path file(f.file);
    bool outside = file.has_root_path();
    for (const auto& part : file) outside = outside || part == "..";
    if (outside)
      throw InputError(path + ": " + entry + " '" + f.name + "': file '" + f.file +
                       "' is outside the fetch folder; fetch writes only inside it, so the manifest was edited or "
                       "is corrupt");
  };
  for (const auto& p : m.predictors) check_inside(p, "predictor");
  if (m.has_predictand()) check_inside(m.predictand, "predictand");
  m.dir = std::filesystem::path(path).parent_path().string();
  if (m.dir.empty()) m.dir = ".";
  return m;
}

}  // namespace ds
