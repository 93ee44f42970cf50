#include "runtime/cycle_message.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "common/errors.h"

namespace tandem::runtime {
namespace {

// Both ends run the same build on the same architecture (one job), so plain
// host-order fields are enough; the reader still checks every length so that
// a corrupt message is an error, never an out-of-bounds read.
class Writer {
 public:
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void put_ints(const std::vector<int64_t>& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (int64_t x : v) put(x);
  }
  void put_words(const std::vector<uint64_t>& v) {
    put<uint32_t>(static_cast<uint32_t>(v.size()));
    for (uint64_t x : v) put(x);
  }
  Bytes take() { return std::move(out_); }

 private:
  Bytes out_;
};

class Reader {
 public:
  explicit Reader(const Bytes& in) : in_(in) {}
  template <typename T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    auto n = get<uint32_t>();
    need(n);
    std::string s(reinterpret_cast<const char*>(in_.data() + pos_), n);
    pos_ += n;
    return s;
  }
  std::vector<int64_t> get_ints() {
    auto n = get<uint32_t>();
    need(static_cast<size_t>(n) * 8);
    std::vector<int64_t> v(n);
    for (auto& x : v) x = get<int64_t>();
    return v;
  }
  std::vector<uint64_t> get_words() {
    auto n = get<uint32_t>();
    need(static_cast<size_t>(n) * 8);
    std::vector<uint64_t> v(n);
    for (auto& x : v) x = get<uint64_t>();
    return v;
  }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  void need(size_t n) const {
    if (in_.size() - pos_ < n)
      throw Error("runtime: truncated cycle message from a peer (" + std::to_string(in_.size()) +
                  " bytes); peers must run the same tandem version");
  }
  const Bytes& in_;
  size_t pos_ = 0;
};

constexpr uint32_t kMagic = 0x544e4332;  // "TNC2": catches version skew
constexpr uint8_t kJoinedFlag = 1, kShutdownFlag = 2, kWaitsFlag = 4, kTuningFlag = 8;

}  // namespace

Bytes CycleMessage::serialize() const {
  Writer w;
  w.put(kMagic);
  w.put<uint8_t>(static_cast<uint8_t>((joined ? kJoinedFlag : 0) | (shutdown ? kShutdownFlag : 0) |
                                      (waits.empty() ? 0 : kWaitsFlag) |
                                      (tuning ? kTuningFlag : 0)));
  w.put<uint32_t>(static_cast<uint32_t>(requests.size()));
  for (const Request& r : requests) {
    w.put_string(r.name);
    w.put<uint8_t>(static_cast<uint8_t>(r.type));
    w.put(r.dtype);
    w.put(r.device);
    w.put(r.op);
    w.put(r.root);
    w.put(r.prescale);
    w.put(r.postscale);
    w.put_ints(r.shape);
    w.put_ints(r.splits);
  }
  w.put_words(cache_bits);
  w.put_words(invalid_bits);
  if (!waits.empty()) {
    w.put<uint32_t>(static_cast<uint32_t>(waits.size()));
    for (const Wait& x : waits) {
      w.put(x.set);
      w.put(x.type);
      w.put_string(x.name);
      w.put(x.more);
      w.put<uint32_t>(static_cast<uint32_t>(x.missing.size()));
      for (int32_t r : x.missing) w.put(r);
    }
  }
  if (tuning) {
    w.put<uint64_t>(tuning->values.fusion_threshold_bytes);
    w.put<double>(tuning->values.cycle_time_ms);
    w.put<uint8_t>(tuning->values.cache_enabled ? 1 : 0);
    w.put<uint8_t>(tuning->settled ? 1 : 0);
  }
  return w.take();
}

CycleMessage CycleMessage::parse(const Bytes& bytes) {
  Reader r(bytes);
  if (r.get<uint32_t>() != kMagic)
    throw Error(
        "runtime: a peer sent a cycle message of another format; every rank must run "
        "the same tandem version");
  CycleMessage m;
  auto flags = r.get<uint8_t>();
  m.joined = flags & kJoinedFlag;
  m.shutdown = flags & kShutdownFlag;
  auto n = r.get<uint32_t>();
  for (uint32_t i = 0; i < n; ++i) {
    Request q;
    q.name = r.get_string();
    q.type = static_cast<OpType>(r.get<uint8_t>());
    q.dtype = r.get<int32_t>();
    q.device = r.get<int32_t>();
    q.op = r.get<int32_t>();
    q.root = r.get<int32_t>();
    q.prescale = r.get<double>();
    q.postscale = r.get<double>();
    q.shape = r.get_ints();
    q.splits = r.get_ints();
    m.requests.push_back(std::move(q));
  }
  m.cache_bits = r.get_words();
  m.invalid_bits = r.get_words();
  if (flags & kWaitsFlag) {
    auto n_waits = r.get<uint32_t>();
    for (uint32_t i = 0; i < n_waits; ++i) {
      Wait x;
      x.set = r.get<int32_t>();
      x.type = r.get<uint8_t>();
      x.name = r.get_string();
      x.more = r.get<uint32_t>();
      auto n_missing = r.get<uint32_t>();
      for (uint32_t k = 0; k < n_missing; ++k) x.missing.push_back(r.get<int32_t>());
      m.waits.push_back(std::move(x));
    }
  }
  if (flags & kTuningFlag) {
    Tuning t;
    t.values.fusion_threshold_bytes = static_cast<size_t>(r.get<uint64_t>());
    t.values.cycle_time_ms = r.get<double>();
    t.values.cache_enabled = r.get<uint8_t>() != 0;
    t.settled = r.get<uint8_t>() != 0;
    m.tuning = t;
  }
  if (!r.at_end()) throw Error("runtime: trailing bytes in a peer's cycle message");
  return m;
}

void set_bit(std::vector<uint64_t>& bits, size_t index) {
  if (bits.size() <= index / 64) bits.resize(index / 64 + 1, 0);
  bits[index / 64] |= uint64_t{1} << (index % 64);
}

bool test_bit(const std::vector<uint64_t>& bits, size_t index) {
  return index / 64 < bits.size() && (bits[index / 64] >> (index % 64)) & 1;
}

bool full_round_needed(const CycleMessage& m) {
  return m.joined || m.shutdown || !m.waits.empty() || !m.requests.empty() || m.tuning ||
         std::any_of(m.invalid_bits.begin(), m.invalid_bits.end(),
                     [](uint64_t w) { return w != 0; });
}

std::vector<uint8_t> encode_bit_round(const CycleMessage& mine, size_t span, bool full,
                                      bool report) {
  std::vector<uint8_t> out(1 + 2 * span, 0);
  out[0] = report ? 2 : full ? 1 : 0;
  for (size_t bit = 0; bit < span; ++bit) {
    const bool ready = test_bit(mine.cache_bits, bit);
    out[1 + bit] = ready ? 1 : 0;
    out[1 + span + bit] = ready ? 0 : 1;
  }
  // A ready bit past the span (an entry this rank alone holds) cannot be:
  // every rank's cache is the same. Say so rather than lose it.
  for (size_t bit = span; bit < mine.cache_bits.size() * 64; ++bit)
    if (test_bit(mine.cache_bits, bit)) out[0] = std::max<uint8_t>(out[0], 1);
  return out;
}

BitRound decode_bit_round(const std::vector<uint8_t>& reduced, size_t span) {
  if (reduced.size() != 1 + 2 * span)
    throw Error("runtime: a round's bit vector has " + std::to_string(reduced.size()) +
                " bytes, expected " + std::to_string(1 + 2 * span) + " (a bug in Tandem)");
  BitRound r;
  r.full = reduced[0] != 0;
  r.report = reduced[0] >= 2;
  r.ready_somewhere.assign((span + 63) / 64, 0);
  r.missing_somewhere.assign((span + 63) / 64, 0);
  for (size_t bit = 0; bit < span; ++bit) {
    if (reduced[1 + bit]) set_bit(r.ready_somewhere, bit);
    if (reduced[1 + span + bit]) set_bit(r.missing_somewhere, bit);
  }
  return r;
}

}  // namespace tandem::runtime
