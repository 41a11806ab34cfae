// `downscale train --timeline FILE`: a Chrome-trace JSON (chrome://tracing, ui.perfetto.dev)
// of what every rank did in every step: data, forward, backward, allreduce (the wait for the
// gradients after backward), optimizer; the validation and checkpoint of each epoch; and, on a
// second track, each gradient bucket's allreduce from its start to its completion, which shows
// how much of it overlapped backward. One process per rank.
//
// Each rank keeps its events in memory (about 40 bytes each) and rank 0 writes the file at the
// end. Times count from a barrier that all ranks leave together (the start of training), so the
// ranks' tracks line up to within the barrier's latency.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "train/distributed.h"

namespace ds {

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;
  enum Track { kStep = 0, kCommunication = 1 };

  Timeline() = default;  // disabled: add() does nothing
  explicit Timeline(std::string path) : path_(std::move(path)) {}
  bool enabled() const { return !path_.empty(); }
  void set_origin(Clock::time_point t) { origin_ = t; }
  // name must be a string literal or outlive the timeline.
  void add(const char* name, Track track, Clock::time_point start, Clock::time_point end, int64_t step, int epoch) {
    if (enabled()) events_.push_back({name, track, start, end, step, epoch});
  }
  // Gathers every rank's events on rank 0, which writes the file (atomically). Collective.
  void write(Communicator& comm) const;

 private:
  struct Event {
    const char* name;
    Track track;
    Clock::time_point start, end;
    int64_t step;
    int epoch;
  };
  std::string rank_events(int rank) const;  // this rank's events as JSON objects, comma-led

  std::string path_;
  Clock::time_point origin_ = Clock::now();
  std::vector<Event> events_;
};

}  // namespace ds
