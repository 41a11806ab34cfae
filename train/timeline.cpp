#include "train/timeline.h"

#include <fmt/format.h>

#include <sstream>

#include "io/atomic_file.h"
#include "io/error.h"

namespace ds {

std::string Timeline::rank_events(int rank) const {
  std::string s;
  // Whole microseconds, each end truncated on its own and the duration taken as end minus start:
  // a slice then never overlaps the next one on its track (rounding start and duration separately
  // made 13 of 284 slices overlap, and Perfetto drops those). Perfetto treats pid 0 as special:
  // rank r is pid r + 1, named "rank r".
  auto us = [this](Clock::time_point t) {
    return int64_t(std::chrono::duration_cast<std::chrono::microseconds>(t - origin_).count());
  };
  const int pid = rank + 1;
  // Metadata: name the process and its two tracks.
  s += fmt::format(",\n{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":\"rank {}\"}}}}", pid,
                   rank);
  s += fmt::format(",\n{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":{0},\"args\":{{\"sort_index\":{0}}}}}", pid);
  s += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"step\"}}}}", pid);
  s += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":1,\"args\":{{\"name\":\"allreduce "
                   "buckets\"}}}}",
                   pid);
  for (const auto& e : events_)
    s += fmt::format(",\n{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},"
                     "\"args\":{{\"step\":{},\"epoch\":{}}}}}",
                     e.name, e.track == kStep ? "step" : "communication", pid, int(e.track), us(e.start),
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
