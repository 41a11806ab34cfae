// The NCCL communicator (run.communicator nccl, train/device_communicator.h): float collectives
// on device memory of the training backend, reduced by NCCL on a communication stream of its own,
// ordered by events against the backend's stream:
//   start: an event on the backend stream (backward has written the bucket), the comm stream
//          waits on it, ncclAllReduce/ncclBroadcast runs there, an event marks its end;
//   wait_all: the backend stream waits on the last end event (the optimizer is queued after it
//          with no host synchronisation). With a stall limit set (train.stall_*_seconds, the
//          default) the host also watches: first a barrier through the host (MPI) communicator,
//          which names ranks that never arrive, then it polls the end events and
//          ncclCommGetAsyncError; an NCCL error or a stall past the limit ends the job naming
//          this rank and the cause (MPI_Abort; ncclCommAbort first only for a single rank,
//          see model/nccl_teardown.h).
// Host-memory collectives (doubles, barrier, gather) go through the host communicator.
// libnccl.so.2 is opened with dlopen on first use: a node without NCCL keeps the GPU backend, and
// NCCL is found where the loader finds it (LD_LIBRARY_PATH: e.g. PyTorch's
// site-packages/nvidia/nccl/lib, which bin/env.sh adds).
#include <cstdlib>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "io/error.h"
#include "model/cuda/cuda_backend.h"
#include "model/cuda/cuda_check.h"
#include "model/cuda/grid_stride.h"
#include "model/kernels/wire16.h"
#include "model/nccl_teardown.h"
#include "train/distributed.h"

namespace ds::model {
namespace {

// The NCCL functions used, from libnccl.so.2.
struct NcclLib {
  std::string why_not;  // empty: loaded
  int version = 0;
  ncclResult_t (*GetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  const char* (*GetLastError)(ncclComm_t) = nullptr;  // NCCL 2.13+; may be absent
  ncclResult_t (*GetVersion)(int*) = nullptr;
};

NcclLib load_nccl() {
  NcclLib lib;
  // DOWNSCALE_NCCL_LIBRARY: another NCCL than the loader's libnccl.so.2 (a path, or a name the
  // loader finds), for a site whose module puts it elsewhere; the tests name a missing one.
  const char* env = std::getenv("DOWNSCALE_NCCL_LIBRARY");
  const std::string name = env && *env ? env : "libnccl.so.2";
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    lib.why_not = name + " does not load (" + (e ? e : "not found") +
                  "; add NCCL's lib folder to LD_LIBRARY_PATH, e.g. PyTorch's site-packages/nvidia/nccl/lib, or name "
                  "the library in DOWNSCALE_NCCL_LIBRARY)";
    return lib;
  }
  bool ok = true;
  const std::string& lib_name = name;
  auto sym = [&](auto& fn, const char* name, bool required = true) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn && required) {
      ok = false;
      lib.why_not = lib_name + " has no " + name;
    }
  };
  sym(lib.GetUniqueId, "ncclGetUniqueId");
  sym(lib.CommInitRank, "ncclCommInitRank");
  sym(lib.AllReduce, "ncclAllReduce");
  sym(lib.Broadcast, "ncclBroadcast");
  sym(lib.CommGetAsyncError, "ncclCommGetAsyncError");
  sym(lib.CommAbort, "ncclCommAbort");
  sym(lib.CommDestroy, "ncclCommDestroy");
  sym(lib.GetErrorString, "ncclGetErrorString");
  sym(lib.GetVersion, "ncclGetVersion");
  sym(lib.GetLastError, "ncclGetLastError", false);
  if (!ok) return lib;
  lib.GetVersion(&lib.version);
  // ncclBfloat16 and ncclCommAbort's semantics need 2.10 or later.
  if (lib.version < 21000) lib.why_not = name + " is NCCL " + std::to_string(lib.version) + ", older than 2.10";
  return lib;
}

const NcclLib& nccl() {
  static const NcclLib lib = load_nccl();  // thread-safe once
  return lib;
}

__global__ void pack_wire16(int64_t n, kernels::Wire16 w, const float* x, uint16_t* y) {
  DS_GRID_STRIDE(i, n) kernels::pack_wire16_at(i, w, x, y);
}
__global__ void unpack_wire16(int64_t n, kernels::Wire16 w, const uint16_t* y, float* x) {
  DS_GRID_STRIDE(i, n) kernels::unpack_wire16_at(i, w, y, x);
}

using Clock = Communicator::Clock;

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(Communicator& host, CudaBackend& be) : host_(host), be_(be) {
    const NcclLib& lib = nccl();
    const std::string at = "rank " + std::to_string(host.rank()) + " (GPU " + std::to_string(be.device()) + ")";
    DS_CUDA(cudaSetDevice(be.device()));
    // Rank 0's unique id to every rank through the host communicator: 128 bytes as 32 floats
    // (MPI moves the bits), then a flag saying whether rank 0 got one.
    constexpr size_t kIdFloats = sizeof(ncclUniqueId) / sizeof(float);
    static_assert(sizeof(ncclUniqueId) % sizeof(float) == 0, "ncclUniqueId is whole floats");
    std::vector<float> buf(kIdFloats + 1, 0.0f);
    ncclUniqueId id{};
    std::string root_error;
    if (host.rank() == 0) {
      const ncclResult_t r = lib.why_not.empty() ? lib.GetUniqueId(&id) : ncclSystemError;
      if (r == ncclSuccess) {
        std::memcpy(buf.data(), &id, sizeof(id));
        buf[kIdFloats] = 1;
      } else {
        root_error = lib.why_not.empty() ? lib.GetErrorString(r) : lib.why_not;
      }
    }
    host.start_broadcast(buf.data(), buf.size(), 0);
    host.wait_all("NCCL unique id from rank 0");
    if (buf[kIdFloats] != 1)
      throw Error("NCCL: rank 0 could not create the NCCL unique id" + (root_error.empty() ? "" : ": " + root_error));
    if (!lib.why_not.empty()) throw Error("NCCL on " + at + ": " + lib.why_not);
    std::memcpy(&id, buf.data(), sizeof(id));
    const ncclResult_t r = lib.CommInitRank(&comm_, host.size(), id, host.rank());
    if (r != ncclSuccess)
      throw Error("ncclCommInitRank failed on " + at + " of " + std::to_string(host.size()) + ": " +
                  lib.GetErrorString(r) + last_error());
    // The highest priority: a bucket's allreduce should not queue behind backward's kernels.
    // A constructor that throws runs no destructor: the communicator just made is aborted here,
    // alone; with peers it is left to the MPI_Abort the throw leads to (model/nccl_teardown.h).
    try {
      int least = 0, greatest = 0;
      DS_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      DS_CUDA(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
    } catch (...) {
      if (nccl_abort_before_job_ends(host.size())) lib.CommAbort(comm_);
      comm_ = nullptr;
      throw;
    }
  }

  ~NcclCommunicator() override {
    // No throwing: after an error the context may be gone. With peers, on an error (an exception
    // unwinding, or collectives started and not waited for): no NCCL call, no synchronization,
    // nothing freed; the job ends through MPI_Abort (model/nccl_teardown.h says why). Alone,
    // open collectives are aborted rather than synchronized. Otherwise nothing may still use the
    // buffers.
    const NcclTeardown how = nccl_teardown(size(), std::uncaught_exceptions() > 0, !ops_.empty());
    if (comm_ && how == NcclTeardown::kLeave) return;
    if (comm_ && how == NcclTeardown::kAbort) {
      nccl().CommAbort(comm_);
      comm_ = nullptr;
    }
    if (stream_) cudaStreamSynchronize(stream_);
    release_wire_buffers();
    if (comm_) nccl().CommDestroy(comm_);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  int local_rank() const override { return host_.local_rank(); }
  int local_size() const override { return host_.local_size(); }
  bool device_memory() const override { return true; }

  void start_allreduce_sum(float* data, size_t n) override {
    run("ncclAllReduce", [&] { return nccl().AllReduce(data, data, n, ncclFloat32, ncclSum, comm_, stream_); });
  }
  void start_compressed_allreduce_sum(float* data, size_t n, WireType wire) override {
    if (wire == WireType::kFp32) return start_allreduce_sum(data, n);
    const kernels::Wire16 w = wire == WireType::kBf16 ? kernels::Wire16::kBf16 : kernels::Wire16::kFp16;
    // A 16-bit copy from the backend's cache, given back once the phase is complete.
    float* block = be_.allocate(int64_t((n + 1) / 2));
    wire_buffers_.push_back(block);
    auto* h = reinterpret_cast<uint16_t*>(block);
    // The pack's launch is checked before the collective is queued; the unpack's by run(), once
    // the collective is recorded as open (an error then leaves it to the destructor).
    run(wire == WireType::kBf16 ? "ncclAllReduce (bf16)" : "ncclAllReduce (fp16)", [&] {
      pack_wire16<<<blocks_for(int64_t(n)), kThreads, 0, stream_>>>(int64_t(n), w, data, h);
      DS_CUDA(cudaGetLastError());
      const ncclResult_t r = nccl().AllReduce(h, h, n, wire == WireType::kBf16 ? ncclBfloat16 : ncclFloat16,
                                              ncclSum, comm_, stream_);
      if (r == ncclSuccess || r == ncclInProgress)
        unpack_wire16<<<blocks_for(int64_t(n)), kThreads, 0, stream_>>>(int64_t(n), w, h, data);
      return r;
    });
  }
  void start_broadcast(float* data, size_t n, int root) override {
    run("ncclBroadcast", [&] { return nccl().Broadcast(data, data, n, ncclFloat32, root, comm_, stream_); });
  }
  // Host memory: through the host communicator.
  void start_allreduce_sum(double* data, size_t n) override {
    host_.start_allreduce_sum(data, n);
    host_ops_ = true;
  }
  void start_barrier() override {
    host_.start_barrier();
    host_ops_ = true;
  }
  void progress() override {
    if (host_ops_) host_.progress();
  }

  std::vector<OpSpan> wait_all(const std::string& what) override {
    std::vector<OpSpan> spans;
    const bool watch = stall_warn_s_ > 0 || stall_abort_s_ > 0;
    // Every rank at this collective (a watched host barrier naming the missing ranks), unless
    // nobody asked for watching and there is nothing on the host side anyway.
    if (!ops_.empty() && watch && size() > 1) {
      host_.start_barrier();
      host_ops_ = true;
    }
    std::vector<OpSpan> host_spans;
    // The host communicator's errors while NCCL collectives are open (the ranks ran different
    // collectives, a peer gone): with peers, every rank may hold collectives no peer matches, so
    // each ends the job here, at once, rather than unwind into the CUDA backend's device
    // synchronization that waits on them (model/nccl_teardown.h).
    if (host_ops_ && !ops_.empty())
      run_or_abort_job(*this, [&] { host_spans = host_.wait_all(what); });
    else if (host_ops_)
      host_spans = host_.wait_all(what);
    host_ops_ = false;
    if (!ops_.empty()) {
      if (watch) watch_device_ops(what);
      else
        for (auto& op : ops_) op.span.end = Clock::now();
      // The backend's later work (the optimizer, the next forward) after the last collective.
      DS_CUDA(cudaStreamWaitEvent(be_.stream(), ops_.back().done, 0));
      for (auto& op : ops_) {
        spans.push_back(op.span);
        free_events_.push_back(op.done);
      }
      ops_.clear();
      release_wire_buffers();
    }
    spans.insert(spans.end(), host_spans.begin(), host_spans.end());
    return spans;
  }

  std::vector<std::string> gather(const std::string& mine, int root) override { return host_.gather(mine, root); }
  std::vector<std::string> local_allgather(const std::string& mine) override { return host_.local_allgather(mine); }

  [[noreturn]] void abort(const std::string& message, int code) override {
    // Alone: frees this rank's NCCL kernels before exit. With peers, MPI_Abort first: it ends
    // every process, and ncclCommAbort may wait for the very peers that are stuck or gone.
    if (comm_ && nccl_abort_before_job_ends(size())) nccl().CommAbort(comm_);
    comm_ = nullptr;
    host_.abort(message, code);
    std::abort();  // not reached (host_.abort ends the job); nvcc does not see that it never returns
  }

 private:
  struct Op {
    OpSpan span;
    cudaEvent_t done;
    const char* what;
  };

  // Queues `enqueue` (NCCL calls, kernels) on the comm stream after the backend's work so far.
  template <class F>
  void run(const char* what, F&& enqueue) {
    if (!comm_) throw Error("NCCL communicator used after it was aborted");
    cudaEvent_t ready = event(), done = event();
    DS_CUDA(cudaEventRecord(ready, be_.stream()));
    DS_CUDA(cudaStreamWaitEvent(stream_, ready, 0));
    free_events_.push_back(ready);  // reusable once recorded-on and waited-for: re-recording is ordered
    const auto t = Clock::now();
    const ncclResult_t r = enqueue();
    if (r != ncclSuccess && r != ncclInProgress)
      abort(std::string(what) + " failed on rank " + std::to_string(rank()) + " (GPU " + std::to_string(be_.device()) +
                "): " + nccl().GetErrorString(r) + last_error(),
            kExitFailure);
    const cudaError_t recorded = cudaEventRecord(done, stream_);
    ops_.push_back({{t, {}}, done, what});  // open from here: an error below leaves it to the destructor
    DS_CUDA(recorded);
    DS_CUDA(cudaGetLastError());  // a kernel `enqueue` launched after the collective (the unpack)
  }

  cudaEvent_t event() {
    if (!free_events_.empty()) {
      cudaEvent_t e = free_events_.back();
      free_events_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    DS_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    events_.push_back(e);
    return e;
  }

  // Polls each collective's end event (and NCCL's asynchronous error) under the stall limits:
  // every rank got here (the host barrier), so a wait now is NCCL or the GPU, not a missing rank.
  void watch_device_ops(const std::string& what) {
    const auto t0 = Clock::now();
    double next_warning = stall_warn_s_;
    int polls = 0;
    for (size_t k = 0; k < ops_.size();) {
      const cudaError_t e = cudaEventQuery(ops_[k].done);
      if (e == cudaSuccess) {
        ops_[k++].span.end = Clock::now();
        continue;
      }
      const std::string where = std::string(ops_[k].what) + " #" + std::to_string(k + 1) + " of " +
                                std::to_string(ops_.size()) + " (" + what + ") on rank " + std::to_string(rank()) +
                                " (GPU " + std::to_string(be_.device()) + ")";
      if (e != cudaErrorNotReady) {
        cudaGetLastError();
        abort("CUDA error at " + where + ": " + cudaGetErrorString(e), kExitFailure);
      }
      ncclResult_t async = ncclSuccess;
      nccl().CommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        abort("NCCL error at " + where + ": " + nccl().GetErrorString(async) + last_error(), kExitFailure);
      const double waited = std::chrono::duration<double>(Clock::now() - t0).count();
      if (stall_warn_s_ > 0 && waited >= next_warning) {
        std::fprintf(stderr, "[rank %d] waiting %.0f s for %s: every rank reached it, NCCL has not finished\n",
                     rank(), waited, where.c_str());
        next_warning += stall_warn_s_;
      }
      if (stall_abort_s_ > 0 && waited >= stall_abort_s_)
        abort("gave up after " + std::to_string(int(waited)) + " s at " + where +
                  ": every rank reached it but NCCL did not complete (train.stall_abort_seconds)",
              kExitFailure);
      if (++polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::string last_error() const {
    const char* m = nccl().GetLastError ? nccl().GetLastError(comm_) : nullptr;
    return m && *m ? std::string(" (") + m + ")" : "";
  }

  void release_wire_buffers() {
    for (float* p : wire_buffers_) be_.release(p);  // later use is ordered after the phase (see wait_all)
    wire_buffers_.clear();
  }

  Communicator& host_;
  CudaBackend& be_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> events_, free_events_;
  std::vector<Op> ops_;
  std::vector<float*> wire_buffers_;
  bool host_ops_ = false;
};

}  // namespace

std::string nccl_unavailable() {
  const NcclLib& lib = nccl();
  return lib.why_not;
}

std::unique_ptr<Communicator> create_nccl_communicator(Communicator& host, Backend& be) {
  auto* cuda = dynamic_cast<CudaBackend*>(&be);
  if (!cuda) throw Error("the NCCL communicator needs the CUDA backend, not " + be.name());
  return std::make_unique<NcclCommunicator>(host, *cuda);
}

}  // namespace ds::model
