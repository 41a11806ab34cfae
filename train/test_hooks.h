// Test hooks of the multi-rank tests (tests/cli/train_mpi.sh, faults_validate.sh, slurm_e2e.sh),
// read from the environment at the first step; nothing happens when the variables are unset.
#pragma once
#include "train/distributed.h"

namespace ds {

// DOWNSCALE_TEST_FAIL_RANK=r makes rank r throw; then maybe_stall(comm, "").
void maybe_inject_failure(const Communicator& comm);
// DOWNSCALE_TEST_STALL_RANK=r makes rank r sleep DOWNSCALE_TEST_STALL_SECONDS where
// DOWNSCALE_TEST_STALL_WHERE (unset: "") is `where` (the others wait for it at the gradient
// allreduce: the stall warning and limit). "backward" stalls after this rank started its first
// gradient bucket's allreduce (use tiny buckets): the others must still name it.
void maybe_stall(const Communicator& comm, const char* where);

}  // namespace ds
