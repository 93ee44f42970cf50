#include "runtime/fusion_plan.h"

namespace tandem::runtime {
namespace {

bool fusable(const Response& r) {
  return r.kind == Response::Kind::kTensor && r.error.empty() && r.type == OpType::kAllreduce;
}

bool compatible(const Response& a, const Response& b) {
  const Request& x = a.first();
  const Request& y = b.first();
  return x.dtype == y.dtype && x.device == y.device && x.op == y.op && x.prescale == y.prescale &&
         x.postscale == y.postscale;
}

}  // namespace

std::vector<Batch> plan_fusion(const std::vector<Response>& responses, size_t threshold_bytes) {
  std::vector<Batch> batches;
  std::vector<bool> planned(responses.size(), false);
  for (size_t i = 0; i < responses.size(); ++i) {
    if (planned[i]) continue;
    planned[i] = true;
    Batch b;
    b.members.push_back(i);
    const Response& lead = responses[i];
    b.bytes = lead.kind == Response::Kind::kTensor ? lead.first().bytes() : 0;
    if (fusable(lead)) {
      for (size_t j = i + 1; j < responses.size(); ++j) {
        if (planned[j] || !fusable(responses[j]) || !compatible(lead, responses[j])) continue;
        size_t bytes = responses[j].first().bytes();
        if (b.bytes + bytes > threshold_bytes) continue;
        b.bytes += bytes;
        b.members.push_back(j);
        planned[j] = true;
      }
    }
    batches.push_back(std::move(b));
  }
  return batches;
}

}  // namespace tandem::runtime
