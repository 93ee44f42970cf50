// The tools' start-up of the one log (engine/common/log.h): lines carry the
// tool's name ("tandem-run ERROR tools: ..."), and TANDEM_LOG /
// TANDEM_LOG_SUBSYS apply as in the engine. Normal output (a benchmark's
// table, a plan, a usage text) stays on stdout or stderr as is.
#pragma once

#include <exception>

#include "common/log.h"

namespace tandem::tools {

// Names the program and reads the log variables; false (after one error
// line naming the bad variable) when they do not parse.
inline bool start_log(const char* program) {
  log::set_program(program);
  try {
    log::configure_from_environment();
    return true;
  } catch (const std::exception& e) {
    log::configure(log::Config{});
    TANDEM_ERROR(tools, "%s", e.what());
    return false;
  }
}

}  // namespace tandem::tools
