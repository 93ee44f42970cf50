#include "runtime/log.h"

#include <cstdio>

namespace tandem::runtime {

void Log::operator()(LogLevel level, const std::string& message) const {
  if (sink_) sink_(level, message);
  if (!enabled(level)) return;
  static const char* const names[] = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
  // One fprintf per line so that lines of concurrent ranks do not interleave.
  std::fprintf(stderr, "[tandem %d runtime] %s %s\n", rank_, names[static_cast<int>(level)],
               message.c_str());
}

}  // namespace tandem::runtime
