// Driver of `downscale fetch`: one subset file per predictor field and one for the predictand,
// then the manifest that `preprocess` reads. Each file is written atomically, so a failed fetch
// leaves only complete files behind and no manifest.
#include <spdlog/spdlog.h>

#include "io/atomic_file.h"
#include "io/error.h"
#include "io/fetch_manifest.h"
#include "io/log.h"
#include "io/subset.h"
#include "pipeline/stages.h"

namespace ds {

namespace {

FetchedFile fetch_one(const Config& cfg, const std::string& source, const std::string& name, const std::string& variable,
                      int level, const std::string& dir, const std::string& rel) {
  const auto& f = cfg.fetch;
  SubsetRequest req;
  req.source = source;
  req.variable = variable;
  req.level = level;
  req.lon_min = f.lon_min, req.lon_max = f.lon_max, req.lat_min = f.lat_min, req.lat_max = f.lat_max;
  req.years = f.years;
  req.months = f.season;
  const auto res = fetch_subset(req, dir + "/" + rel, "downscale fetch " + name + " (config " + cfg.file + ")");
  FetchedFile out;
  out.name = name;
  out.variable = variable;
  out.file = rel;
  out.source = redact_credentials(source);
  out.ntime = res.ntime, out.nlat = res.nlat, out.nlon = res.nlon;
  out.missing_share = res.missing_share;
  return out;
}

}  // namespace

int run_fetch(const Config& cfg) {
  const auto& f = cfg.fetch;
  if (f.predictors_source.empty()) throw UsageError(cfg.file + ": key 'fetch.predictors.source' is required");
  if (f.predictand_source.empty()) throw UsageError(cfg.file + ": key 'fetch.predictand.source' is required");
  if (f.predictors.empty()) throw UsageError(cfg.file + ": key 'fetch.predictors.fields' lists no predictor");
  if (f.years.empty()) throw UsageError(cfg.file + ": key 'fetch.years' is required");
  const std::string dir = RunPaths{cfg.run.dir}.fetch_dir();
  make_dirs(dir);

  FetchManifest manifest;
  Progress progress("fetch", static_cast<int64_t>(f.predictors.size()) + 1);
  for (const auto& p : f.predictors) {
    manifest.predictors.push_back(
        fetch_one(cfg, f.predictors_source, p.name(), p.var, p.level, dir, "predictors/" + p.name() + ".nc"));
    const auto& got = manifest.predictors.back();
    spdlog::info("{}: {} days x {} x {} from {}", p.name(), got.ntime, got.nlat, got.nlon, got.source);
    progress.advance();
  }
  manifest.predictand = fetch_one(cfg, f.predictand_source, f.predictand_variable, f.predictand_variable, 0, dir,
                                  "predictand/" + f.predictand_variable + ".nc");
  spdlog::info("{}: {} days x {} x {}, {:.0f}% missing (ocean)", f.predictand_variable, manifest.predictand.ntime,
               manifest.predictand.nlat, manifest.predictand.nlon, 100 * manifest.predictand.missing_share);
  progress.advance();
  manifest.write(dir + "/manifest.json");
  progress.done();
  spdlog::info("wrote {}", dir + "/manifest.json");
  return 0;
}

}  // namespace ds
