// The chunk ledger, fetch/chunks/ledger.json: for every chunk written, its request (as
// ChunkPlan::request describes it), file size and CRC-32. A rerun reuses a chunk only when the
// ledger holds the same request and the file on disk still has that size and checksum;
// anything else (a missing, truncated, corrupted or differently requested chunk) is fetched
// again. Only the parent process writes it, atomically after each finished chunk.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace ds {

struct LedgerEntry {
  std::string request;
  uint64_t bytes = 0;
  std::string crc32;
  size_t ntime = 0;
  double missing_share = 0;
  std::string source_version;  // ChunkPlan::source_version when fetched; "" in ledgers before it
};

struct ChunkLedger {
  std::map<std::string, LedgerEntry> chunks;  // by file, relative to the fetch folder

  // An unreadable or absent ledger is an empty one (every chunk is fetched again).
  static ChunkLedger read(const std::string& path);
  void write(const std::string& path) const;  // atomically
  // True when `file` (relative to `dir`) is recorded for `request` and still intact on disk.
  bool intact(const std::string& dir, const std::string& file, const std::string& request) const;
};

// Whether `now` is what an earlier version of fetch recorded as `recorded`, only with more said:
// no version at all, or a numeric attribute (`version = 20`) that it read as empty
// ("version=", before it read numbers). Such a ledger entry takes the version as it is now,
// rather than its chunk being fetched again as from a changed source.
bool source_version_adopts(const std::string& recorded, const std::string& now);

}  // namespace ds
