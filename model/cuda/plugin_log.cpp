// Whether the program's log shows info lines (its -q / -v and run.log_level), read from spdlog's
// default logger, which the program and this plugin share through libspdlog.so: the plugin's
// per-plan notes are info, and -q keeps warnings and errors only. Compiled by the host compiler,
// not nvcc, so spdlog's and fmt's templates never meet nvcc.
#include <spdlog/spdlog.h>

namespace ds::model {

bool plugin_info_shown() { return spdlog::default_logger_raw()->should_log(spdlog::level::info); }

}  // namespace ds::model
