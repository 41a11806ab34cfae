// Reading one chunk (one field, one season-year) from its source into a NetCDF file, checking
// it, and joining a field's chunks into the file `preprocess` reads.
//
// Output files (chunks and joined fields alike): dims (time, lat, lon); lat ascending; lon
// ascending in -180..180; time in days since 1970-01-01 00:00:00 counted in the source's calendar
// (written as its `calendar` attribute, CF name), one value per day at 12:00 of the day with
// time_bnds [00:00, next 00:00] (chunks of earlier versions, at 00:00, still validate and join);
// the variable as float in
// the units written (udunits2 conversion, then the definition's scale/offset) with
// _FillValue = 1e20f, `units`, the standard name of the quantity written (fetch/dataset.h
// standard_name_for: pr in mm/day is lwe_precipitation_rate), and `level_hPa` for a
// pressure-level field.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/error.h"
#include "fetch/plan.h"
#include "io/netcdf_file.h"

namespace ds {

constexpr float kFetchFill = 1.0e20f;

// A failure worth retrying: the connection dropped, the server answered 5xx, a time-out.
class TransientError : public Error {
 public:
  explicit TransientError(const std::string& what) : Error(what, kExitFailure) {}
};

// Throws for a failed netCDF-C call on a source: TransientError for the network's failures,
// InputError (exit 3) for permanent ones (404, 401/403, no such variable, bad constraint), with
// `where` (which must already be free of credentials) and a hint for the HTTP ones.
void source_check(int status, const std::string& where);
// Opens a source (path or URL) with failures classified as above. A URL that fails for another
// reason than 404 or 401/403 gets network_hint(url).
NcFile open_source(const std::string& url);
// " (host H unreachable? ...)": the host, that the node may have no network, where credentials go.
std::string network_hint(const std::string& url);
// After a request to `url` timed out: " (host H accepted the connection but did not answer: ...)"
// when the server still takes a connection (probed for up to 2 s), else network_hint(url).
std::string timeout_hint(const std::string& url);
// The host of a URL ("host" or "host:port"), without credentials (user:password@) or path.
std::string url_host(const std::string& url);

struct ChunkResult {
  size_t ntime = 0;
  double missing_share = 0;
  uint64_t bytes = 0;        // size of the file written
  std::string crc32;         // of the file, 8 hex digits
};

// Reads chunk `c` of field `f` from its sources (opened through `open`) in pieces of at most `piece_bytes` (so
// memory is bounded by the piece, not the chunk), writes `out_path` atomically after the checks
// of validate_chunk() passed (the values are checked as they are written, the rest on the
// written file's metadata). `on_bytes` is called with the bytes of every piece read. A worker
// keeps its sources open across the chunks it fetches: opening an OPeNDAP source costs several
// requests (DDS, DAS, coordinates).
ChunkResult fetch_chunk(const FieldPlan& f, const ChunkPlan& c, const SourceOpener& open, const std::string& out_path,
                        size_t piece_bytes, const std::function<void(uint64_t)>& on_bytes = {});
// The same from the one open source `src` (a field read from one file).
ChunkResult fetch_chunk(const FieldPlan& f, const ChunkPlan& c, const NcFile& src, const std::string& out_path,
                        size_t piece_bytes, const std::function<void(uint64_t)>& on_bytes = {});
// The same, opening the field's files for this chunk only.
ChunkResult fetch_chunk(const FieldPlan& f, const ChunkPlan& c, const std::string& out_path, size_t piece_bytes,
                        const std::function<void(uint64_t)>& on_bytes = {});

// Checks a written chunk against its plan: dimensions, coordinate values, the time axis (the
// planned days: daily, no gap), the units, and the share of missing values against the
// dataset's max_missing. Throws InputError naming the chunk and the failed check; returns the
// missing share.
double validate_chunk(const std::string& path, const FieldPlan& f, const ChunkPlan& c);
// Its two halves: the metadata checks on an open chunk file, and the missing share (`missing`
// values of the chunk equal to kFetchFill) against max_missing; `where` names the chunk.
void check_chunk_layout(const NcFile& nc, const std::string& where, const FieldPlan& f, const ChunkPlan& c);
double check_missing_share(size_t missing, const std::string& where, const FieldPlan& f, const ChunkPlan& c,
                          const std::string& first = "");
// " on 1983-12-11 at lon -4.22, lat 38.5": where a missing value sits, for check messages.
std::string missing_point(const FieldPlan& f, int64_t day, size_t row, size_t col);

// The CRC-32 (zlib) of a file's bytes as 8 hex digits, and its size; Error naming the file.
std::string file_crc32(const std::string& path, uint64_t* size = nullptr);

// Joins a field's chunk files (in the given order: ascending years) into `out_path`,
// atomically, copying `piece_bytes` at a time. Returns the number of days.
//
// FieldJoiner does the same a chunk at a time, so that the parent can append each chunk as soon
// as it and the ones before it are complete, while later chunks are still downloading; the file
// appears at `out_path` only at finish(), once all `ntime` days are in (destroyed earlier, it
// leaves nothing).
class FieldJoiner {
 public:
  FieldJoiner(const FieldPlan& f, size_t ntime, const std::string& out_path, const std::string& history,
              size_t piece_bytes);
  ~FieldJoiner();
  FieldJoiner(const FieldJoiner&) = delete;
  FieldJoiner& operator=(const FieldJoiner&) = delete;
  // Appends the next chunk; InputError if it holds other than `expected_days` days.
  void append(const std::string& chunk_path, size_t expected_days);
  size_t days() const;  // appended so far
  void finish();        // Error unless all days were appended

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

size_t join_chunks(const FieldPlan& f, const std::vector<std::string>& chunk_paths, const std::string& out_path,
                   const std::string& history, size_t piece_bytes);

}  // namespace ds
