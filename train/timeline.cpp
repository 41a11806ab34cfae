#include "train/timeline.h"

#include <fmt/format.h>

#include <sstream>

#include "io/atomic_file.h"
#include "io/error.h"

namespace ds {

std::string Timeline::rank_events(int rank) const {
  std::string s;
  auto us = [this](Clock::time_point t) { return std::chrono::duration<double, std::micro>(t - origin_).count(); };
  // Metadata: name the process and its two tracks.
  s += fmt::format(",\n{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{0},\"args\":{{\"name\":\"rank {0}\"}}}}", rank);
  s += fmt::format(",\n{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{0},\"args\":{{\"sort_index\":{0}}}}}", rank);
  s += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"step\"}}}}", rank);
  s += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":1,\"args\":{{\"name\":\"allreduce "
                   "buckets\"}}}}",
                   rank);
  for (const auto& e : events_)
    s += fmt::format(",\n{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.1f},\"dur\":{:.1f},"
                     "\"args\":{{\"step\":{},\"epoch\":{}}}}}",
                     e.name, e.track == kStep ? "step" : "communication", rank, int(e.track), us(e.start),
                     us(e.end) - us(e.start), e.step, e.epoch);
  return s;
}

void Timeline::write(Communicator& comm) const {
  const auto all = comm.gather(rank_events(comm.rank()), 0);
  if (!comm.is_root()) return;
  std::ostringstream out;
  {
    out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"downscale train\",\"ranks\":" << comm.size()
        << "},\n\"traceEvents\":[";
    // Every rank's events start with ",\n": the very first one must not.
    bool first = true;
    for (const auto& events : all) {
      out << (first ? events.substr(1) : events);
      first = false;
    }
    out << "\n]}\n";
  }
  write_file_atomically(path_, out.str());
}

}  // namespace ds
