#include "train/tensorboard.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
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

void EventWriter::session_start(int64_t step) {
  tensorboard::Event e;
  e.set_wall_time(wall_time());
  e.set_step(step);
  e.mutable_session_log()->set_status(tensorboard::SessionLog::START);
  write_record(e.SerializeAsString());
}

void EventWriter::write_record(const std::string& data) {
  const std::string r = tfrecord_frame(data);
  out_.append(r);  // whole record, checked; throws naming the file and the cause
}

namespace {
// The run folder, made if missing.
std::string run_folder(const std::string& parent, const std::string& run) {
  const std::filesystem::path dir = std::filesystem::path(parent) / run;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(dir.string() + ": cannot create the TensorBoard folder: " + ec.message());
  return dir.string();
}
}  // namespace

TrainingEvents::TrainingEvents(const std::string& out_dir, int64_t first_epoch)
    : folder_(out_dir + "/tensorboard"),
      train_(run_folder(folder_, "train")),
      validation_(run_folder(folder_, "validation")) {
  for (EventWriter* w : {&train_, &validation_})
    for (int i = 0; i < 2; ++i) w->session_start(first_epoch);
}

void remove_training_events(const std::string& out_dir) {
  for (const char* run : {"train", "validation"}) {
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(run_folder(out_dir + "/tensorboard", run)))
      if (f.path().filename().string().rfind("events.out.tfevents.", 0) == 0 && !std::filesystem::remove(f.path(), ec) &&
          ec)
        throw Error(f.path().string() + ": cannot remove the earlier run's TensorBoard events: " + ec.message());
  }
}

void TrainingEvents::epoch(int epoch, double train_loss, double validation_loss, double learning_rate,
                           double seconds, double samples_per_second) {
  train_.add_scalar("loss", train_loss, epoch);
  if (!std::isnan(validation_loss)) validation_.add_scalar("loss", validation_loss, epoch);  // NaN: no split
  train_.add_scalar("learning_rate", learning_rate, epoch);  // of the epoch's last step
  train_.add_scalar("epoch_seconds", seconds, epoch);
  if (!std::isnan(samples_per_second)) train_.add_scalar("samples_per_second", samples_per_second, epoch);  // NaN: none
}

}  // namespace ds
