// What the NCCL communicator (model/cuda/nccl_communicator.cu) does with its ncclComm_t when it
// goes away, as a plain function the CPU tests run (the communicator itself needs a GPU).
//
// Why it matters: recent NCCL (2.16 on) may synchronize ncclCommAbort and ncclCommDestroy with the
// node's other ranks of the communicator (NVIDIA/nccl#863, a maintainer: "within a node, you need
// all ranks to abort"). One rank calling either alone, while its peers train on or wait in a
// collective, can then wait for good, and never reach MPI_Abort (run_or_abort_job calls it once
// the stack has unwound, this destructor included; train/distributed.h): the whole job hangs
// until Slurm's time limit. So with several ranks, a rank leaving on an error makes no NCCL call
// and leaves the communicator to process exit: MPI_Abort ends every rank's process, and the driver
// reclaims each one's GPU memory and kernels.
// What runs after this destructor, the CUDA backend's device synchronization, waits for the
// collectives this rank started. Those its peers started too complete; of ranks that failed at
// different points, the one that started the fewest has only such collectives, so it reaches
// MPI_Abort and that ends the others. Where every rank may hold collectives no peer matches (the
// host communicator finds that the ranks ran different collectives, or a peer gone), the NCCL
// communicator's wait_all ends the job at once, before any destructor runs. An agreed stop
// (Interrupted: every rank unwinds at the same step) leaves the communicator too; the process
// ends right after, through MPI_Finalize.
#pragma once

namespace ds::model {

enum class NcclTeardown {
  kDestroy,  // a normal end: synchronize the stream, ncclCommDestroy
  kAbort,    // one rank alone with collectives still open: ncclCommAbort (no peer to wait for)
  kLeave,    // several ranks, on an error: no NCCL call, no stream synchronization
};

// ranks: the communicator's size. unwinding: the communicator is destroyed by an exception
// (std::uncaught_exceptions() > 0), or a constructor failed after ncclCommInitRank. open_ops:
// collectives started and not waited for.
inline NcclTeardown nccl_teardown(int ranks, bool unwinding, bool open_ops) {
  if (ranks > 1 && (unwinding || open_ops)) return NcclTeardown::kLeave;
  return open_ops ? NcclTeardown::kAbort : NcclTeardown::kDestroy;
}

// Whether NcclCommunicator::abort (an NCCL error or a stall on this rank) calls ncclCommAbort
// before ending the job: only alone. With peers, MPI_Abort first, since ncclCommAbort may wait for
// the very peers that are stuck or gone.
inline bool nccl_abort_before_job_ends(int ranks) { return ranks == 1; }

}  // namespace ds::model
