// The NCCL communicator's choice of teardown (model/nccl_teardown.h): with peers, a rank leaving on
// an error must make no NCCL call that may wait for them, so that it reaches MPI_Abort. The
// communicator needs GPUs; its choice is this plain function, run here.
#include <gtest/gtest.h>

#include "model/nccl_teardown.h"

namespace ds::model {
namespace {

TEST(NcclTeardown, WithPeersAnErrorLeavesTheCommunicatorToTheJobsEnd) {
  for (int ranks : {2, 4, 64}) {
    // An exception unwinding, with or without collectives open, and open collectives alone.
    EXPECT_EQ(nccl_teardown(ranks, true, false), NcclTeardown::kLeave) << ranks;
    EXPECT_EQ(nccl_teardown(ranks, true, true), NcclTeardown::kLeave) << ranks;
    EXPECT_EQ(nccl_teardown(ranks, false, true), NcclTeardown::kLeave) << ranks;
    // The end of a run: every rank destroys its communicator together.
    EXPECT_EQ(nccl_teardown(ranks, false, false), NcclTeardown::kDestroy) << ranks;
    // An NCCL error or a stall: MPI_Abort first, no ncclCommAbort.
    EXPECT_FALSE(nccl_abort_before_job_ends(ranks)) << ranks;
  }
}

TEST(NcclTeardown, AloneOpenCollectivesAreAbortedAndTheRestDestroyed) {
  EXPECT_EQ(nccl_teardown(1, false, true), NcclTeardown::kAbort);
  EXPECT_EQ(nccl_teardown(1, true, true), NcclTeardown::kAbort);
  // Nothing open: the stream is synchronized and the communicator destroyed, even on an error
  // (no peer to wait for, and the next run in this process gets its GPU memory back).
  EXPECT_EQ(nccl_teardown(1, true, false), NcclTeardown::kDestroy);
  EXPECT_EQ(nccl_teardown(1, false, false), NcclTeardown::kDestroy);
  EXPECT_TRUE(nccl_abort_before_job_ends(1));
}

}  // namespace
}  // namespace ds::model
