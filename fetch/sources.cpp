#include "fetch/sources.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "fetch/chunk.h"
#include "fetch/redact.h"
#include "fetch/request_watch.h"
#include "io/atomic_file.h"
#include "io/error.h"
#include "io/stop_signal.h"

namespace ds {

namespace {

// A dataset that keeps one file per variable (CMIP, NCEP) reads them below its url: a source
// naming one of those files would be read as a folder ("Not a directory" from the C library, or
// a file name glued onto another). Said as what to set instead.
void check_source_is_a_folder(const Dataset& d, const std::string& source, const std::string& origin,
                              const std::string& section) {
  if (source.find("://") != std::string::npos || !std::filesystem::is_regular_file(source)) return;
  std::string below;
  for (const auto& [var, v] : d.variables)
    if (DatasetVariable::is_below_source(v.url))
      below += (below.empty() ? "" : ", ") + var + ": " + v.url;
  if (below.empty()) return;
  std::string folder = std::filesystem::path(source).parent_path().string();
  if (folder.empty()) folder = ".";
  throw UsageError(origin + ": " + section + ".source '" + source + "' is a file, but dataset '" + d.name + "' (" +
                   d.file + ") keeps one file per variable below its source (" + below + "): set " + section +
                   ".source to the folder that holds them (" + folder + "), or leave " + section +
                   ".dataset out to read this one file as it is (its variables under their own names, units unchecked)");
}

}  // namespace

Dataset dataset_of(const Config& cfg, const std::string& dataset, const std::string& source, const std::string& key) {
  if (dataset.empty()) {
    if (source.empty()) throw UsageError(cfg.file + ": key 'fetch." + key + ".dataset' (or '.source') is required");
    Dataset d = passthrough_dataset(source);
    d.url_origin = "fetch." + key + ".source";
    return d;
  }
  Dataset d = load_dataset(dataset, cfg.file, cfg.synth.dir, cfg.origin("fetch." + key + ".dataset"));
  if (!source.empty()) {  // the server moved, or a local copy
    d.url = source, d.synthetic = false;
    d.url_origin = "fetch." + key + ".source";  // the key alone: its value may hold credentials
    check_source_is_a_folder(d, source, cfg.origin("fetch." + key + ".source"), "fetch." + key);
  }
  if (d.url.empty()) throw UsageError(d.file + ": key 'url' is empty and 'fetch." + key + ".source' is not set");
  // Synthetic sources not written yet, by a config without a synth section: `downscale synth`
  // would refuse it (it writes what that section asks for), so "run synth first" would go round.
  if (d.synthetic && !cfg.synth.present && !path_exists(d.url))
    throw UsageError(cfg.file + ": fetch." + key + ".dataset " + dataset + " reads the synthetic sources `downscale " +
                     "synth` writes (" + d.url + ", not there), but the config has no synth section saying what to " +
                     "synthesize: add one (configs/demo.yaml has it), then run `downscale synth`");
  return d;
}

void plan_with_retries(const SourceRequest& s, const Config::Fetch& f, bool dry_run,
                       std::map<std::string, NcFile>& opened, FetchPlan& plan) {
  const int attempts = dry_run ? 1 : f.attempts;
  // The synthetic sources exist once `downscale synth` wrote them into synth.dir.
  if (s.dataset.synthetic && !path_exists(s.url))
    throw InputError(s.url + ": no such file (run `downscale synth` first: it writes the synthetic sources into synth.dir)");
  RequestWatch watch(dry_run ? dry_run_timeout(f.timeout_s) : f.timeout_s,
                     dry_run ? fmt::format("fetch.timeout_s; a dry run waits at most {:g} s", kDryRunWaitS)
                             : "fetch.timeout_s");
  for (int attempt = 1;; ++attempt) {
    try {
      const SourceOpener open = [&](const std::string& url) -> const NcFile& {
        auto it = opened.find(url);
        if (it == opened.end()) {
          watch.begin(redact_credentials(url));  // the clock restarts at each file opened
          it = opened.emplace(url, open_source(url)).first;
        }
        return it->second;
      };
      FetchPlan part;
      watch.begin(redact_credentials(s.url));
      for (const auto& w : s.fields) plan_field(open, s.url, s.dataset, w, f, part, s.regridded_onto);
      watch.end();
      const size_t base = plan.fields.size();
      for (auto& c : part.chunks) {
        c.file = chunk_file(s.chunk_folder, part.fields[c.field].name, c.year);
        c.field += base;
        plan.chunks.push_back(std::move(c));
      }
      for (auto& fp : part.fields) plan.fields.push_back(std::move(fp));
      return;
    } catch (const TransientError& e) {
      watch.end();
      opened.clear();  // a retry opens afresh
      if (attempt >= attempts)
        throw Error(std::string(e.what()) +
                    (dry_run         ? " (a dry run tries once)"
                     : attempts == 1 ? ""
                                     : " (gave up after " + std::to_string(attempt) + " attempts)"));
      const double delay = std::min(300.0, f.retry_delay * std::pow(2.0, attempt - 1));
      spdlog::warn("{}; attempt {} of {} failed, retrying in {:.1f} s", e.what(), attempt, attempts, delay);
      // In slices, so that SIGINT/SIGTERM stop the wait.
      for (const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(delay);
           std::chrono::steady_clock::now() < until;) {
        throw_if_stop_requested("waiting to retry opening the sources");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  }
}

}  // namespace ds
