// Data-parallel training across ranks (Horovod's recipe): a small Communicator interface the
// trainer talks to, with a single-process implementation (tests, plain runs) and an MPI one
// (`mpirun -np N downscale train ...`; alone, MPI_Init runs as a singleton of one rank). The NCCL
// implementation for GPUs goes behind the same interface.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "train/lr_schedule.h"

namespace ds {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "single" | "mpi"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the ranks on this node
  virtual int local_size() const = 0;
  // In place: every rank ends with the element-wise sum over ranks (identical on all ranks).
  virtual void allreduce_sum(float* data, size_t n) = 0;
  virtual void allreduce_sum(double* data, size_t n) = 0;
  // In place: every rank ends with root's values.
  virtual void broadcast(float* data, size_t n, int root) = 0;
  virtual void barrier() = 0;
  // Ends the whole job: prints "rank N failed: <message>" on stderr and, under MPI, MPI_Abort
  // with the exit code so mpirun tears every rank down. For the single-process one: exit(code).
  [[noreturn]] virtual void abort(const std::string& message, int code) = 0;
  bool is_root() const { return rank() == 0; }
};

std::unique_ptr<Communicator> make_single_process_communicator();

// MPI_Init_thread (funneled) unless MPI is already initialized; MPI_Finalize on destruction.
// Rank and size from MPI_COMM_WORLD, the local rank from MPI_Comm_split_type(SHARED). Checks
// them against OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK} and SLURM_{PROCID,NTASKS,LOCALID} when
// set: a mismatch (e.g. N copies each started as a singleton) throws UsageError.
std::unique_ptr<Communicator> make_mpi_communicator();

// Horovod's learning-rate rule: `base` (the per-rank rate) times the number of ranks, reached
// by a linear warmup from `base` over warmup_epochs (counted in steps: warmup_epochs *
// steps_per_epoch, on the global step so that --resume continues it). size 1: base unchanged.
LearningRateSchedule scaled_learning_rate(LearningRateSchedule base, int size, double warmup_epochs,
                                          int64_t steps_per_epoch);

}  // namespace ds
