#include "train/test_hooks.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "io/error.h"

namespace ds {

void maybe_inject_failure(const Communicator& comm) {
  const char* v = std::getenv("DOWNSCALE_TEST_FAIL_RANK");
  if (v && *v && std::atoi(v) == comm.rank())
    throw Error("injected failure (DOWNSCALE_TEST_FAIL_RANK=" + std::string(v) + ")");
  maybe_stall(comm, "");
}
void maybe_stall(const Communicator& comm, const char* where) {
  const char* at = std::getenv("DOWNSCALE_TEST_STALL_WHERE");
  if (std::string(at ? at : "") != where) return;
  const char* stall = std::getenv("DOWNSCALE_TEST_STALL_RANK");
  const char* secs = std::getenv("DOWNSCALE_TEST_STALL_SECONDS");
  if (stall && *stall && secs && std::atoi(stall) == comm.rank()) {
    spdlog::warn("stalling {} s (DOWNSCALE_TEST_STALL_RANK)", secs);
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(secs)));
  }
}

}  // namespace ds
