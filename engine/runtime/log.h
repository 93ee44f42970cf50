// The runtime's log: one line per message on stderr, prefixed with the rank
// and level, filtered by TANDEM_LOG_LEVEL. Tests install a sink to read
// what would have been printed (the stall warning, for one).
#pragma once

#include <functional>
#include <string>

#include "runtime/settings.h"

namespace tandem::runtime {

class Log {
 public:
  using Sink = std::function<void(LogLevel, const std::string&)>;
  Log(int rank, LogLevel level, Sink sink = nullptr)
      : rank_(rank), level_(level), sink_(std::move(sink)) {}
  void operator()(LogLevel level, const std::string& message) const;
  bool enabled(LogLevel level) const { return level >= level_; }

 private:
  int rank_;
  LogLevel level_;
  Sink sink_;
};

}  // namespace tandem::runtime
