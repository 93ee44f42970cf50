// Hostile and broken peers of a service that speaks the store's frames (the
// rendezvous store, the elastic membership service: store_protocol.h): each
// opens a raw connection to the service's port and misbehaves in one way.
// The tests run a real job beside them and then read what each connection
// got back: the service must have refused it (a REJECTED frame naming why,
// then the close) or just closed it, within its hello timeout.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/store_protocol.h"
#include "common/errors.h"

namespace tandem::test {

inline Fd connect_raw(uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    throw SystemError("test: connect to port " + std::to_string(port), errno);
  return fd;
}

inline bool send_raw(int fd, const void* p, size_t n) {
  return ::send(fd, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}

inline Bytes length_prefix(uint32_t len) {
  return {uint8_t(len), uint8_t(len >> 8), uint8_t(len >> 16), uint8_t(len >> 24)};
}

// What a hostile connection got back: "closed" when the service closed it
// without a word, "rejected: <reason>" for a REJECTED frame, "open" when
// nothing came within the wait, anything else described.
inline std::string answer_of(int fd, std::chrono::milliseconds wait) {
  Bytes in;
  const Deadline end = Clock::now() + wait;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms_left(end)) <= 0) return in.empty() ? "open" : "a partial frame, then open";
    uint8_t buf[4096];
    const ssize_t k = ::recv(fd, buf, sizeof buf, 0);
    if (k <= 0) break;
    in.insert(in.end(), buf, buf + k);
  }
  if (in.empty()) return "closed";
  if (in.size() < 5 || store::frame_length(in.data()) != in.size() - 4)
    return "closed after " + std::to_string(in.size()) + " bytes that are not one frame";
  store::Reader r(in.data() + 4, in.size() - 4);
  if (r.u8() != static_cast<uint8_t>(store::Reply::kRejected))
    return "an answer that is no refusal";
  const std::string why = r.str();
  return r.done() ? "rejected: " + why : "a malformed refusal";
}

struct Hostile {
  std::string kind;
  Fd fd;
  std::string expected;  // what answer_of must contain
};

// The hostile connections that need no thread. `hello(token)` is the
// service's own HELLO frame with that token; `foreign_hello` one of the
// other service's (another protocol on the same frames).
template <typename HelloOf>
std::vector<Hostile> open_hostile(uint16_t port, HelloOf&& hello, const std::string& token,
                                  const Bytes& foreign_hello, const std::string& other_job_token) {
  std::vector<Hostile> out;
  auto open = [&](const std::string& kind, const Bytes& bytes, const std::string& expected) {
    Hostile h{kind, connect_raw(port), expected};
    if (!bytes.empty()) send_raw(h.fd.get(), bytes.data(), bytes.size());
    out.push_back(std::move(h));
  };
  open("wrong token", hello("not-the-token"), "rejected: wrong job token");
  open("missing token", hello(""), "rejected: wrong job token");
  open("another job's token", hello(other_job_token), "rejected: wrong job token");
  const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  open("garbage", Bytes(http.begin(), http.end()), "rejected: a frame of");
  // The largest length the 4-byte prefix can claim, and the largest frame an
  // authenticated rank may send, each followed by a few bytes only: refused
  // at once, before anything is buffered for them.
  Bytes huge = length_prefix(UINT32_MAX);
  huge.push_back(1);
  open("a frame claiming 4 GiB", huge, "rejected: a frame of 4294967295 bytes");
  Bytes big = length_prefix(store::kMaxFrame);
  big.insert(big.end(), 64, 0);
  open("a frame claiming 64 MiB before HELLO", big, "before HELLO");
  // A HELLO whose token claims 2^32-1 bytes inside a frame of a few: the
  // field's length is checked against the frame, nothing is allocated.
  Bytes lying = hello("x");
  const Bytes claim = length_prefix(UINT32_MAX);
  std::copy(claim.begin(), claim.end(), lying.begin() + 5);
  open("a token claiming 4 GiB", lying, "rejected: malformed HELLO");
  Bytes future = hello(token);
  future.insert(future.end(), {1, 2, 3, 4});  // a field this version does not know
  const Bytes fixed = length_prefix(static_cast<uint32_t>(future.size() - 4));
  std::copy(fixed.begin(), fixed.end(), future.begin());
  open("another protocol version's HELLO", future, "rejected: malformed HELLO");
  open("the other service's HELLO", foreign_hello, "rejected: first message is not HELLO");
  open("silent", {}, "rejected: no complete HELLO within");
  Bytes half = hello("not-the-token");
  half.resize(half.size() / 2);
  open("half a HELLO, then silent", half, "rejected: no complete HELLO within");
  // Closed by the peer: nothing to answer; the service must just drop it.
  for (const char* kind : {"half a HELLO, then closed", "closed at once"}) {
    Fd fd = connect_raw(port);
    if (kind[0] == 'h') send_raw(fd.get(), half.data(), half.size());
  }
  return out;
}

// A slowloris: sends `frame` one byte a second, and stops at the first
// sign of life from the service (its refusal or its close). answer() is what
// it got, once it has stopped.
class Slowloris {
 public:
  Slowloris(uint16_t port, Bytes frame) : fd_(connect_raw(port)), frame_(std::move(frame)) {
    thread_ = std::thread([this] {
      for (size_t i = 0; i < frame_.size(); ++i) {
        if (!send_raw(fd_.get(), &frame_[i], 1)) break;
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, 1000) != 0) break;
      }
      answer_ = answer_of(fd_.get(), std::chrono::seconds(30));
    });
  }
  ~Slowloris() {
    if (thread_.joinable()) thread_.join();
  }
  std::string answer() {
    thread_.join();
    return answer_;
  }

 private:
  Fd fd_;
  Bytes frame_;
  std::string answer_;
  std::thread thread_;
};

}  // namespace tandem::test
