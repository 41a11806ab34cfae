#include "train/tensorboard.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "io/error.h"
#include "train/crc32c.h"
#include "tensorboard_event.pb.h"

namespace ds {

namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == 0) return "localhost";
  return name;
}

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(char((v >> (8 * i)) & 0xFF));
}

}  // namespace

std::string tfrecord_frame(const std::string& data) {
  std::string header;
  put_le(header, data.size(), 8);
  std::string r = header;
  put_le(r, masked_crc32c(header.data(), header.size()), 4);
  r += data;
  put_le(r, masked_crc32c(data.data(), data.size()), 4);
  return r;
}

EventWriter::EventWriter(const std::string& dir) {
  const std::string base = dir + "/events.out.tfevents." +
                           std::to_string(static_cast<long long>(wall_time())) + "." + hostname();
  path_ = base;
  for (int i = 1; std::filesystem::exists(path_); ++i) path_ = base + "." + std::to_string(i);
  out_ = AppendFile(path_, true);
  tensorboard::Event e;
  e.set_wall_time(wall_time());
  e.set_file_version("brain.Event:2");
  write_record(e.SerializeAsString());
}

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(wall_time());
  e.set_step(step);
  tensorboard::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_record(e.SerializeAsString());
}

void EventWriter::write_record(const std::string& data) {
  const std::string r = tfrecord_frame(data);
  out_.append(r);  // whole record, checked; throws naming the file and the cause
}

}  // namespace ds
