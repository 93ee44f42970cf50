// Wire format of the rendezvous store. A message is a frame: a 4-byte
// little-endian length, then an op byte and its fields (u32/u64 little-endian,
// strings and blobs as u32 length + bytes). The first frame of every
// connection must be HELLO with the job's token; the server drops anything
// else, so a foreign process never reaches the keys.
//
//   client -> server                         server -> client
//   HELLO  token, rank u32, size u32         OK session u32 | REJECTED reason
//   SET    key, value                        OK
//   GET    key, timeout_ms u64               VALUE value | MISSING | LOST rank u32
//   DEL    key                               (no reply)
//   BYE                                      (no reply)
//   GATHER prefix, count u32, timeout_ms u64 VALUES count u32, values | MISSING | LOST rank u32
//
// A process may join, leave (BYE) and join again (tandem_init after
// tandem_finalize): HELLO's answer numbers this rank's joins (0, 1, ...),
// and every rank joins the same number of times, so the n-th join of every
// rank is the job's session n. Clients put their keys under "s<session>/",
// so a session never reads a key an earlier one left behind; once every
// rank of the job has joined session n, every rank has left the sessions
// before it and their keys are dropped.
//
// GET waits in the server until the key is set or the timeout passes
// (timeout 0: just look). LOST answers a GET that would wait while a rank has
// dropped its connection without BYE: that rank died, so the wait is futile.
//
// GATHER waits, like GET, until the keys prefix+"0" ... prefix+"<count-1>"
// are all set, and answers their values in one frame: an allgather over N
// ranks is N SETs and N GATHERs instead of N SETs and N*N GETs, which at
// a few hundred ranks kept the one server thread busy for most of a
// start-up (docs/bootstrap.md, "TCP store").
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace tandem {
namespace store {

enum class Op : uint8_t { kHello = 1, kSet = 2, kGet = 3, kDel = 4, kBye = 5, kGather = 6 };
enum class Reply : uint8_t {
  kOk = 0,
  kValue = 1,
  kMissing = 2,
  kLost = 3,
  kRejected = 4,
  kValues = 5
};

// Frames above this are refused: bootstrap blobs are small, and a bound stops
// a stray connection from making the server allocate without limit.
constexpr uint32_t kMaxFrame = 64u << 20;
// Before its HELLO is accepted a connection gets frames of this much at
// most: a HELLO is a token and a few short fields, and a stranger claiming
// a frame of kMaxFrame would otherwise make the server buffer that much for
// every connection it opens, for as long as the hello timeout.
constexpr uint32_t kMaxHelloFrame = 64u << 10;

class Writer {
 public:
  explicit Writer(uint8_t op) {
    buf_.resize(4);
    buf_.push_back(op);
  }
  Writer& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) buf_.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  Writer& u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) buf_.push_back(uint8_t(v >> (8 * i)));
    return *this;
  }
  Writer& bytes(const void* p, size_t n) {
    u32(static_cast<uint32_t>(n));
    buf_.insert(buf_.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    return *this;
  }
  Writer& str(const std::string& s) { return bytes(s.data(), s.size()); }
  // The finished frame, length prefix filled in.
  const Bytes& frame() {
    uint32_t n = static_cast<uint32_t>(buf_.size() - 4);
    for (int i = 0; i < 4; ++i) buf_[i] = uint8_t(n >> (8 * i));
    return buf_;
  }

 private:
  Bytes buf_;
};

// Reads fields from a frame body; ok() turns false on any overrun, so a
// malformed frame is detected once at the end rather than at every field.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t u8() { return need(1) ? p_[pos_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    if (need(4))
      for (int i = 0; i < 4; ++i) v |= uint32_t(p_[pos_++]) << (8 * i);
    return v;
  }
  uint64_t u64() {
    uint64_t v = 0;
    if (need(8))
      for (int i = 0; i < 8; ++i) v |= uint64_t(p_[pos_++]) << (8 * i);
    return v;
  }
  Bytes bytes() {
    uint32_t n = u32();
    if (!need(n)) return {};
    Bytes b(p_ + pos_, p_ + pos_ + n);
    pos_ += n;
    return b;
  }
  std::string str() {
    Bytes b = bytes();
    return std::string(b.begin(), b.end());
  }
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == n_; }

 private:
  bool need(size_t k) {
    if (!ok_ || n_ - pos_ < k) ok_ = false;
    return ok_;
  }
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool ok_ = true;
};

inline uint32_t frame_length(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// The receiving side of a stream of frames (the store's server, the elastic
// service and its client read whatever arrived into `in`): hands the body of
// each whole frame at the front of `in` to on_frame(body, length), which
// returns false to read no further frames now, then drops those frames from
// `in` (a partial one stays for the next read). False at a bad length (0 or
// above max_frame), which is then at the front of `in` (bad_frame_length
// says what was wrong): nothing on that connection can be trusted from there.
template <typename OnFrame>
bool take_frames(Bytes& in, OnFrame&& on_frame, uint32_t max_frame = kMaxFrame) {
  size_t off = 0;
  bool ok = true;
  while (in.size() - off >= 4) {
    const uint32_t len = frame_length(in.data() + off);
    if (len == 0 || len > max_frame) {
      ok = false;
      break;
    }
    if (in.size() - off - 4 < len) break;
    const bool more = on_frame(in.data() + off + 4, len);
    off += 4 + len;
    if (!more) break;
  }
  in.erase(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(off));
  return ok;
}

// Why take_frames refused `in`: the length it found and the bound.
inline std::string bad_frame_length(const Bytes& in, uint32_t max_frame) {
  const uint32_t len = in.size() >= 4 ? frame_length(in.data()) : 0;
  return "a frame of " + std::to_string(len) + " bytes (expected 1 to " +
         std::to_string(max_frame) + ")";
}

}  // namespace store
}  // namespace tandem
