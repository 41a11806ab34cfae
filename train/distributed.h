// Data-parallel training across ranks (Horovod's recipe): a small Communicator interface the
// trainer talks to, with a single-process implementation (tests, plain runs) and an MPI one
// (`mpirun -np N downscale train ...`, `srun --mpi=pmix ...`; alone, MPI_Init runs as a
// singleton of one rank), and an NCCL one for GPUs (in the CUDA plugin, model/cuda/
// nccl_communicator.cu: its float collectives take device memory, see device_memory()).
//
// Every collective is started without blocking and completed by wait_all(), so that gradient
// buckets can be reduced while backward goes on (train/gradient_buckets.h), and so that every
// wait is watched: a rank waiting longer than the stall warning logs which ranks have not yet
// reached the same collective (each rank announces its arrival to the others with a small
// message once it has started all of the collective's operations and waits for them), and past
// the stall limit it ends the job.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "io/error.h"
#include "io/stop_signal.h"
#include "train/lr_schedule.h"

namespace ds {

class Communicator {
 public:
  using Clock = std::chrono::steady_clock;
  // When a started operation began and when this rank saw it complete (timeline).
  struct OpSpan {
    Clock::time_point start, end;
  };

  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "single" | "mpi" | "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;  // rank among the ranks on this node
  virtual int local_size() const = 0;
  bool is_root() const { return rank() == 0; }

  // True when the float collectives (allreduce, broadcast) take device memory of the training
  // backend (NCCL: pointers from Backend::allocate / Tensor::data()); the double ones and
  // gather/local_allgather always take host memory.
  virtual bool device_memory() const { return false; }

  // Nonblocking collectives: each starts an operation in place on `data`, which must stay alive
  // and untouched until wait_all(). Every rank must start the same operations in the same order.
  virtual void start_allreduce_sum(float* data, size_t n) = 0;   // element-wise sum over ranks
  // The sum with the values carried in 16 bits between ranks (train.allreduce_dtype, Horovod's
  // --fp16-allreduce): each rank's values are rounded to bf16/fp16 (model/kernels/wire16.h), the
  // partial sums are 16-bit, the result is written back as float. kFp32: start_allreduce_sum.
  enum class WireType { kFp32, kBf16, kFp16 };
  virtual void start_compressed_allreduce_sum(float* data, size_t n, WireType wire) {
    if (wire != WireType::kFp32) throw std::invalid_argument("the " + name() + " communicator has no 16-bit allreduce");
    start_allreduce_sum(data, n);
  }
  virtual void start_allreduce_sum(double* data, size_t n) = 0;
  virtual void start_broadcast(float* data, size_t n, int root) = 0;  // root's values everywhere
  virtual void start_barrier() = 0;
  // Lets started operations advance (MPI moves nonblocking collectives only inside MPI calls):
  // called between layers of backward. Never blocks.
  virtual void progress() = 0;
  // Completes every started operation. `what` names them in stall warnings ("gradients of step
  // 12"). Returns when each began and ended, in the order they were started.
  virtual std::vector<OpSpan> wait_all(const std::string& what) = 0;

  // Blocking forms: start, then wait.
  void allreduce_sum(float* data, size_t n, const std::string& what = "allreduce");
  void allreduce_sum(double* data, size_t n, const std::string& what = "allreduce");
  void broadcast(float* data, size_t n, int root, const std::string& what = "broadcast");
  void barrier(const std::string& what = "barrier");
  // Every rank's string on root (in rank order); other ranks get an empty vector.
  virtual std::vector<std::string> gather(const std::string& mine, int root) = 0;
  // Every rank on this node gets the strings of all ranks on this node (in local rank order).
  virtual std::vector<std::string> local_allgather(const std::string& mine) = 0;

  // A wait longer than warn_seconds logs the missing ranks (again every warn_seconds); one
  // longer than abort_seconds ends the job through abort(). 0 turns either off.
  void set_stall_limits(double warn_seconds, double abort_seconds) {
    stall_warn_s_ = warn_seconds;
    stall_abort_s_ = abort_seconds;
  }

  // Ends the whole job: prints "rank N failed: <message>" on stderr and, under MPI, MPI_Abort
  // with the exit code so mpirun/srun tear every rank down. For the single-process one: exit(code).
  [[noreturn]] virtual void abort(const std::string& message, int code) = 0;

 protected:
  double stall_warn_s_ = 60, stall_abort_s_ = 0;
};

std::unique_ptr<Communicator> make_single_process_communicator();

// MPI_Init_thread (funneled) unless MPI is already initialized; MPI_Finalize on destruction.
// Rank and size from MPI_COMM_WORLD, the local rank from MPI_Comm_split_type(SHARED). Checks
// them against OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK} when mpirun set them, else against
// SLURM_{PROCID,NTASKS,LOCALID} when srun did (under mpirun inside a Slurm job every rank
// inherits the batch step's SLURM_PROCID=0): a mismatch (e.g. N copies each started as a
// singleton by an srun without --mpi=pmix) throws UsageError.
std::unique_ptr<Communicator> make_mpi_communicator();

// Runs a driver's collective work. An error on one of several ranks ends the whole job through
// comm.abort (the other ranks would otherwise wait in a collective forever) with the error's
// exit code; Interrupted (every rank agreed to stop at the same step) and a single process's
// errors pass through to main's handler.
template <typename Body>
void run_or_abort_job(Communicator& comm, Body&& body);

// This rank's part [lo, hi) of n items split evenly over the ranks in rank order: a global
// batch's rows (train), a split (the validation loss), and the batch sizes the device check runs.
std::pair<size_t, size_t> rank_slice(size_t n, const Communicator& comm);

// The signal every rank stops for after this step (0: none). A signal reaches each process on
// its own (or only some: mpirun, srun and a user's kill differ), so the ranks decide together,
// with one small allreduce per step next to the gradients' (SIGTERM before SIGINT before
// SIGUSR1: a time limit wins over a warning).
int agreed_stop_signal(Communicator& comm, const std::string& where);

// train.allreduce_dtype's value as a WireType (fp32 | bf16 | fp16; validated with the config).
Communicator::WireType parse_wire_type(const std::string& dtype);

// The threads a rank runs: `requested` (run.threads, --threads) when positive; for 0, the CPUs
// this process may run on (its affinity mask: a Slurm allocation or an mpirun binding, not the
// whole node) divided among the ranks of this node whose masks overlap it. A request above that
// share gets `oversubscribed`, naming `key`, on the node's local rank 0: the caller logs it once
// the backend is known to be the CPU's (a GPU run's threads only serve its CPU reference step).
// Collective over the node's ranks.
struct CpuThreads {
  int threads = 1;
  std::string oversubscribed;
};
CpuThreads cpu_threads(Communicator& comm, int requested, const std::string& key);

// Horovod's learning-rate rule: `base` (the per-rank rate) times the number of ranks, reached
// by a linear warmup from `base` over warmup_epochs (counted in steps: warmup_epochs *
// steps_per_epoch, on the global step so that --resume continues it). size 1: base unchanged.
LearningRateSchedule scaled_learning_rate(LearningRateSchedule base, int size, double warmup_epochs,
                                          int64_t steps_per_epoch);

template <typename Body>
void run_or_abort_job(Communicator& comm, Body&& body) {
  try {
    body();
  } catch (const Interrupted&) {
    throw;
  } catch (const Error& e) {
    if (comm.size() > 1) comm.abort(e.what(), e.code());
    throw;
  } catch (const std::exception& e) {
    if (comm.size() > 1) comm.abort(e.what(), kExitFailure);
    throw;
  }
}

}  // namespace ds
