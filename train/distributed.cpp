#include "train/distributed.h"

#include <mpi.h>
#include <sched.h>
#include <unistd.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "io/error.h"
#include "io/stop_signal.h"
#include "model/kernels/wire16.h"

namespace ds {

void Communicator::allreduce_sum(float* data, size_t n, const std::string& what) {
  start_allreduce_sum(data, n);
  wait_all(what);
}
void Communicator::allreduce_sum(double* data, size_t n, const std::string& what) {
  start_allreduce_sum(data, n);
  wait_all(what);
}
void Communicator::broadcast(float* data, size_t n, int root, const std::string& what) {
  start_broadcast(data, n, root);
  wait_all(what);
}
void Communicator::barrier(const std::string& what) {
  start_barrier();
  wait_all(what);
}

namespace {

using Clock = Communicator::Clock;
double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

class SingleProcess final : public Communicator {
 public:
  std::string name() const override { return "single"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  int local_size() const override { return 1; }
  void start_allreduce_sum(float*, size_t) override { started_.push_back(Clock::now()); }
  void start_allreduce_sum(double*, size_t) override { started_.push_back(Clock::now()); }
  void start_compressed_allreduce_sum(float*, size_t, WireType) override { started_.push_back(Clock::now()); }
  void start_broadcast(float*, size_t, int) override { started_.push_back(Clock::now()); }
  void start_barrier() override { started_.push_back(Clock::now()); }
  void progress() override {}
  std::vector<OpSpan> wait_all(const std::string&) override {
    std::vector<OpSpan> spans;
    for (auto t : started_) spans.push_back({t, t});
    started_.clear();
    return spans;
  }
  std::vector<std::string> gather(const std::string& mine, int) override { return {mine}; }
  std::vector<std::string> local_allgather(const std::string& mine) override { return {mine}; }
  [[noreturn]] void abort(const std::string& message, int code) override {
    std::cerr << "rank 0 failed: " << message << std::endl;
    std::exit(code);
  }

 private:
  std::vector<Clock::time_point> started_;
};

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string(what) + ": " + std::string(msg, len));
  }
}

// The launcher's view of this process: environment variable `var` as a whole number, false when
// the launcher did not set it; `text` is its value as given (not a number: value stays LONG_MIN).
bool launcher_value(const char* var, long& value, std::string& text) {
  const char* v = std::getenv(var);
  if (!v || !*v) return false;
  text = v;
  char* end = nullptr;
  value = std::strtol(v, &end, 10);
  if (*end != '\0') value = LONG_MIN;
  return true;
}

// The launcher's view of this process (environment variable), if it set one.
void check_env(const char* var, int mpi_value, const char* what) {
  long value = 0;
  std::string text;
  if (launcher_value(var, value, text) && value != mpi_value)
    throw UsageError(std::string("MPI reports ") + what + " " + std::to_string(mpi_value) + " but " + var + "=" + text +
                     ": the launcher and MPI disagree (was the program started by mpirun/srun with an MPI it was "
                     "not built against, or each copy alone?)");
}

// The job's task count against MPI's size: as check_env, and a size of 1 in a job of several
// tasks said for what it most often is, a copy started without a launcher (sbatch -n 2 --wrap
// "downscale train ...").
void check_size_env(const char* var, int mpi_size) {
  long value = 0;
  std::string text;
  if (launcher_value(var, value, text) && mpi_size == 1 && value > 1)
    throw UsageError(std::string("MPI reports size 1 but ") + var + "=" + text + ": this copy runs alone in a job of " +
                     text + " tasks: started without a launcher (launch one copy a task with `srun --mpi=pmix "
                     "downscale train ...` or `mpirun downscale train ...`, or submit slurm/train_forhlr2.sh, which "
                     "does), or launched with an MPI other than the one it was built against");
  check_env(var, mpi_size, "size");
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// Where each rank's piece starts in a gathered buffer; returns the total. MPI displacements are
// int, so the whole must stay under 2 GiB.
size_t piece_offsets(const std::vector<int>& sizes, std::vector<int>& offsets) {
  offsets.resize(sizes.size());
  size_t total = 0;
  for (size_t r = 0; r < sizes.size(); ++r) {
    offsets[r] = int(total);
    total += size_t(sizes[r]);
    if (total > size_t(INT32_MAX)) throw Error("gather: more than 2 GiB in all");
  }
  return total;
}
std::vector<std::string> pieces(const std::vector<char>& all, const std::vector<int>& sizes,
                                const std::vector<int>& offsets) {
  std::vector<std::string> out;
  for (size_t r = 0; r < sizes.size(); ++r) out.emplace_back(all.data() + offsets[r], size_t(sizes[r]));
  return out;
}

// The MPI user reductions of compressed allreduce: each pair of 16-bit values summed in FP32 and
// rounded back to 16 bits (the same body as the GPU path's, model/kernels/wire16.h).
template <model::kernels::Wire16 W>
void sum_wire16(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int64_t i = 0; i < *len; ++i)
    model::kernels::sum_wire16_at(i, W, static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout));
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
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_),
          "MPI_Comm_split_type");
    MPI_Comm_rank(local_, &local_rank_);
    MPI_Comm_size(local_, &local_size_);
    const char* ompi = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (ompi && *ompi) {
      check_env("OMPI_COMM_WORLD_RANK", rank_, "rank");
      check_size_env("OMPI_COMM_WORLD_SIZE", size_);
      check_env("OMPI_COMM_WORLD_LOCAL_RANK", local_rank_, "local rank");
    } else {
      check_env("SLURM_PROCID", rank_, "rank");
      check_size_env("SLURM_NTASKS", size_);
      check_env("SLURM_LOCALID", local_rank_, "local rank");
    }
    // Collectives and arrival notices on separate communicators, so a notice can never match
    // a collective's own messages.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &coll_), "MPI_Comm_dup");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &arrivals_), "MPI_Comm_dup");
    peer_phase_.resize(size_);
    arrived_.resize(size_);
    check(MPI_Op_create(&sum_wire16<model::kernels::Wire16::kBf16>, 1, &sum_bf16_), "MPI_Op_create");
    check(MPI_Op_create(&sum_wire16<model::kernels::Wire16::kFp16>, 1, &sum_fp16_), "MPI_Op_create");
  }
  ~Mpi() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (sum_bf16_ != MPI_OP_NULL) MPI_Op_free(&sum_bf16_);
    if (sum_fp16_ != MPI_OP_NULL) MPI_Op_free(&sum_fp16_);
    if (coll_ != MPI_COMM_NULL) MPI_Comm_free(&coll_);
    if (local_ != MPI_COMM_NULL) MPI_Comm_free(&local_);
    if (arrivals_ != MPI_COMM_NULL) MPI_Comm_free(&arrivals_);
    if (owns_) MPI_Finalize();
  }
  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }

  void start_allreduce_sum(float* data, size_t n) override { start_sum(data, n, MPI_FLOAT); }
  void start_allreduce_sum(double* data, size_t n) override { start_sum(data, n, MPI_DOUBLE); }
  // The floats rounded into a 16-bit host copy, reduced with the user sum, and written back as
  // floats in wait_all.
  void start_compressed_allreduce_sum(float* data, size_t n, WireType wire) override {
    if (wire == WireType::kFp32) return start_allreduce_sum(data, n);
    using model::kernels::Wire16;
    const Wire16 w = wire == WireType::kBf16 ? Wire16::kBf16 : Wire16::kFp16;
    compressed_.push_back({data, w, std::vector<uint16_t>(n)});
    uint16_t* h = compressed_.back().wire.data();
    for (size_t i = 0; i < n; ++i) model::kernels::pack_wire16_at(int64_t(i), w, data, h);
    open_phase();
    for (size_t i = 0; i < n || i == 0; i += kMaxCount)
      check(MPI_Iallreduce(MPI_IN_PLACE, h + i, int(std::min(kMaxCount, n - i)), MPI_UINT16_T,
                           w == Wire16::kBf16 ? sum_bf16_ : sum_fp16_, coll_, next_request()),
            "MPI_Iallreduce");
  }
  void start_broadcast(float* data, size_t n, int root) override {
    open_phase();
    for (size_t i = 0; i < n || i == 0; i += kMaxCount)
      check(MPI_Ibcast(data + i, int(std::min(kMaxCount, n - i)), MPI_FLOAT, root, coll_, next_request()),
           "MPI_Ibcast");
  }
  void start_barrier() override {
    open_phase();
    check(MPI_Ibarrier(coll_, next_request()), "MPI_Ibarrier");
  }

  void progress() override {
    if (open_ == 0) return;
    int count = 0;
    indices_.resize(requests_.size());
    check(MPI_Testsome(int(requests_.size()), requests_.data(), &count, indices_.data(), MPI_STATUSES_IGNORE),
          "MPI_Testsome");
    if (count == MPI_UNDEFINED) return;
    const auto now = Clock::now();
    for (int k = 0; k < count; ++k) {
      spans_[size_t(indices_[size_t(k)])].end = now;
      --open_;
    }
  }

  std::vector<OpSpan> wait_all(const std::string& what) override {
    if (requests_.empty()) return {};
    const auto t0 = Clock::now();
    double next_warning = stall_warn_s_;
    // A stop (the scheduler's SIGTERM, a Ctrl-C) happens at the next safe point, which every rank
    // must reach: while a rank is missing here it cannot, and this rank waits on until that rank
    // comes, the scheduler kills the job (Slurm's KillWait after its SIGTERM) or the stall limit.
    // Said once, within the stall warning (5 s at most), so that the log says why it did not stop.
    const double stop_notice_s = stall_warn_s_ > 0 ? std::min(stall_warn_s_, 5.0) : 5.0;
    double stop_seen = -1;  // the wait's time when this rank first saw the stop request here
    bool stop_said = false;
    int polls = 0;
    announce_arrival();
    // Until this rank's operations are complete and every other rank has reached this wait (so
    // that the notices are in before the next phase posts its own).
    while (open_ > 0 || !missing_ranks().empty()) {
      progress();
      if (open_ == 0 && missing_ranks().empty()) break;
      const double waited = seconds_between(t0, Clock::now());
      if (stall_warn_s_ > 0 && waited >= next_warning) {
        spdlog::warn("waiting {:.0f} s at collective #{} ({}): ranks not there yet: {}", waited, phase_, what,
                     rank_list(missing_ranks()));
        next_warning += stall_warn_s_;
      }
      if (stop_seen < 0 && stop_requested()) stop_seen = waited;
      if (!stop_said && stop_seen >= 0 && waited - stop_seen >= stop_notice_s && !missing_ranks().empty()) {
        spdlog::warn("the stop ({}) is held up: ranks {} have not reached collective #{} ({}) in {:.0f} s, and every rank "
                     "must (if they are gone: until the scheduler kills the job, or train.stall_abort_seconds: {})",
                     signal_name(stop_signal_number()), rank_list(missing_ranks()), phase_, what, waited,
                     stall_abort_s_ > 0 ? std::to_string(int(stall_abort_s_)) + " s" : std::string("off"));
        stop_said = true;  // once per wait
      }
      if (stall_abort_s_ > 0 && waited >= stall_abort_s_)
        abort("gave up after " + std::to_string(int(waited)) + " s at collective #" + std::to_string(phase_) + " (" +
                  what + "): ranks " + rank_list(missing_ranks()) + " never arrived (train.stall_abort_seconds)",
              kExitFailure);
      // Spin for the first ~ms (a collective among ranks that are all there ends quickly),
      // then poll less often so a long wait does not take a core from the ranks still working.
      if (++polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    close_phase(what);
    for (auto& c : compressed_)
      for (size_t i = 0; i < c.wire.size(); ++i) model::kernels::unpack_wire16_at(int64_t(i), c.type, c.wire.data(), c.data);
    compressed_.clear();
    std::vector<OpSpan> spans;
    spans.swap(spans_);
    requests_.clear();
    return spans;
  }

  std::vector<std::string> gather(const std::string& mine, int root) override {
    barrier("gather");  // a watched wait first: a rank that never comes is named, not waited for silently
    int n = int(mine.size());
    std::vector<int> sizes(rank_ == root ? size_ : 0), offsets;
    check(MPI_Gather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, coll_), "MPI_Gather");
    std::vector<char> all;
    if (rank_ == root) all.resize(piece_offsets(sizes, offsets));
    check(MPI_Gatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, root, coll_),
          "MPI_Gatherv");
    return pieces(all, sizes, offsets);
  }

  std::vector<std::string> local_allgather(const std::string& mine) override {
    int n = int(mine.size());
    std::vector<int> sizes(static_cast<size_t>(local_size_)), offsets;
    check(MPI_Allgather(&n, 1, MPI_INT, sizes.data(), 1, MPI_INT, local_), "MPI_Allgather");
    std::vector<char> all(piece_offsets(sizes, offsets));
    check(MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), sizes.data(), offsets.data(), MPI_CHAR, local_),
          "MPI_Allgatherv");
    return pieces(all, sizes, offsets);
  }

  [[noreturn]] void abort(const std::string& message, int code) override {
    // One write() of the whole line: std::cerr is unbuffered, so each << was its own write, and
    // under mpirun those pieces raced MPI_Abort's banner through Open MPI's output forwarding (a
    // test once read " failed: injected failure ...", its "rank 1" lost elsewhere).
    const std::string line = "rank " + std::to_string(rank_) + " failed: " + message + "\n";
    std::cerr.flush();
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
      if (n <= 0 && errno != EINTR) break;
      if (n > 0) done += size_t(n);
    }
    if (size_ == 1) {
      if (owns_) MPI_Finalize();
      std::exit(code);
    }
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code);  // not reached
  }

 private:
  MPI_Request* next_request() {
    requests_.push_back(MPI_REQUEST_NULL);
    spans_.push_back({Clock::now(), {}});
    ++open_;
    return &requests_.back();
  }
  template <class T>
  void start_sum(T* data, size_t n, MPI_Datatype type) {
    open_phase();
    for (size_t i = 0; i < n || i == 0; i += kMaxCount)
      check(MPI_Iallreduce(MPI_IN_PLACE, data + i, int(std::min(kMaxCount, n - i)), type, MPI_SUM, coll_, next_request()),
           "MPI_Iallreduce");
  }

  // A phase is the set of operations between two wait_all()s. On reaching the phase's
  // wait_all (all of its operations started), this rank tells every other rank the phase's
  // number; the notices it has not yet received name the ranks that are missing, and a notice
  // with another number means the ranks run different collectives (a bug, reported instead of
  // a hang or a silent mismatch). The notice is sent at the wait, not at the first operation: a
  // rank that started the first gradient bucket and then stalled in backward has not posted
  // the rest, and must be named (it once looked "there", and the list of missing ranks was empty).
  void open_phase() {
    if (phase_open_) return;
    phase_open_ = true;
    ++phase_;
    notices_.clear();
    for (int r = 0; r < size_; ++r) {
      arrived_[size_t(r)] = r == rank_;
      if (r == rank_) continue;
      notices_.push_back(MPI_REQUEST_NULL);  // the send, at the wait
      notices_.push_back(MPI_REQUEST_NULL);
      check(MPI_Irecv(&peer_phase_[size_t(r)], 1, MPI_INT64_T, r, 0, arrivals_, &notices_.back()), "MPI_Irecv");
    }
  }
  void announce_arrival() {
    size_t k = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      check(MPI_Isend(&phase_, 1, MPI_INT64_T, r, 0, arrivals_, &notices_[k]), "MPI_Isend");
      k += 2;
    }
  }
  // The collectives completed, so every rank reached them: their notices are in or on the way.
  void close_phase(const std::string& what) {
    phase_open_ = false;
    check(MPI_Waitall(int(notices_.size()), notices_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && peer_phase_[size_t(r)] != phase_)
        throw Error("rank " + std::to_string(r) + " was at collective #" + std::to_string(peer_phase_[size_t(r)]) +
                    " while this rank completed #" + std::to_string(phase_) + " (" + what +
                    "): the ranks ran different collectives");
  }
  std::vector<int> missing_ranks() {
    std::vector<int> missing;
    size_t k = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request& recv = notices_[k + 1];  // (send, receive) per peer, in rank order
      k += 2;
      if (!arrived_[size_t(r)]) {
        int flag = 0;
        check(MPI_Test(&recv, &flag, MPI_STATUS_IGNORE), "MPI_Test");
        arrived_[size_t(r)] = flag != 0;
      }
      if (!arrived_[size_t(r)]) missing.push_back(r);
    }
    return missing;
  }

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool owns_ = false;
  MPI_Comm coll_ = MPI_COMM_NULL, arrivals_ = MPI_COMM_NULL, local_ = MPI_COMM_NULL;
  std::vector<MPI_Request> requests_;  // the open phase's collectives
  std::vector<OpSpan> spans_;          // one per request
  std::vector<int> indices_;
  int open_ = 0;                       // requests not yet complete
  bool phase_open_ = false;
  int64_t phase_ = 0;
  std::vector<MPI_Request> notices_;
  std::vector<int64_t> peer_phase_;
  std::vector<char> arrived_;
  MPI_Op sum_bf16_ = MPI_OP_NULL, sum_fp16_ = MPI_OP_NULL;
  struct Compressed {  // a 16-bit allreduce of the open phase
    float* data;
    model::kernels::Wire16 type;
    std::vector<uint16_t> wire;
  };
  std::vector<Compressed> compressed_;
};

}  // namespace

std::unique_ptr<Communicator> make_single_process_communicator() { return std::make_unique<SingleProcess>(); }
std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<Mpi>(); }

Communicator::WireType parse_wire_type(const std::string& dtype) {
  if (dtype == "fp32") return Communicator::WireType::kFp32;
  if (dtype == "bf16") return Communicator::WireType::kBf16;
  if (dtype == "fp16") return Communicator::WireType::kFp16;
  throw UsageError("key 'train.allreduce_dtype' is '" + dtype + "', expected fp32, bf16 or fp16");
}

namespace {

// The CPUs this process may run on and how many ranks of its node (itself included) may run on
// some of them. Collective over the node's ranks.
struct CpuShare {
  int cpus = 1;
  int sharing = 1;
};

CpuShare cpu_share(Communicator& comm) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0)
    return {std::max(1, int(std::thread::hardware_concurrency())), std::max(1, comm.local_size())};
  const auto masks = comm.local_allgather(std::string(reinterpret_cast<const char*>(&mine), sizeof(mine)));
  int sharing = 0;
  for (const auto& m : masks) {
    cpu_set_t other, both;
    std::memcpy(&other, m.data(), std::min(m.size(), sizeof(other)));
    CPU_AND(&both, &mine, &other);
    if (CPU_COUNT(&both) > 0) ++sharing;
  }
  return {std::max(1, CPU_COUNT(&mine)), std::max(1, sharing)};
}

}  // namespace

CpuThreads cpu_threads(Communicator& comm, int requested, const std::string& key) {
  const CpuShare s = cpu_share(comm);
  if (requested <= 0) return {std::max(1, s.cpus / s.sharing), ""};
  // More threads than CPUs: oneDNN's threads then wait for each other at every barrier of every
  // layer, and a step runs slower than with the cores alone (said once per node, not refused).
  if (int64_t(requested) * s.sharing <= s.cpus || comm.local_rank() != 0) return {requested, ""};
  return {requested, fmt::format("{} is {} on {} rank{} sharing the {} CPU{} this process may run on: {} threads for "
                                 "{} CPU{} contend and run slower than {} 0 (all the cores, divided among the ranks) "
                                 "would",
                                 key, requested, s.sharing, s.sharing == 1 ? "" : "s", s.cpus, s.cpus == 1 ? "" : "s",
                                 int64_t(requested) * s.sharing, s.cpus, s.cpus == 1 ? "" : "s", key)};
}

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

std::pair<size_t, size_t> rank_slice(size_t n, const Communicator& comm) {
  return {n * size_t(comm.rank()) / size_t(comm.size()), n * size_t(comm.rank() + 1) / size_t(comm.size())};
}

int agreed_stop_signal(Communicator& comm, const std::string& where) {
  test_wait_for_signal(where);
  const int mine = stop_signal_number();
  if (comm.size() == 1) return mine;
  double votes[3] = {double(mine == SIGTERM), double(mine == SIGINT), double(mine != 0 && mine != SIGTERM && mine != SIGINT)};
  comm.allreduce_sum(votes, 3, "stop request after " + where);
  if (votes[0] > 0) return SIGTERM;
  if (votes[1] > 0) return SIGINT;
  return votes[2] > 0 ? (mine ? mine : SIGUSR1) : 0;
}

}  // namespace ds
