#include "train/distributed.h"

#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "io/error.h"

namespace ds {

namespace {

class SingleProcess final : public Communicator {
 public:
  std::string name() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  void allreduce_sum(float*, size_t) override {}
  void allreduce_sum(double*, size_t) override {}
  void broadcast(float*, size_t, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(const std::string& message, int code) override {
    std::cerr << "rank 0 failed: " << message << std::endl;
    std::exit(code);
  }
};

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string(what) + ": " + std::string(msg, len));
  }
}

// The launcher's view of this process (environment variable), if it set one.
void check_env(const char* var, int mpi_value, const char* what) {
  const char* v = std::getenv(var);
  if (!v || !*v) return;
  char* end = nullptr;
  const long value = std::strtol(v, &end, 10);
  if (*end != '\0' || value != mpi_value)
    throw UsageError(std::string("MPI reports ") + what + " " + std::to_string(mpi_value) + " but " + var + "=" + v +
                     ": the launcher and MPI disagree (was the program started by mpirun/srun with an MPI it was "
                     "not built against, or each copy alone?)");
}

// MPI counts are int: large buffers go in pieces.
constexpr size_t kMaxCount = size_t(1) << 30;

class Mpi final : public Communicator {
 public:
  Mpi() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
      owns_ = true;
    }
    // Errors come back as codes (thrown as exceptions, then abort() tears the job down).
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local),
          "MPI_Comm_split_type");
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
    check_env("OMPI_COMM_WORLD_RANK", rank_, "rank");
    check_env("OMPI_COMM_WORLD_SIZE", size_, "size");
    check_env("OMPI_COMM_WORLD_LOCAL_RANK", local_rank_, "local rank");
    check_env("SLURM_PROCID", rank_, "rank");
    check_env("SLURM_NTASKS", size_, "size");
    check_env("SLURM_LOCALID", local_rank_, "local rank");
  }
  ~Mpi() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_ && !finalized) MPI_Finalize();
  }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  void allreduce_sum(float* data, size_t n) override {
    for (size_t i = 0; i < n; i += kMaxCount)
      check(MPI_Allreduce(MPI_IN_PLACE, data + i, int(std::min(kMaxCount, n - i)), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Allreduce");
  }
  void allreduce_sum(double* data, size_t n) override {
    for (size_t i = 0; i < n; i += kMaxCount)
      check(MPI_Allreduce(MPI_IN_PLACE, data + i, int(std::min(kMaxCount, n - i)), MPI_DOUBLE, MPI_SUM,
                          MPI_COMM_WORLD),
            "MPI_Allreduce");
  }
  void broadcast(float* data, size_t n, int root) override {
    for (size_t i = 0; i < n; i += kMaxCount)
      check(MPI_Bcast(data + i, int(std::min(kMaxCount, n - i)), MPI_FLOAT, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  [[noreturn]] void abort(const std::string& message, int code) override {
    std::cerr << "rank " << rank_ << " failed: " << message << std::endl;
    if (size_ == 1) {
      if (owns_) MPI_Finalize();
      std::exit(code);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);  // not reached
  }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool owns_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_single_process_communicator() { return std::make_unique<SingleProcess>(); }
std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<Mpi>(); }

LearningRateSchedule scaled_learning_rate(LearningRateSchedule base, int size, double warmup_epochs,
                                          int64_t steps_per_epoch) {
  const double warmup_steps = std::max(0.0, warmup_epochs) * double(std::max<int64_t>(1, steps_per_epoch));
  return [base = std::move(base), size, warmup_steps](int epoch, int64_t step) {
    const double lr = base(epoch, step);
    if (size <= 1) return lr;
    const double progress = warmup_steps > 0 ? std::min(1.0, double(step) / warmup_steps) : 1.0;
    return lr * (1.0 + (size - 1) * progress);
  };
}

}  // namespace ds
