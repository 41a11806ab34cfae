// A reader of TensorBoard event files for the tests, written from the format specifications
// independently of train/tensorboard.cpp and of protoc's generated code (TensorBoard itself is
// not installable from Debian 12): a TFRecord reader that checks both masked CRC-32Cs of every
// record, and a protobuf wire-format decoder of the Event/Summary fields by TensorFlow's field
// numbers. A wrong field number, wire type or CRC in the writer fails the tests that use it.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace ds::test {

// Bit-at-a-time CRC-32C straight from the definition (reflected polynomial 0x82F63B78).
inline uint32_t crc32c_bitwise(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}
inline uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

inline uint64_t le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return v;
}

// Splits a TFRecord file into its records, checking the framing and both CRCs.
inline std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    EXPECT_LE(at + 12, file.size()) << "truncated header";
    if (at + 12 > file.size()) break;
    const uint64_t n = le(file, at, 8);
    EXPECT_EQ(le(file, at + 8, 4), masked(crc32c_bitwise(file.substr(at, 8)))) << "length CRC at " << at;
    EXPECT_LE(at + 12 + n + 4, file.size()) << "truncated record";
    if (at + 12 + n + 4 > file.size()) break;
    const std::string data = file.substr(at + 12, n);
    EXPECT_EQ(le(file, at + 12 + n, 4), masked(crc32c_bitwise(data))) << "data CRC at " << at;
    records.push_back(data);
    at += 12 + n + 4;
  }
  return records;
}

// Protobuf wire format: (field number, wire type) keys, varints, 64/32-bit and length-delimited.
struct Field {
  int number, type;
  uint64_t varint = 0;  // types 0, 1 (raw bits), 5 (raw bits)
  std::string bytes{};  // type 2
};
inline std::vector<Field> decode(const std::string& m) {
  std::vector<Field> out;
  size_t i = 0;
  auto varint = [&]() {
    uint64_t v = 0;
    for (int shift = 0; i < m.size(); shift += 7) {
      const auto b = static_cast<unsigned char>(m[i++]);
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  };
  while (i < m.size()) {
    const uint64_t key = varint();
    Field f{int(key >> 3), int(key & 7)};
    if (f.type == 0) f.varint = varint();
    else if (f.type == 1) { f.varint = le(m, i, 8); i += 8; }
    else if (f.type == 5) { f.varint = le(m, i, 4); i += 4; }
    else if (f.type == 2) { const uint64_t n = varint(); f.bytes = m.substr(i, n); i += n; }
    else { ADD_FAILURE() << "unexpected wire type " << f.type; break; }
    out.push_back(f);
  }
  return out;
}

struct Scalar {
  int64_t step;
  std::string tag;
  float value;
  double wall_time;
};

// Event: wall_time = 1 (double), step = 2 (int64), file_version = 3 (string), summary = 5,
// session_log = 7. Summary: value = 1; Value: tag = 1 (string), simple_value = 2 (float).
// SessionLog: status = 1 (enum, START = 1). A START comes back as a Scalar with an empty tag.
inline std::vector<Scalar> scalars(const std::vector<std::string>& records, std::string* file_version,
                                   bool with_starts = false) {
  std::vector<Scalar> out;
  for (const auto& r : records) {
    double wall = 0;
    int64_t step = 0;
    std::vector<std::string> summaries;
    bool start = false;
    for (const Field& f : decode(r)) {
      if (f.number == 1 && f.type == 1) std::memcpy(&wall, &f.varint, 8);
      else if (f.number == 2 && f.type == 0) step = int64_t(f.varint);
      else if (f.number == 3 && f.type == 2) *file_version = f.bytes;
      else if (f.number == 5 && f.type == 2) summaries.push_back(f.bytes);
      else if (f.number == 7 && f.type == 2) {
        const std::vector<Field> log = decode(f.bytes);
        EXPECT_TRUE(log.size() == 1 && log[0].number == 1 && log[0].type == 0 && log[0].varint == 1)
            << "a SessionLog other than START";
        start = true;
      } else ADD_FAILURE() << "unexpected Event field " << f.number << " type " << f.type;
    }
    if (start && with_starts) out.push_back(Scalar{step, "", NAN, wall});
    for (const auto& s : summaries)
      for (const Field& v : decode(s)) {
        EXPECT_EQ(v.number, 1);
        Scalar sc{step, "", NAN, wall};
        for (const Field& f : decode(v.bytes)) {
          if (f.number == 1 && f.type == 2) sc.tag = f.bytes;
          else if (f.number == 2 && f.type == 5) {
            const uint32_t bits = uint32_t(f.varint);
            std::memcpy(&sc.value, &bits, 4);
          } else ADD_FAILURE() << "unexpected Summary.Value field " << f.number;
        }
        out.push_back(sc);
      }
  }
  return out;
}

// What TensorBoard's Python loader shows of a run folder (event_accumulator's purge with
// file_version 2): files read in name order; the first SessionLog START is the run's beginning,
// each later one drops every point read so far at its step or after. Each tag's (step, value)s.
inline std::vector<std::string> event_files(const std::string& dir);
inline std::map<std::string, std::vector<std::pair<int64_t, float>>> shown(const std::string& dir) {
  std::map<std::string, std::vector<std::pair<int64_t, float>>> curves;
  bool began = false;
  std::string version;
  for (const auto& f : event_files(dir))
    for (const Scalar& s : scalars(read_records(f), &version, true)) {
      if (!s.tag.empty()) {
        curves[s.tag].push_back({s.step, s.value});
        continue;
      }
      if (!began) {
        began = true;
        continue;
      }
      for (auto& [tag, points] : curves)
        points.erase(std::remove_if(points.begin(), points.end(), [&](const auto& p) { return p.first >= s.step; }),
                     points.end());
    }
  EXPECT_EQ(version, "brain.Event:2");
  return curves;
}

inline std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace ds::test
