// train.device_check across the ranks of a job (train/device_check.h checks one backend).
#pragma once
#include <cstdint>

#include "io/config.h"
#include "io/training_store.h"
#include "model/backend.h"
#include "model/loss.h"
#include "model/net.h"
#include "train/distributed.h"
#include "train/loss_scaler.h"

namespace ds {

// train.device_check (train/device_check.h): a step of this rank's first batch on its backend
// against the CPU's FP32 step, from the run's weights, and one of its last batch where an epoch
// ends in a smaller one (8,766 North America days in batches of 32 end in 30), and the forward of
// validation's batch sizes no step covers: convolution plans and the kernels chosen for them by
// timing are per shape, and every one of these shapes runs every epoch.
// Every rank calls this (unless the check is off) and votes, also a rank that does not check (a
// CPU rank among GPU ranks under auto), so all learn whether any failed and none waits in
// another collective for a rank that stopped; the failing rank logs its line before the vote,
// as the job's abort may not let it print its error.
void check_device_step(model::Net& net, model::Backend& be, const Config& cfg, const StoreReader& store,
                       const model::Tensor& mask, model::LossKind loss_kind, int threads, const LossScaler& scaler,
                       Communicator& comm, int64_t global_batch, bool check_here);

}  // namespace ds
