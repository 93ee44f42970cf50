#include "runtime/straggler.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "bootstrap/node_domain.h"
#include "common/errors.h"
#include "common/settings.h"

namespace tandem::runtime {

namespace {

std::string cpu_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "?";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int end = c;
    while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, &set)) ++end;
    if (!out.empty()) out += ",";
    out += std::to_string(c);
    if (end > c) out += "-" + std::to_string(end);
    c = end;
  }
  return out.empty() ? "?" : out;
}

// Little-endian fields, as the cycle messages.
class Out {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof v);
  }
  void put_string(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
  }
  Bytes b;
};

class In {
 public:
  explicit In(const Bytes& b) : b_(b) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, b_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string get_string() {
    const auto n = get<uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(b_.data() + at_), n);
    at_ += n;
    return s;
  }
  bool at_end() const { return at_ == b_.size(); }

 private:
  void need(size_t n) const {
    if (b_.size() - at_ < n) throw Error("runtime: a truncated straggler summary from a peer");
  }
  const Bytes& b_;
  size_t at_ = 0;
};

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", std::isfinite(x) ? x : 0.0);
  return text;
}

std::string percent(double share) {
  char text[16];
  std::snprintf(text, sizeof text, "%.0f%%", 100 * share);
  return text;
}

std::string duration(double seconds) {
  char text[32];
  if (seconds >= 1) std::snprintf(text, sizeof text, "%.2f s", seconds);
  else if (seconds >= 1e-3) std::snprintf(text, sizeof text, "%.1f ms", seconds * 1e3);
  else std::snprintf(text, sizeof text, "%.0f us", seconds * 1e6);
  return text;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

}  // namespace

RankPlace this_process_place(int device_index) {
  RankPlace p;
  if (auto h = env_value("HOROVOD_HOSTNAME")) p.host = *h;
  else {
    try {
      p.host = node_name_from_environment();
    } catch (const Error&) { p.host = "?"; }
  }
  // The plugin orders the list so that position local rank is the task's
  // own GPU (docs/design.md, binding).
  if (auto visible = environment_fact("CUDA_VISIBLE_DEVICES"); visible && !visible->empty()) {
    std::vector<std::string> ids;
    size_t start = 0;
    for (;;) {
      size_t comma = visible->find(',', start);
      ids.push_back(visible->substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (device_index >= 0 && static_cast<size_t>(device_index) < ids.size())
      p.gpu = ids[static_cast<size_t>(device_index)];
  }
  p.cpus = cpu_list();
  return p;
}

void RoundWaits::add(float seconds) {
  const uint64_t index = rounds_++;
  if (index % stride_ != 0) return;
  samples_.push_back(seconds);
  if (samples_.size() < kCap) return;
  // Full: keep every other sample (rounds 0, 2 stride, 4 stride, ...), the
  // same on every rank since every rank sees the same rounds.
  size_t kept = 0;
  for (size_t i = 0; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
  samples_.resize(kept);
  stride_ *= 2;
}

void RoundWaits::clear() {
  samples_.clear();
  rounds_ = 0;
  stride_ = 1;
}

namespace {
// Without log2 and exp2: glibc 2.29 gave them new symbol versions, above
// the engine's floor (docs/containers.md). frexp and ldexp are older; the
// eighths of an octave are a table. kStep[j] = 2^(j/8), kMid[j] = 2^((j+0.5)/8).
constexpr double kStep[8] = {1.0,
                             1.0905077326652577,
                             1.189207115002721,
                             1.2968395546510096,
                             1.4142135623730951,
                             1.5422108254079407,
                             1.681792830507429,
                             1.8340080864093424};
constexpr double kMid[8] = {1.0442737824274138, 1.1387886347566916, 1.241857812073484,
                            1.3542555469368927, 1.4768261459394993, 1.6104903319492543,
                            1.7562521603732995, 1.9152065613971474};

int bin_of(double seconds) {
  if (!(seconds >= 1e-6)) return 0;
  int e = 0;
  const double m = 2 * std::frexp(seconds / 1e-6, &e);  // in [1, 2): seconds = 1e-6 m 2^(e-1)
  int eighth = 7;
  while (eighth > 0 && m < kStep[eighth]) --eighth;
  const long b = 1 + 8L * (e - 1) + eighth;
  return static_cast<int>(std::min<long>(b, WaitHistogram::kBins - 1));
}
double value_of(int bin) {
  if (bin == 0) return 0;
  return 1e-6 * std::ldexp(kMid[(bin - 1) % 8], (bin - 1) / 8);
}
}  // namespace

void WaitHistogram::add(double seconds, uint64_t n) {
  counts[static_cast<size_t>(bin_of(seconds))] += n;
}

void WaitHistogram::merge(const WaitHistogram& o) {
  for (int i = 0; i < kBins; ++i)
    counts[static_cast<size_t>(i)] += o.counts[static_cast<size_t>(i)];
}

double WaitHistogram::quantile(double q) const {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0;
  const double target = q * static_cast<double>(total);
  uint64_t seen = 0;
  for (int i = 0; i < kBins; ++i) {
    seen += counts[static_cast<size_t>(i)];
    if (static_cast<double>(seen) >= target) return value_of(i);
  }
  return value_of(kBins - 1);
}

void Summary::fold(const RoundWaits& mine, const std::vector<float>& longest,
                   const std::vector<float>& shortest) {
  const auto& w = mine.samples();
  const uint64_t stride = mine.stride();
  rounds += mine.rounds();
  for (size_t k = 0; k < w.size() && k < longest.size() && k < shortest.size(); ++k) {
    const double lateness = std::max(0.0, static_cast<double>(longest[k]) - w[k]);
    if (w[k] <= shortest[k]) last += stride;
    held += lateness * static_cast<double>(stride);
    imposed.add(lateness, stride);
  }
}

void Summary::merge(const Summary& o) {
  seconds += o.seconds;
  rounds += o.rounds;
  last += o.last;
  held += o.held;
  imposed.merge(o.imposed);
  place = o.place;
}

Bytes Summary::serialize() const {
  Out o;
  o.put<int32_t>(rank);
  o.put_string(place.host);
  o.put_string(place.gpu);
  o.put_string(place.cpus);
  o.put<double>(seconds);
  o.put<uint64_t>(rounds);
  o.put<uint64_t>(last);
  o.put<double>(held);
  // Sparse: a rank's imposed waits fill few bins.
  uint16_t used = 0;
  for (uint64_t c : imposed.counts) used += c != 0;
  o.put<uint16_t>(used);
  for (int i = 0; i < WaitHistogram::kBins; ++i) {
    if (imposed.counts[static_cast<size_t>(i)] == 0) continue;
    o.put<uint8_t>(static_cast<uint8_t>(i));
    o.put<uint64_t>(imposed.counts[static_cast<size_t>(i)]);
  }
  return o.b;
}

Summary Summary::parse(const Bytes& b) {
  In in(b);
  Summary s;
  s.rank = in.get<int32_t>();
  s.place.host = in.get_string();
  s.place.gpu = in.get_string();
  s.place.cpus = in.get_string();
  s.seconds = in.get<double>();
  s.rounds = in.get<uint64_t>();
  s.last = in.get<uint64_t>();
  s.held = in.get<double>();
  const auto used = in.get<uint16_t>();
  for (uint16_t i = 0; i < used; ++i) {
    const auto bin = in.get<uint8_t>();
    s.imposed.counts[bin] = in.get<uint64_t>();
  }
  if (!in.at_end()) throw Error("runtime: trailing bytes in a peer's straggler summary");
  return s;
}

// How the rule reads (docs/runtime.md, "Stragglers"): the share of the time
// the set waited for a rank is compared with the median rank's, so that a
// job where every rank waits as much (a busy machine, a slow network) names
// nobody, and a margin of a tenth of the time keeps noise from naming one.
// Ranks that stand out together on one node are the node's fault.
Report make_report(const std::vector<Summary>& summaries) {
  Report r;
  if (summaries.empty()) return r;
  r.seconds = summaries.front().seconds;
  for (const Summary& s : summaries) r.rounds = std::max(r.rounds, s.rounds);
  const double period = r.seconds > 0 ? r.seconds : 1;
  for (const Summary& s : summaries) {
    Report::Row row;
    row.rank = s.rank;
    row.place = s.place;
    row.rounds = s.rounds;
    row.last = s.last;
    row.last_share = s.rounds ? static_cast<double>(s.last) / static_cast<double>(s.rounds) : 0;
    row.median = s.imposed.quantile(0.5);
    row.p95 = s.imposed.quantile(0.95);
    row.held = s.held;
    row.held_share = std::min(1.0, s.held / period);
    r.rows.push_back(row);
  }
  std::stable_sort(r.rows.begin(), r.rows.end(),
                   [](const Report::Row& a, const Report::Row& b) { return a.held > b.held; });
  std::vector<double> shares;
  for (const auto& row : r.rows) shares.push_back(row.held_share);
  std::sort(shares.begin(), shares.end());
  const size_t n = shares.size();
  const double median = n % 2 ? shares[n / 2] : (shares[n / 2 - 1] + shares[n / 2]) / 2;
  std::vector<const Report::Row*> out;
  for (auto& row : r.rows) {
    row.stands_out = n > 1 && row.held_share - median >= kStandOut;
    if (row.stands_out) out.push_back(&row);
  }
  const Report::Row& top = r.rows.front();
  if (out.empty()) {
    r.verdict = "no rank stands out";
    if (n > 1 && r.rounds > 0)
      r.verdict += " (the set waited longest for rank " + std::to_string(top.rank) + " on " +
                   top.place.host + ": " + percent(top.held_share) + " of the time)";
    return r;
  }
  bool one_node = true;
  for (const Report::Row* row : out) one_node = one_node && row->place.host == top.place.host;
  for (const Report::Row* row : out) r.named.push_back(row->rank);
  if (out.size() >= 2 && one_node) {
    r.kind = "node";
    r.node = top.place.host;
    uint64_t last = 0;
    for (const Report::Row* row : out) last += row->last;
    r.verdict = "node " + r.node + " (ranks " + rank_list(r.named) + ") held " +
                percent(top.held_share) + " of the time: its ranks asked last in " +
                percent(r.rounds ? std::min(1.0, static_cast<double>(last) / r.rounds) : 0) +
                " of " + std::to_string(r.rounds) + " rounds, median wait imposed " +
                duration(top.median);
  } else if (out.size() == 1) {
    r.kind = "rank";
    r.verdict = "rank " + std::to_string(top.rank) + " on " + top.place.host + " held " +
                percent(top.held_share) + " of the time: it asked last in " +
                percent(top.last_share) + " of " + std::to_string(top.rounds) +
                " rounds, median wait imposed " + duration(top.median) + ", p95 " +
                duration(top.p95);
  } else {
    r.kind = "ranks";
    r.verdict = "ranks ";
    for (size_t i = 0; i < out.size(); ++i)
      r.verdict += (i ? ", " : "") + std::to_string(out[i]->rank) + " on " + out[i]->place.host +
                   " (" + percent(out[i]->held_share) + ")";
    r.verdict += " held the most time; they stand out on different nodes";
  }
  return r;
}

std::vector<std::string> Report::lines(const std::string& title) const {
  std::vector<std::string> out;
  out.push_back(title + " (" + duration(seconds) + ", " + std::to_string(rounds) +
                " rounds): " + verdict);
  char text[256];
  std::snprintf(text, sizeof text, "  %5s %-16s %-6s %-12s %6s %10s %10s %6s", "rank", "host",
                "gpu", "cpus", "last", "median", "p95", "held");
  out.push_back(text);
  for (const Row& row : rows) {
    std::snprintf(text, sizeof text, "  %5d %-16s %-6s %-12s %6s %10s %10s %6s%s", row.rank,
                  row.place.host.c_str(), row.place.gpu.c_str(), row.place.cpus.c_str(),
                  percent(row.last_share).c_str(), duration(row.median).c_str(),
                  duration(row.p95).c_str(), percent(row.held_share).c_str(),
                  row.stands_out ? "  <-" : "");
    out.push_back(text);
  }
  return out;
}

std::string Report::json() const {
  std::string j = "{\"seconds\":" + json_number(seconds) + ",\"rounds\":" + std::to_string(rounds) +
                  ",\"kind\":" + json_string(kind) + ",\"named\":[" + rank_list(named) +
                  "],\"node\":" + json_string(node) + ",\"verdict\":" + json_string(verdict) +
                  ",\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& w = rows[i];
    j += std::string(i ? "," : "") + "{\"rank\":" + std::to_string(w.rank) +
         ",\"host\":" + json_string(w.place.host) + ",\"gpu\":" + json_string(w.place.gpu) +
         ",\"cpus\":" + json_string(w.place.cpus) + ",\"rounds\":" + std::to_string(w.rounds) +
         ",\"last\":" + std::to_string(w.last) + ",\"last_share\":" + json_number(w.last_share) +
         ",\"median_s\":" + json_number(w.median) + ",\"p95_s\":" + json_number(w.p95) +
         ",\"held_s\":" + json_number(w.held) + ",\"held_share\":" + json_number(w.held_share) +
         ",\"stands_out\":" + (w.stands_out ? "true" : "false") + "}";
  }
  return j + "]}";
}

}  // namespace tandem::runtime
