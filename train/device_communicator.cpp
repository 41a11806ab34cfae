#include "train/device_communicator.h"

#include <spdlog/spdlog.h>

#include "io/error.h"
#include "model/nccl_plugin.h"

namespace ds {

void check_communicator_choice(const std::string& choice, const model::Backend& be) {
  if (choice != "auto" && choice != "nccl" && choice != "mpi")
    throw UsageError("key 'run.communicator' is '" + choice + "', expected auto, mpi or nccl");
  if (choice != "nccl") return;
  if (be.name().rfind("cuda", 0) != 0)
    throw UsageError("key 'run.communicator' is nccl but training runs on " + be.name() + " (NCCL needs run.device cuda)");
  const std::string why_not = model::nccl_unavailable_reason();
  if (!why_not.empty()) throw UsageError("key 'run.communicator' is nccl but NCCL cannot be used: " + why_not);
}

std::unique_ptr<Communicator> make_training_communicator(const std::string& choice, Communicator& host,
                                                         model::Backend& be, bool log) {
  check_communicator_choice(choice, be);
  if (choice == "mpi") return nullptr;
  const bool on_gpu = be.name().rfind("cuda", 0) == 0;
  if (choice == "nccl") return model::make_nccl_communicator(host, be);
  if (host.size() < 2) return nullptr;
  // Every rank must choose the same (a rank on the CPU among GPU ranks included): NCCL only if it
  // can be used on all of them.
  const std::string why_not = on_gpu ? model::nccl_unavailable_reason() : "rank " + std::to_string(host.rank()) +
                                                                               " trains on " + be.name();
  double usable = why_not.empty() ? 1 : 0;
  host.allreduce_sum(&usable, 1, "run.communicator auto");
  if (usable < host.size()) {
    if (on_gpu && (log || !why_not.empty()))
      spdlog::info("run.communicator auto: gradients through MPI on the host: {}",
                   why_not.empty() ? "NCCL cannot be used on some rank" : why_not);
    return nullptr;
  }
  return model::make_nccl_communicator(host, be);
}

}  // namespace ds
