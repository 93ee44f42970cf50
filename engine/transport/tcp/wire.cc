#include "transport/tcp/wire.h"

#include <netinet/in.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"

namespace tandem {
namespace tcp {
namespace {

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

constexpr char kEndpointMagic[4] = {'T', 'C', 'P', '1'};

}  // namespace

Secret random_secret() {
  Secret s{};
  size_t got = 0;
  while (got < s.size()) {
    const ssize_t n = getrandom(s.data() + got, s.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("tcp: getrandom for the job secret", errno);
    got += static_cast<size_t>(n);
  }
  return s;
}

bool same_secret(const uint8_t* a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < Secret().size(); ++i) diff |= static_cast<uint8_t>(a[i] ^ b[i]);
  return diff == 0;
}

Bytes encode_endpoint(const SockAddr& addr) {
  Bytes b(kEndpointMagic, kEndpointMagic + 4);
  b.push_back(addr.family() == AF_INET6 ? 6 : 4);
  const int port = addr.port();
  b.push_back(static_cast<uint8_t>(port & 0xff));
  b.push_back(static_cast<uint8_t>(port >> 8));
  if (addr.family() == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr.storage);
    b.insert(b.end(), in6->sin6_addr.s6_addr, in6->sin6_addr.s6_addr + 16);
    uint8_t scope[4];
    put_u32(scope, in6->sin6_scope_id);
    b.insert(b.end(), scope, scope + 4);
  } else {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr.storage);
    const auto* a = reinterpret_cast<const uint8_t*>(&in->sin_addr.s_addr);
    b.insert(b.end(), a, a + 4);
  }
  return b;
}

std::optional<SockAddr> decode_endpoint(const Bytes& b) {
  if (b.size() < 7 || std::memcmp(b.data(), kEndpointMagic, 4) != 0) return std::nullopt;
  const int port = b[5] | (b[6] << 8);
  SockAddr a;
  if (b[4] == 4 && b.size() == 7 + 4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
    in->sin_family = AF_INET;
    std::memcpy(&in->sin_addr.s_addr, b.data() + 7, 4);
    a.len = sizeof(sockaddr_in);
  } else if (b[4] == 6 && b.size() == 7 + 16 + 4) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    in6->sin6_family = AF_INET6;
    std::memcpy(in6->sin6_addr.s6_addr, b.data() + 7, 16);
    in6->sin6_scope_id = get_u32(b.data() + 7 + 16);
    a.len = sizeof(sockaddr_in6);
  } else {
    return std::nullopt;
  }
  a.set_port(port);
  return a;
}

std::array<uint8_t, Hello::kSize> encode_hello(const Hello& h) {
  std::array<uint8_t, Hello::kSize> out{};
  std::memcpy(out.data(), kHelloMagic, 8);
  put_u32(out.data() + 8, h.version);
  put_u32(out.data() + 12, static_cast<uint32_t>(h.world_rank));
  std::memcpy(out.data() + 16, h.secret.data(), h.secret.size());
  return out;
}

std::string check_hello(const uint8_t* data, size_t size, Hello* out) {
  if (std::memcmp(data, kHelloMagic, std::min<size_t>(size, 8)) != 0)
    return "not a Tandem connection (unexpected first bytes)";
  if (size < 12) return "";
  const uint32_t version = get_u32(data + 8);
  if (version != kProtocolVersion)
    return "protocol version " + std::to_string(version) + ", this rank speaks " +
           std::to_string(kProtocolVersion) + " (mixed Tandem installations?)";
  if (size < Hello::kSize) return "";
  out->version = version;
  out->world_rank = static_cast<int32_t>(get_u32(data + 12));
  std::memcpy(out->secret.data(), data + 16, out->secret.size());
  return "";
}

void encode_length(uint8_t* out, uint64_t v) {
  for (size_t i = 0; i < kLengthBytes; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t decode_length(const uint8_t* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < kLengthBytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::array<uint8_t, Ack::kSize> encode_ack(int32_t world_rank) {
  std::array<uint8_t, Ack::kSize> out{};
  std::memcpy(out.data(), kAckMagic, 8);
  put_u32(out.data() + 8, static_cast<uint32_t>(world_rank));
  return out;
}

std::string check_ack(const uint8_t* data, size_t size, int32_t expected_world_rank) {
  if (size != Ack::kSize || std::memcmp(data, kAckMagic, 8) != 0)
    return "the peer did not answer the handshake like a Tandem rank";
  const auto rank = static_cast<int32_t>(get_u32(data + 8));
  if (rank != expected_world_rank)
    return "the peer answered as world rank " + std::to_string(rank) + ", expected " +
           std::to_string(expected_world_rank);
  return "";
}

}  // namespace tcp
}  // namespace tandem
