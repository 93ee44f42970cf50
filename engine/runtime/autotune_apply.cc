#include <cstdio>

#include "runtime/runtime.h"

namespace tandem::runtime {

void Runtime::autotune_note(const std::vector<Response>& responses) {
  std::vector<Autotuner::Ran> ran;
  ran.reserve(responses.size());
  for (const Response& r : responses)
    if (r.kind == Response::Kind::kTensor && r.error.empty())
      ran.push_back({&r.name, r.first().bytes()});
  if (ran.empty() || !autotuner_->note(ran, std::chrono::steady_clock::now())) return;
  to_send_ = CycleMessage::Tuning{autotuner_->current(), autotuner_->settled()};
  // The next round must carry it even when nothing else happens: wake the
  // loop as an enqueue would.
  wake();
}

// Every rank reads rank 0's message of the same round and applies its
// values once the round has run, so the next cycle runs with them
// everywhere. Turning the cache off empties it on every rank in the same
// round; tensors announced by bit go in full again (reannounce_evicted).
void Runtime::autotune_apply(const std::vector<CycleMessage>& messages) {
  if (messages.empty() || !messages.front().tuning) return;
  const CycleMessage::Tuning& t = *messages.front().tuning;
  const bool cache_changed = t.values.cache_enabled != tuned_.cache_enabled;
  tuned_ = t.values;
  if (cache_changed)
    for (const auto& set : sets_.snapshot()) {
      if (!set->member()) continue;
      set->coordinator().set_cache_enabled(tuned_.cache_enabled);
      reannounce_evicted(*set);
    }
  {
    std::lock_guard<std::mutex> lock(autotune_mu_);
    applied_.emplace_back(cycles_done_, tuned_);
    autotune_settled_ = t.settled;
  }
  if (autotuner_) autotuner_->started(std::chrono::steady_clock::now());
  char text[256];
  std::snprintf(text, sizeof text,
                "autotune%s: from cycle %llu on, fusion threshold %zu bytes, cycle time %g ms, "
                "response cache %s",
                t.settled ? " settled" : "", static_cast<unsigned long long>(cycles_done_ + 1),
                tuned_.fusion_threshold_bytes, tuned_.cycle_time_ms,
                tuned_.cache_enabled ? "on" : "off");
  report(rank_ == 0 ? log::Level::kInfo : log::Level::kDebug, text, __LINE__);
}

std::string Runtime::autotune_json() const {
  std::string out = std::string("{\"on\":") + (autotune_on() ? "true" : "false");
  std::lock_guard<std::mutex> lock(autotune_mu_);
  const bool settled = !applied_.empty() && autotune_settled_;
  out += std::string(",\"settled\":") + (settled ? "true" : "false") + ",\"applied\":[";
  char row[256];
  for (size_t i = 0; i < applied_.size(); ++i) {
    const auto& [cycle, v] = applied_[i];
    std::snprintf(row, sizeof row,
                  "%s{\"cycle\":%llu,\"fusion_threshold\":%zu,\"cycle_time_ms\":%.17g,"
                  "\"cache_enabled\":%s}",
                  i ? "," : "", static_cast<unsigned long long>(cycle), v.fusion_threshold_bytes,
                  v.cycle_time_ms, v.cache_enabled ? "true" : "false");
    out += row;
  }
  return out + "]}";
}

}  // namespace tandem::runtime
