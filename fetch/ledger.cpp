#include "fetch/ledger.h"

#include <fstream>
#include <regex>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "io/atomic_file.h"
#include "io/error.h"
#include "fetch/chunk.h"

namespace ds {

ChunkLedger ChunkLedger::read(const std::string& path) {
  ChunkLedger l;
  std::ifstream f(path);
  if (!f) return l;
  try {
    const auto j = nlohmann::json::parse(f);
    for (const auto& [file, e] : j.at("chunks").items())
      l.chunks[file] = LedgerEntry{e.at("request"), e.at("bytes"), e.at("crc32"), e.value("ntime", size_t{0}),
                                   e.value("missing_share", 0.0), e.value("source_version", std::string())};
  } catch (const nlohmann::json::exception& e) {
    // A damaged ledger costs a refetch of every chunk (hours over OPeNDAP): said, not done quietly.
    spdlog::warn("{}: the chunk ledger cannot be read ({}): without it no chunk on disk can be checked, so every "
                 "chunk is fetched again", path, e.what());
    return ChunkLedger{};
  }
  return l;
}

void ChunkLedger::write(const std::string& path) const {
  nlohmann::json j;
  j["format"] = "downscale-fetch-chunks-1";
  j["chunks"] = nlohmann::json::object();
  for (const auto& [file, e] : chunks)
    j["chunks"][file] = {{"request", e.request},          {"bytes", e.bytes},
                         {"crc32", e.crc32},              {"ntime", e.ntime},
                         {"missing_share", e.missing_share}, {"source_version", e.source_version}};
  write_file_atomically(path, j.dump(1) + "\n");
}

bool ChunkLedger::intact(const std::string& dir, const std::string& file, const std::string& request) const {
  const auto it = chunks.find(file);
  if (it == chunks.end() || it->second.request != request || !path_exists(dir + "/" + file)) return false;
  uint64_t size = 0;
  const std::string crc = file_crc32(dir + "/" + file, &size);
  return size == it->second.bytes && crc == it->second.crc32;
}

bool source_version_adopts(const std::string& recorded, const std::string& now) {
  if (recorded == now || now.empty()) return false;
  if (recorded.empty()) return true;
  // `recorded` as a pattern in which each attribute recorded empty ("name=" before a separator
  // or the end) may hold a value now, and the rest must be as it was.
  static const std::regex empty_value(R"(\b([a-z_]+)=(?=, |; |$))"), special(R"([.^$|()\[\]{}*+?\\])");
  const auto literal = [](const std::string& text) { return std::regex_replace(text, special, R"(\$&)"); };
  std::string pattern;
  size_t last = 0, filled = 0;
  for (auto it = std::sregex_iterator(recorded.begin(), recorded.end(), empty_value); it != std::sregex_iterator();
       ++it, ++filled) {
    pattern += literal(recorded.substr(last, it->position() - last)) + (*it)[1].str() + "=[^,;]*";
    last = it->position() + it->length();
  }
  return filled > 0 && std::regex_match(now, std::regex(pattern + literal(recorded.substr(last))));
}

}  // namespace ds
