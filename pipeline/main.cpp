// `downscale`: one command, the pipeline's stages as subcommands.
//   downscale synth | fetch | preprocess | train | predict | evaluate  --config FILE [--set key=value ...]
//   downscale benchmark [--model resnet50 ...]   (no config: Horovod's synthetic benchmark)
// Exit codes: 0 success, 1 failure during the work, 2 bad usage or configuration, 3 bad input data,
// 128 + N stopped by signal N (130 SIGINT, 143 SIGTERM), 75 train stopped by SIGUSR1 (requeue me).
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "io/bundle_environment.h"
#include "io/command_line.h"
#include "io/error.h"
#include "io/launch_rank.h"
#include "io/log.h"
#include "io/stop_signal.h"
#include "io/suggest.h"
#include "io/version.h"
#include "pipeline/command_line.h"
#include "pipeline/stages.h"
#include "train/benchmark.h"

namespace {

// `extras` in the order they stand in `args` (each word taken once; any not found go last).
std::vector<std::string> in_given_order(std::vector<std::string> extras, const std::vector<std::string>& args) {
  std::vector<std::string> ordered;
  for (const std::string& a : args)
    if (const auto it = std::find(extras.begin(), extras.end(), a); it != extras.end()) {
      ordered.push_back(*it);
      extras.erase(it);
    }
  ordered.insert(ordered.end(), extras.begin(), extras.end());
  return ordered;
}

// After "unexpected arguments: ...": the stage's own option nearest a mistyped one (--resum:
// --resume), else, for a stage that reads a config, how a config key is set (--epochs 2 is
// --set train.epochs=2). benchmark takes no config: no --set there.
std::string unexpected_options_hint(const std::vector<std::string>& extras, const CLI::App* stage) {
  if (!stage) return "";
  std::vector<std::string> names;
  for (const CLI::Option* o : stage->get_options())
    for (const std::string& n : o->get_lnames()) names.push_back(n);
  bool option = false;
  for (const std::string& a : extras) {
    if (a.rfind("--", 0) != 0 || a.size() == 2) continue;
    option = true;
    const std::string near = ds::closest_name(a.substr(2, a.find('=') - 2), names);
    if (!near.empty()) return "; did you mean --" + near + "?";
  }
  if (option && stage->get_option_no_throw("--set"))
    return "; a config key is set with --set SECTION.KEY=VALUE (e.g. --set train.epochs=2)";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  ds::adopt_bundle_environment();  // a bundle run without bin/env.sh: its unit database and Open MPI
  ds::record_command_line(argc, argv);  // for the history attribute of the files we write
  CLI::App app{"downscale: from reanalysis predictors (local files or OPeNDAP) to high-resolution daily "
               "precipitation, or another observed variable such as tas.\n"
               "Stages, in order: synth (optional demo data), fetch, preprocess, train, predict, evaluate."};
  const std::string exit_codes =
      "Exit codes: 0 success, 1 failure during the work, 2 bad command line or configuration, 3 bad input "
      "data, 128 + N stopped by signal N (130 SIGINT, 143 SIGTERM, 138 SIGUSR1), 75 train stopped by SIGUSR1 "
      "(checkpoint written; rerun with --resume-auto).";
  app.footer("Each stage: downscale <stage> --config FILE [--set key=value ...] [-v | -q]; these options may also "
             "come before the stage. `downscale <stage> --help` lists a stage's own options.\n" + exit_codes);
  app.name("downscale");
  app.set_version_flag("--version", std::string("downscale ") + DOWNSCALE_VERSION);
  app.require_subcommand(1);

  std::string config_path;
  std::vector<std::string> overrides;
  ds::StageOptions options;
  std::string stage;
  bool verbose = false, quiet = false;

  auto add_stage = [&](const std::string& name, const std::string& help) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->add_option("-c,--config", config_path, "YAML configuration file (see configs/)")->required()->check(CLI::ExistingFile);
    sub->add_option("--set", overrides, "override a config key; the value is YAML, e.g. --set train.epochs=5 --set fetch.years=[2000,2001] (repeatable)");
    sub->add_flag("-v,--verbose", verbose, "debug messages too (overrides run.log_level)");
    sub->add_flag("-q,--quiet", quiet, "warnings and errors only (overrides run.log_level)");
    sub->callback([&stage, name] { stage = name; });
    return sub;
  };
  add_stage("synth", "write the synthetic ERA-Interim-like and EWEMBI-like dataset (the demo's data source)");
  CLI::App* fetch = add_stage("fetch", "cut the predictors and the predictand from their sources (paths or OPeNDAP URLs)");
  fetch->add_flag("--dry-run", options.dry_run, "list the chunks that would be fetched and their estimated size");
  add_stage("preprocess", "regrid, standardize, build the target and land mask, write the HDF5 training store");
  CLI::App* train = add_stage("train", "train the CNN (train.loss: Bernoulli-Gamma for precipitation, Gaussian or MSE); writes checkpoints");
  CLI::Option* resume_flag = train->add_flag("--resume", options.resume,
                  "continue from the run's checkpoint_last.h5 (also written when a run is interrupted)");
  train->add_flag("--resume-auto", options.resume_auto,
                  "continue from the last checkpoint when there is one, else start (a requeued Slurm job)")
      ->excludes(resume_flag);
  CLI::Option* check_flag = train->add_flag("--check", options.check,
                  "check the config, the store and the model, print a summary and exit (0 ok, 1 another train holds "
                  "the model's folder, 2 bad config, 3 bad store; a 'finished:' line when the checkpoint to "
                  "resume has nothing left to train); starts no MPI and writes nothing (slurm/train_forhlr2.sh "
                  "runs it before launching the ranks)");
  train->add_option("--ranks", options.check_ranks,
                    "--check: the rank count the job will launch; a checkpoint to resume must have been trained "
                    "with this many times train.batch_size per step (slurm/train_forhlr2.sh passes its tasks)")
      ->check(CLI::Range(1, 1000000))->needs(check_flag);
  train->add_option("--timeline", options.timeline,
                    "write a Chrome-trace JSON (chrome://tracing, ui.perfetto.dev) of every step's phases per rank")
      ->type_name("FILE");
  auto& sc = options.scaling;
  CLI::Option* scaling_flag = train->add_flag("--predict-scaling", sc.on,
                  "print the scaling model's step time, efficiency and images/s on 1-4 GPUs and 2-64 nodes "
                  "(docs/scaling.md); trains nothing, writes nothing but --out");
  scaling_flag->excludes(check_flag);  // which would be skipped without a word
  train->add_option("--profile", sc.profile,
                    "--predict-scaling: a layer profile (bench_train_step --profile-layers --out); default: "
                    "measure one on the configured device")->type_name("FILE")->check(CLI::ExistingFile);
  train->add_option("--link", sc.link, "--predict-scaling: link inside a node (nvlink4, nvlink3, pcie4, pcie5, shm-mpi)")
      ->capture_default_str();
  train->add_option("--network", sc.network, "--predict-scaling: link between nodes (ib-hdr, ib-ndr)")
      ->capture_default_str();
  train->add_option("--nic", sc.nic, "--predict-scaling: per-gpu or per-node")
      ->capture_default_str()
      ->check(CLI::IsMember({"per-gpu", "per-node"}));
  train->add_option("--allreduce-dtype", sc.allreduce_dtype, "--predict-scaling: gradient dtype on the wire "
                    "(default: train.allreduce_dtype)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  // Explicit ranges: CLI::PositiveNumber's message quotes the largest double (300 digits) as its bound.
  train->add_option("--gpus-per-node", sc.gpus_per_node, "--predict-scaling: GPUs per node in the multi-node rows")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  train->add_option("--busbw", sc.busbw_gbs, "--predict-scaling: a measured intra-node allreduce busbw in GB/s "
                    "(replaces --link)")->check(CLI::Range(0.001, 100000.0));
  train->add_option("--latency-us", sc.latency_us, "--predict-scaling: with --busbw, its allreduce latency")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000000.0));
  train->add_option("--profile-steps", sc.steps, "--predict-scaling: timed steps when measuring the profile")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  CLI::Option* busbw = nullptr;
  train->add_option("--out", sc.out, "--predict-scaling: also write the table as JSON")->type_name("FILE.json");
  // Without --predict-scaling these would be ignored while a whole training runs: an error instead.
  for (CLI::Option* o : train->get_options())
    if (o->get_description().rfind("--predict-scaling:", 0) == 0) {
      o->needs(scaling_flag);
      if (o->get_name() == "--busbw") busbw = o;
    }
  train->get_option("--latency-us")->needs(busbw);
  add_stage("predict", "write the daily predictand of the test years (or of new predictors: predict.predictors, e.g. a GCM run) as CF NetCDF; scores the test years");
  add_stage("evaluate", "VALUE indices and scores of the prediction next to baselines; JSON, CSV, PNG maps");

  // benchmark: no config file; the options of Horovod's pytorch_synthetic_benchmark.py.
  ds::BenchmarkOptions bench;
  bool no_cuda = false;
  std::vector<std::string> plot;
  CLI::App* bsub = app.add_subcommand(
      "benchmark",
      "train ResNet50, ResNet101 or InceptionV3 on random images with SGD and print img/sec per GPU (or CPU "
      "rank) as Horovod's synthetic benchmark does; under mpirun/srun every rank trains its own batch and "
      "gradients are averaged as in `downscale train`. No config file.");
  bsub->footer(exit_codes);  // not the stages' "--config FILE" line it would inherit
  bsub->add_option("--model", bench.model, "resnet50, resnet101 or inception_v3")->capture_default_str();
  bsub->add_option("--batch-size", bench.batch_size, "images per step on each rank")->capture_default_str();
  bsub->add_option("--num-warmup-batches", bench.warmup_batches, "untimed steps first")->capture_default_str();
  bsub->add_option("--num-batches-per-iter", bench.batches_per_iter, "steps per timed iteration")->capture_default_str();
  bsub->add_option("--num-iters", bench.iters, "timed iterations (mean and 1.96 x std over them)")->capture_default_str();
  bsub->add_flag("--fp16-allreduce", bench.fp16_allreduce,
                 "gradients in FP16 between ranks (train.allreduce_dtype fp16)");
  auto* no_cuda_flag = bsub->add_flag("--no-cuda", no_cuda, "train on the CPU (= --device cpu)");
  bsub->add_option("--device", bench.device, "auto (a GPU when one is visible), cpu or cuda (GPU local rank)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))->capture_default_str()->excludes(no_cuda_flag);
  bsub->add_option("--precision", bench.precision, "tf32, fp32, bf16 or fp16 (train.precision; the CPU computes in FP32)")
      ->check(CLI::IsMember({"tf32", "fp32", "bf16", "fp16"}))->capture_default_str();
  bsub->add_option("--image-size", bench.image_size, "square input side in pixels; 0: the model's (224 ResNet, 299 InceptionV3)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  bsub->add_option("--json", bench.json, "append one JSON line per run (model, batch, ranks, nodes, device, precision, "
                   "mean, ci95, total, efficiency against the file's 1-rank line)")->type_name("FILE");
  bsub->add_option("--seed", bench.seed, "weights, images and labels (each rank its own batch)")->capture_default_str();
  // The bounds of run.threads and train.allreduce_bucket_mb (io/config_validate.cpp).
  bsub->add_option("--threads", bench.threads, "CPU threads per rank; 0: this rank's share of the cores it may use")
      ->check(CLI::Range(0, 1024))->capture_default_str();
  bsub->add_option("--bucket-mb", bench.bucket_mb, "gradient allreduce bucket size in MB (train.allreduce_bucket_mb)")
      ->check(CLI::Range(0.0, 65536.0))->capture_default_str();
  bsub->add_option("--communicator", bench.communicator, "auto, mpi or nccl (run.communicator)")
      ->check(CLI::IsMember({"auto", "mpi", "nccl"}))->capture_default_str();
  bsub->add_option("--profile-layers", bench.profile_layers,
                   "instead of the timed iterations: time forward, loss, each layer's forward and backward "
                   "(synchronized per layer) and the optimizer, medians of --num-iters steps after the warmup, and "
                   "write them to FILE as JSON (bench/profile_compare.py reads two side by side); one rank")
      ->type_name("FILE");
  bsub->add_option("--plot", plot, "draw nothing else: a PNG of the total images/s (samples/s of scaling.sh's runs) "
                   "against ranks, ideal line and efficiency, from the JSON lines of earlier runs")->expected(2)->type_name("RESULTS.jsonl OUT.png");
  bsub->add_flag("-v,--verbose", verbose, "debug messages too");
  bsub->add_flag("-q,--quiet", quiet, "warnings and errors only");
  bsub->callback([&stage] { stage = "benchmark"; });

  // --config/--set/-v/-q may come before the stage; a mistyped stage gets a suggestion.
  std::vector<std::string> stages;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) stages.push_back(sub->get_name());
  const ds::StageArguments arranged = ds::arrange_stage_arguments(std::vector<std::string>(argv + 1, argv + argc), stages);
  if (!arranged.error.empty()) {
    std::cerr << "downscale: error: " << arranged.error << " (see downscale --help)" << std::endl;
    return ds::kExitUsage;
  }
  // The stage, when one was given: a parse error then points at that stage's --help, whose
  // options it is about; none given (and no --help, --version) says what a call looks like.
  const auto is_stage = [&](const std::string& a) { return std::find(stages.begin(), stages.end(), a) != stages.end(); };
  const std::string given_stage = !arranged.args.empty() && is_stage(arranged.args[0]) ? arranged.args[0] : "";
  if (given_stage.empty() && std::none_of(arranged.args.begin(), arranged.args.end(), [](const std::string& a) {
        return a == "-h" || a == "--help" || a == "--version";
      })) {
    std::string names;
    for (const auto& n : stages) names += (names.empty() ? "" : ", ") + n;
    std::cerr << "downscale: error: no stage given: downscale <stage> --config FILE, the stages are " << names
              << " (see downscale --help)" << std::endl;
    return ds::kExitUsage;
  }
  try {
    std::vector<std::string> reversed(arranged.args.rbegin(), arranged.args.rend());
    app.parse(reversed);  // CLI11 takes the arguments in reverse order
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0 that CLI11 prints itself; a real parse
    // error becomes one line and the usage exit code.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string what = e.what();
    if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
      // CLI11's message lists them as it saw them, reversed (above), and remaining() keeps the
      // stage's apart from those after a "--" (the app's): listed here in the user's order.
      const std::vector<std::string> extras = in_given_order(app.remaining(true), arranged.args);
      what = "unexpected arguments:";
      for (const auto& a : extras) what += " " + a;
      what += unexpected_options_hint(extras, given_stage.empty() ? nullptr : app.get_subcommand(given_stage));
    }
    std::cerr << "downscale: error: " << what << " (see downscale " << (given_stage.empty() ? "" : given_stage + " ")
              << "--help)" << std::endl;
    return ds::kExitUsage;
  }

  // From here on SIGINT, SIGTERM and SIGUSR1 only set a flag that the stages look at between
  // blocks of work: they stop there, remove their temporary files and say so.
  ds::install_stop_handlers();
  try {
    if (verbose && quiet) throw ds::UsageError("--verbose and --quiet together: choose one");
    if (stage == "benchmark") {
      const std::string level = verbose ? "debug" : quiet ? "warn" : "info";
      ds::setup_logging(stage, level);
      if (!plot.empty()) return ds::plot_benchmark(plot[0], plot[1]);
      if (no_cuda) bench.device = "cpu";
      return ds::run_benchmark_command(bench, level);
    }
    ds::Config cfg = ds::load_config(config_path, overrides);
    if (verbose) cfg.run.log_level = "debug";
    if (quiet) cfg.run.log_level = "warn";
    ds::setup_logging(stage, cfg.run.log_level);
    spdlog::debug("downscale {} {}: config {}, {} --set override(s), log level {}", DOWNSCALE_VERSION, stage,
                  config_path, overrides.size(), cfg.run.log_level);
    // Under mpirun or srun every rank reads the config (before MPI starts): its warnings once,
    // from the first rank.
    if (const char* rank = ds::launch_rank(); !rank || std::string(rank) == "0") {
      for (const auto& r : cfg.replaced_overrides) spdlog::warn("{}", r);
      for (const auto& k : cfg.ignored_keys) spdlog::warn("{}", k);
    }
    const auto dispatch = [&] {
      if (stage == "synth") return ds::run_synth(cfg);
      if (stage == "fetch") return ds::run_fetch(cfg, options.dry_run);
      if (stage == "preprocess") return ds::run_preprocess(cfg);
      if (stage == "train" && options.scaling.on) return ds::run_predict_scaling(cfg, options.scaling);
      if (stage == "train") return ds::run_train(cfg, options);
      if (stage == "predict") return ds::run_predict(cfg);
      if (stage == "evaluate") return ds::run_evaluate(cfg);
      return int(ds::kExitFailure);
    };
    const int rc = dispatch();
    // A signal after the stage's last safe point (acknowledged, "stopping at the next safe point").
    if (std::string message; ds::signal_after_completion(stage, rc, &message) != rc) {
      std::cerr << (ds::stop_message_prefix() + message + "\n") << std::flush;
      return ds::signal_after_completion(stage, rc, nullptr);
    }
    return rc;
  } catch (const ds::Interrupted& e) {
    // One write, so that the lines of several MPI ranks do not interleave.
    std::cerr << (ds::stop_message_prefix() + "downscale " + stage + ": " + e.what() + "\n") << std::flush;
    return e.code();
  } catch (const ds::Error& e) {
    std::cerr << ds::stop_message_prefix() << "downscale " << stage << ": error: " << e.what() << std::endl;
    return e.code();
  } catch (const std::exception& e) {
    std::cerr << "downscale " << stage << ": error: " << e.what() << std::endl;
    return ds::kExitFailure;
  }
  return ds::kExitFailure;
}
