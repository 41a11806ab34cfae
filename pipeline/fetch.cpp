// Driver of `downscale fetch`: plan the chunks (one field x one season-year) from the sources'
// metadata, fetch the ones not already complete in parallel worker processes with retries,
// joining each field's chunks into the one file `preprocess` reads as they complete, and write
// the manifest last.
//
// fetch/
//   chunks/<field>/<year>.nc   complete, checked chunks (kept: a rerun reuses them); the
//                              predictand's in chunks/predictand/<var>/<year>.nc
//   chunks/ledger.json         request, size and CRC-32 of each chunk
//   predictors/<var@level>.nc  joined fields
//   predictand/<var>.nc
//   manifest.json              written only when everything above is complete
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <map>
#include <optional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "io/atomic_file.h"
#include "io/calendar.h"
#include "io/cf_axes.h"
#include "io/dataset_definition.h"
#include "io/command_line.h"
#include "io/error.h"
#include "fetch/chunk.h"
#include "fetch/dataset.h"
#include "fetch/ledger.h"
#include "io/fetch_manifest.h"
#include "fetch/plausible_ranges.h"
#include "fetch/plan.h"
#include "fetch/progress.h"
#include "fetch/request_watch.h"
#include "fetch/sources.h"
#include "fetch/workers.h"
#include "io/log.h"
#include "io/run_lock.h"
#include "io/stop_signal.h"
#include "pipeline/stages.h"

namespace ds {

namespace {

void print_dry_run(const FetchPlan& plan, const std::vector<bool>& have) {
  size_t todo_bytes = 0, todo = 0;
  std::printf("%-12s %6s %-23s %5s %9s %10s  %s\n", "field", "year", "days", "n", "grid", "size", "status");
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ChunkPlan& c = plan.chunks[i];
    const FieldPlan& f = plan.fields[c.field];
    const std::string span = f.date(c.days.front()) + ".." + f.date(c.days.back());
    const std::string grid = std::to_string(f.lat.size()) + "x" + std::to_string(f.lon.size());
    std::printf("%-12s %6d %-23s %5zu %9s %10s  %s\n", f.name.c_str(), c.year, span.c_str(), c.days.size(), grid.c_str(),
                TransferProgress::human(static_cast<double>(c.bytes(f))).c_str(), have[i] ? "complete" : "to fetch");
    if (!have[i]) todo_bytes += c.bytes(f), ++todo;
  }
  std::printf("%zu chunks, %zu to fetch, about %s to download\n", plan.chunks.size(), todo,
              TransferProgress::human(static_cast<double>(todo_bytes)).c_str());
  for (const auto& f : plan.fields)
    std::printf("  %s: %s%s variable '%s'%s, %s -> %s, %s calendar\n", f.name.c_str(), f.redacted().c_str(),
                f.urls.size() > 1 ? (" and " + std::to_string(f.urls.size() - 1) + " more yearly files").c_str() : "",
                f.native.c_str(), f.lon_runs.size() > 1
                    ? (" (read in " + std::to_string(f.lon_runs.size()) + " pieces across the source's seam)").c_str()
                    : "",
                f.source_units.c_str(), f.out_units().c_str(), cf_name(f.calendar).c_str());
}

// A season out of calendar order is read as crossing the new year (fetch/plan.h): meant for
// [12, 1, 2], but [3, 1, 2], whose months lie within one year, then takes March from the year
// before, which is hardly what was meant: said (a season of fewer than 12 months whose sorted
// months are consecutive).
void warn_season_order(const Config& cfg) {
  const std::vector<int>& s = cfg.fetch.season;
  bool wraps = false;
  for (size_t i = 1; i < s.size(); ++i) wraps = wraps || s[i] < s[i - 1];
  if (!wraps || s.size() == 12) return;  // a whole year from another month (a hydrological year): as meant
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  if (*hi - *lo + 1 != int(s.size())) return;  // [12, 1, 2] and the like: a winter, as meant
  std::vector<int> sorted(s);
  std::sort(sorted.begin(), sorted.end());
  spdlog::warn("fetch.season [{}] (from {}) is not in calendar order, so it is read as crossing the new year: the "
               "months before the wrap come from the year before each season-year; for months {}..{} of one year "
               "write [{}]",
               fmt::join(s, ", "), cfg.origin("fetch.season"), *lo, *hi, fmt::join(sorted, ", "));
}

// Files an earlier fetch into the folder wrote for fields the config no longer lists (fewer
// fields, another predictand): kept, since they are the user's to delete, but said at every
// fetch, with the space they hold; preprocess reads the manifest's files only.
void note_left_over(const std::string& dir, const FetchManifest& now) {
  std::set<std::string> current;
  for (const auto& f : now.predictors) current.insert(f.file);
  if (now.has_predictand()) current.insert(now.predictand.file);
  std::vector<std::string> left;
  uintmax_t bytes = 0;
  for (const char* sub : {"predictors", "predictand"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/" + sub, ec)) {
      const std::string file = std::string(sub) + "/" + e.path().filename().string();
      if (e.path().extension() != ".nc" || current.count(file) || !e.is_regular_file(ec)) continue;
      left.push_back(file);
      bytes += e.file_size(ec);
    }
  }
  if (left.empty()) return;
  std::sort(left.begin(), left.end());
  std::string names;
  for (size_t i = 0; i < left.size() && i < 4; ++i) names += (i ? ", " : "") + left[i];
  if (left.size() > 4) names += fmt::format(" and {} more", left.size() - 4);
  const bool one = left.size() == 1;
  spdlog::info("{} in {}: from an earlier fetch, of {} the config no longer asks for ({}, and {} chunks in "
               "chunks/); kept, and not read by preprocess: delete {} to free the space",
               names, dir, one ? "a field" : "fields", TransferProgress::human(static_cast<double>(bytes)),
               one ? "its" : "their", one ? "it" : "them");
}

}  // namespace

int run_fetch(const Config& cfg, bool dry_run) {
  const auto& f = cfg.fetch;
  if (f.predictors.empty()) throw UsageError(cfg.origin("fetch.predictors.fields") + ": key 'fetch.predictors.fields' lists no predictor");
  if (f.years.empty()) throw UsageError(cfg.origin("fetch.years") + ": key 'fetch.years' is required");
  if (!f.has_box)
    throw UsageError(cfg.origin("fetch.lon") + ": keys 'fetch.lon' and 'fetch.lat' are required (the box cut from the "
                     "sources, e.g. lon: [-165, -60], lat: [12, 70])");
  warn_season_order(cfg);

  SourceRequest pred{dataset_of(cfg, f.predictors_dataset, f.predictors_source, "predictors"), "", {}};
  pred.url = pred.dataset.url;
  for (const auto& p : f.predictors) pred.fields.push_back({p.name(), p.var, p.level, "fetch.predictors.fields"});
  if (cfg.preprocess.has_predictor_grid) pred.regridded_onto = &cfg.preprocess.predictor_grid;
  // No predictand: the predictors alone (a GCM run to predict from), an empty predictand in the manifest.
  const bool with_predictand = f.has_predictand();
  SourceRequest obs;
  if (with_predictand) {
    obs.dataset = dataset_of(cfg, f.predictand_dataset, f.predictand_source, "predictand");
    obs.url = obs.dataset.url;
    obs.fields.push_back(FieldWanted::predictand(f.predictand_variable));
    // Without a predictand_grid the observation grid is used as fetched: its box is its extent.
    if (cfg.preprocess.has_predictand_grid) obs.regridded_onto = &cfg.preprocess.predictand_grid;
    obs.chunk_folder = "chunks/predictand";
  }

  const std::string dir = RunPaths::of(cfg).fetch_dir();
  // One fetch per run folder at a time: two would race on the same chunks. A dry run writes
  // nothing (a read-only run folder, or one a fetch is filling, can be looked at).
  std::optional<RunLock> lock;
  if (!dry_run) lock.emplace(dir, "fetch");

  FetchPlan plan;
  {
    std::map<std::string, NcFile> opened;  // closed before the workers start
    plan_with_retries(pred, f, dry_run, opened, plan);
    if (with_predictand) plan_with_retries(obs, f, dry_run, opened, plan);
  }
  const size_t n_predictor_fields = plan.fields.size() - (with_predictand ? 1 : 0);

  // Cuts wider than the box (for the regridding grids' edge cells): one line per extent.
  {
    std::map<std::string, std::string> fields_wide;  // extent -> "z@500, ta@850"
    for (size_t k = 0; k < plan.fields.size(); ++k) {
      const auto& fp = plan.fields[k];
      const std::string name = fp.name + (k < n_predictor_fields ? "" : " (predictand)");
      if (!fp.widened.empty()) fields_wide[fp.widened] += (fields_wide[fp.widened].empty() ? "" : ", ") + name;
    }
    for (const auto& [extent, names] : fields_wide)
      spdlog::info("{}: cut to {}: one source cell beyond the cells of the grid preprocess regrids onto, so that "
                   "its edge cells are regridded from whole source cells",
                   names, extent);
  }

  // Sources that end inside the requested box: one warning per shortfall, naming its fields
  // (a later preprocess would otherwise first hear of it as a grid that does not cover its target).
  {
    std::map<std::string, std::string> fields_short;  // shortfall -> "z@500, ta@850"
    for (size_t k = 0; k < n_predictor_fields; ++k) {
      const auto& fp = plan.fields[k];
      if (!fp.box_shortfall.empty())
        fields_short[fp.box_shortfall] += (fields_short[fp.box_shortfall].empty() ? "" : ", ") + fp.name;
    }
    for (const auto& [sides, names] : fields_short)
      spdlog::warn("{}: the source's grid ends inside the requested box (fetch.lon [{:g}, {:g}], fetch.lat [{:g}, {:g}]) "
                   "on the {}: fetched what it has; every preprocess.predictor_grid cell must overlap it (cells it covers in "
                   "part are taken from the covered part)",
                   names, f.lon_min, f.lon_max, f.lat_min, f.lat_max, sides);
    // The observations' grid is what it is (land only, a regional product): said, not warned.
    if (with_predictand && !plan.fields.back().box_shortfall.empty())
      spdlog::info("{} (predictand): the source's grid ends inside the requested box on the {}: the observation grid is "
                   "what it has", plan.fields.back().name, plan.fields.back().box_shortfall);
  }

  // Temporary files of an earlier run that was killed (its workers' chunks, its joins).
  if (!dry_run) {
    remove_stale_temps(dir);  // manifest.json's
    for (const char* sub : {"/chunks", "/predictors", "/predictand"}) remove_stale_temps(dir + sub, true);
  }
  const std::string ledger_path = dir + "/chunks/ledger.json";
  ChunkLedger ledger = ChunkLedger::read(ledger_path);
  std::vector<bool> have(plan.chunks.size());
  std::vector<size_t> todo;
  uint64_t todo_bytes = 0;
  // A chunk whose source file changed since it was fetched (a corrected dataset downloaded again
  // under its name) is fetched again, and fetch says so; one a version before this check
  // recorded takes the source's version as it is now.
  std::map<std::string, size_t> changed;  // field -> chunks fetched again for a changed source
  std::map<size_t, std::string> crc_before;  // chunk -> its CRC-32 from the changed source's older version
  bool adopted = false;
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    const ChunkPlan& c = plan.chunks[i];
    const FieldPlan& fp = plan.fields[c.field];
    have[i] = ledger.intact(dir, c.file, c.request(fp));
    if (have[i]) {
      LedgerEntry& e = ledger.chunks.at(c.file);
      const std::string version = c.source_version(fp);
      if (source_version_adopts(e.source_version, version)) e.source_version = version, adopted = true;
      else if (e.source_version != version) have[i] = false, ++changed[fp.name], crc_before[i] = e.crc32;
    }
    if (!have[i]) todo.push_back(i), todo_bytes += c.bytes(fp);
  }
  for (const auto& [field, n] : changed)
    spdlog::warn("{}: {} chunk{} fetched again: the source changed since {} fetched (another size or modification "
                 "time of a local file, another version of a server's)",
                 field, n, n == 1 ? " is" : "s are", n == 1 ? "it was" : "they were");
  if (dry_run) {
    print_dry_run(plan, have);
    return 0;
  }

  if (adopted) ledger.write(ledger_path);
  // The manifest says "this folder holds what the config asks for": not true until the end.
  std::remove((dir + "/manifest.json").c_str());
  spdlog::info("{} chunks ({} complete from an earlier run), {} to fetch: about {}, {} at a time", plan.chunks.size(),
               plan.chunks.size() - todo.size(), todo.size(), TransferProgress::human(static_cast<double>(todo_bytes)),
               f.parallel);

  const size_t piece = static_cast<size_t>(f.piece_mb * 1024 * 1024);
  TransferProgress progress(todo_bytes, todo.size());
  WorkerHooks hooks;
  // Each worker opens a source at its first chunk from it and keeps it open for the rest (the
  // map is empty in the parent; every worker fills its own copy). A failed chunk ends its
  // worker, so a retry always opens the source afresh.
  std::map<std::string, NcFile> sources;
  const SourceOpener open = [&](const std::string& url) -> const NcFile& {
    auto src = sources.find(url);
    if (src == sources.end()) src = sources.emplace(url, open_source(url)).first;
    return src->second;
  };
  hooks.work = [&](size_t i, const std::function<void(uint64_t)>& report) {
    const ChunkPlan& c = plan.chunks[i];
    const FieldPlan& fp = plan.fields[c.field];
    const ChunkResult r = fetch_chunk(fp, c, open, dir + "/" + c.file, piece, report);
    return nlohmann::json{{"bytes", r.bytes}, {"crc32", r.crc32}, {"ntime", r.ntime}, {"missing_share", r.missing_share}}
        .dump();
  };
  // Each field's chunks are joined, in year order, into the file preprocess reads as soon as a
  // chunk and all before it are complete: the parent does it while later chunks download, so
  // the join costs no time of its own unless it is slower than the network.
  const size_t nfields = plan.fields.size();
  std::vector<std::vector<size_t>> field_chunks(nfields);
  for (size_t i = 0; i < plan.chunks.size(); ++i) field_chunks[plan.chunks[i].field].push_back(i);
  std::vector<size_t> joined(nfields, 0);  // chunks appended, per field
  std::vector<std::unique_ptr<FieldJoiner>> joiners(nfields);
  std::vector<bool> complete = have;
  auto out_file = [&](size_t fi) {
    return (fi < n_predictor_fields ? "predictors/" : "predictand/") + plan.fields[fi].name + ".nc";
  };
  auto joiner = [&](size_t fi) -> FieldJoiner& {
    if (!joiners[fi]) {
      size_t ntime = 0;
      for (size_t i : field_chunks[fi]) ntime += plan.chunks[i].days.size();
      joiners[fi] = std::make_unique<FieldJoiner>(plan.fields[fi], ntime, dir + "/" + out_file(fi),
                                                  utc_now() + ": " + command_line() + " (field " +
                                                      plan.fields[fi].name + ")",
                                                  piece);
    }
    return *joiners[fi];
  };
  auto join_ready = [&](size_t fi) {
    const auto& list = field_chunks[fi];
    for (; joined[fi] < list.size() && complete[list[joined[fi]]]; ++joined[fi]) {
      const ChunkPlan& c = plan.chunks[list[joined[fi]]];
      joiner(fi).append(dir + "/" + c.file, c.days.size());
    }
  };

  hooks.on_bytes = [&](size_t, uint64_t n) { progress.add_bytes(static_cast<int64_t>(n)); };
  hooks.on_done = [&](size_t i, const std::string& result) {
    const ChunkPlan& c = plan.chunks[i];
    const auto j = nlohmann::json::parse(result);
    ledger.chunks[c.file] = LedgerEntry{c.request(plan.fields[c.field]), j.at("bytes"), j.at("crc32"), j.at("ntime"),
                                        j.at("missing_share"), c.source_version(plan.fields[c.field])};
    ledger.write(ledger_path);
    progress.chunk_done();
    complete[i] = true;
    join_ready(c.field);
  };
  hooks.on_retry = [&](size_t i, int attempt, const std::string& error, uint64_t bytes, double delay) {
    progress.add_bytes(-static_cast<int64_t>(bytes));
    progress.clear_line();
    spdlog::warn("chunk {}: {}; attempt {} of {} failed, retrying in {:.1f} s", plan.chunks[i].label(plan.fields[plan.chunks[i].field]),
                 error, attempt, f.attempts, delay);
  };
  hooks.on_abandon = [&](size_t i, pid_t pid) {
    std::remove((dir + "/" + plan.chunks[i].file + ".tmp-" + std::to_string(pid)).c_str());
  };
  // What a chunk waits for, in messages: its source files (one, or two for a season across
  // the new year in yearly files), without credentials.
  hooks.describe = [&](size_t i) {
    const ChunkPlan& c = plan.chunks[i];
    const FieldPlan& fp = plan.fields[c.field];
    std::string urls;
    std::vector<size_t> seen;
    for (const auto& tr : c.time_runs) {
      if (std::find(seen.begin(), seen.end(), tr.source) != seen.end()) continue;
      seen.push_back(tr.source);
      urls += (urls.empty() ? "" : " and ") + redact_credentials(fp.urls[tr.source]);
    }
    return (urls.empty() ? fp.redacted() : urls) + " (chunk " + c.label(fp) + ")";
  };
  // A chunk given up after its last time-out: whether its (first) server still takes connections.
  hooks.timeout_hint = [&](size_t i) {
    const ChunkPlan& c = plan.chunks[i];
    const FieldPlan& fp = plan.fields[c.field];
    return timeout_hint(c.time_runs.empty() ? fp.url : fp.urls[c.time_runs.front().source]);
  };
  hooks.on_waiting = [&](size_t i, double seconds) {
    progress.clear_line();
    spdlog::warn("waiting for {} ({:.0f} s)", hooks.describe(i), seconds);
  };
  RetryPolicy retry{f.attempts, f.retry_delay, 300};
  retry.timeout_s = f.timeout_s;
  try {
    run_in_processes(todo, f.parallel, retry, hooks);
  } catch (...) {
    progress.clear_line();
    throw;
  }
  if (!todo.empty()) progress.finish();  // a rerun with every chunk complete has no transfer to report
  // A source whose size or modification time changed with the same values (copied without -p,
  // restored from a backup, touched) gives its chunks again byte for byte: said, so that the
  // warning above is not read as new data.
  size_t same = 0;
  std::set<std::string> new_values;  // fields with a chunk that changed
  for (const auto& [i, crc] : crc_before) {
    if (ledger.chunks.at(plan.chunks[i].file).crc32 == crc) ++same;
    else new_values.insert(plan.fields[plan.chunks[i].field].name);
  }
  if (same > 0) {
    std::string fields;
    for (const auto& f : new_values) fields += (fields.empty() ? "" : ", ") + f;
    spdlog::info("{} of the {} chunk{} fetched again for a changed source {} the same bytes as before{}", same,
                 crc_before.size(), crc_before.size() == 1 ? "" : "s", same == 1 ? "holds" : "hold",
                 new_values.empty() ? ": the sources changed (a file copied or touched, a new version said by a "
                                      "server), not their values for these days"
                                    : "; new values in " + fields);
  }

  // The joins' tails (and fields whose chunks all came from an earlier run), then the manifest.
  FetchManifest manifest;
  for (size_t fi = 0; fi < nfields; ++fi) {
    join_ready(fi);
    joiner(fi).finish();
  }
  for (size_t fi = 0; fi < nfields; ++fi) {
    const FieldPlan& fp = plan.fields[fi];
    const bool predictor = fi < n_predictor_fields;
    FetchedFile out;
    out.name = fp.name;
    out.variable = fp.var;
    out.file = out_file(fi);
    out.source = fp.redacted();
    out.units = fp.out_units();
    out.level = fp.level;
    out.native = fp.native;
    out.calendar = cf_name(fp.calendar);
    const ValueRange range = plausible_range(fp.def, fp.var, out.units);  // what preprocess checks
    out.valid_min = range.min;
    out.valid_max = range.max;
    std::vector<std::string> paths;
    size_t missing = 0;
    for (const auto& c : plan.chunks)
      if (c.field == fi) {
        paths.push_back(dir + "/" + c.file);
        const auto& e = ledger.chunks.at(c.file);
        missing += static_cast<size_t>(std::llround(e.missing_share * static_cast<double>(e.ntime * fp.plane())));
      }
    out.ntime = joiners[fi]->days();
    out.nlat = fp.lat.size();
    out.nlon = fp.lon.size();
    out.chunks = paths.size();
    out.missing_share = out.ntime ? static_cast<double>(missing) / static_cast<double>(out.ntime * fp.plane()) : 0.0;
    spdlog::info("{}: {} days ({} calendar) x {} x {} {}, {:.0f}% missing, from {} variable '{}' ({})", out.name,
                 out.ntime, out.calendar, out.nlat, out.nlon, out.units, 100 * out.missing_share, out.source, out.native,
                 fp.source_units);
    // (A dataset definition's max_missing refuses this chunk by chunk; a source read without one
    // accepts any share.)
    if (out.ntime && missing == out.ntime * fp.plane())
      spdlog::warn("{}: every value is missing in {} variable '{}' over the box and years asked for (the wrong "
                   "variable, a fill value marking every point, or data that stop before these years?): preprocess "
                   "and predict cannot use it",
                   out.name, out.source, out.native);
    if (predictor) manifest.predictors.push_back(out);
    else manifest.predictand = out;
  }
  if (!with_predictand) spdlog::info("no predictand in the config: fetched the predictors alone");
  manifest.season = f.season;
  manifest.request = FetchManifest::Request::box(f.lon_min, f.lon_max, f.lat_min, f.lat_max, f.years.first,
                                                 f.years.last)
                         .with_datasets(f.predictors_dataset, f.predictand_dataset)
                         .with_definitions(canonical_definition(pred.dataset.file),
                                           canonical_definition(with_predictand ? obs.dataset.file : ""));
  manifest.write(dir + "/manifest.json");
  spdlog::info("wrote {}", dir + "/manifest.json");
  note_left_over(dir, manifest);
  return 0;
}

}  // namespace ds
