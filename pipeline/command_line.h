// What the command line may hold before CLI11 parses it: the options common to every stage may
// come before the stage (`downscale --config x.yaml train`, as `git -C dir log`), and a mistyped
// stage gets a suggestion (`downscale trian` -> did you mean 'train'?) instead of CLI11's
// "A subcommand is required".
#pragma once
#include <string>
#include <vector>

namespace ds {

struct StageArguments {
  std::vector<std::string> args;  // argv with the common options moved after the stage
  std::string error;              // non-empty: an unknown stage, said in one line
};

// args: argv[1..]. stages: the stage names. Options before the stage that take a value:
// -c/--config, --set (also as --opt=value); flags: -v/--verbose, -q/--quiet. --help, -h and
// --version before any stage are left alone.
StageArguments arrange_stage_arguments(const std::vector<std::string>& args, const std::vector<std::string>& stages);

}  // namespace ds
