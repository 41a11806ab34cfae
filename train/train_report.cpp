#include "train/train_report.h"

#include <cmath>

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "io/atomic_file.h"

namespace ds {

void write_report(const std::string& path, const TrainReport& r, const std::vector<double>& per_rank,
                  const std::vector<std::string>& backends, int nodes, int threads, int64_t batch, double reference) {
  nlohmann::json j;
  j["ranks"] = per_rank.size();
  j["nodes"] = nodes;
  j["device"] = backends.empty() || backends[0].rfind("cuda", 0) != 0 ? "cpu" : "cuda";
  j["backend"] = backends.empty() ? "" : backends[0];
  j["backend_per_rank"] = backends;
  j["threads_per_rank"] = threads;
  j["epochs"] = r.epochs;
  // A resumed run (a requeued job) reports its own part: the times and rates below cover epochs
  // first_epoch_of_this_run..epochs.
  j["resumed"] = r.resumed;
  j["first_epoch_of_this_run"] = r.first_epoch;
  j["batch_size_per_rank"] = batch;
  j["global_batch"] = batch * int64_t(per_rank.size());
  j["samples_per_second"] = r.total_samples_per_s;
  j["samples_per_second_whole_run"] = r.run_samples_per_s;
  j["samples_per_second_per_rank"] = per_rank;
  const bool ref = reference > 0;
  j["reference_samples_per_second"] = ref ? nlohmann::json(reference) : nlohmann::json(nullptr);
  j["speedup"] = ref ? nlohmann::json(r.total_samples_per_s / reference) : nlohmann::json(nullptr);
  j["scaling_efficiency"] =
      ref ? nlohmann::json(r.total_samples_per_s / (reference * double(per_rank.size()))) : nlohmann::json(nullptr);
  j["mean_batch_seconds"] = r.mean_batch_s;
  j["mean_epoch_seconds"] = r.mean_epoch_s;
  j["total_seconds"] = r.total_s;
  j["final_train_loss"] = r.final_train_loss;
  j["best_validation_loss"] = std::isfinite(r.best_val_loss) ? nlohmann::json(r.best_val_loss) : nlohmann::json(nullptr);
  j["best_model_by"] = r.best_model_by;
  j["skipped_steps"] = r.skipped_steps;  // loss scaling: non-finite gradients, optimizer not stepped
  j["loss_scale"] = r.loss_scale;
  j["weights_checksum"] = fmt::format("{:016x}", r.weights_checksum);
  const char* job = std::getenv("SLURM_JOB_ID");
  j["slurm_job_id"] = job && *job ? nlohmann::json(job) : nlohmann::json(nullptr);
  write_file_atomically(path, j.dump(1) + "\n");
}

}  // namespace ds
