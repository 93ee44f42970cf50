#include "common/settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "common/errors.h"

namespace tandem {
namespace settings {
namespace {

// The raw value, or "" when unset (an empty value counts as unset).
std::string raw(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

[[noreturn]] void bad(const char* name, const std::string& value, const std::string& expected) {
  throw InvalidArgument(std::string(name) + "='" + value + "': expected " + expected +
                        "; fix or unset the variable");
}

}  // namespace

std::chrono::milliseconds parse_seconds(const char* name, const std::string& value) {
  const char* s = value.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s, &end);
  if (value.empty() || end == s || *end != '\0' || errno != 0 || !std::isfinite(v) || v <= 0 ||
      v > 86400 || value.find_first_of("xXpPnN") != std::string::npos)
    bad(name, value, "a number of seconds greater than 0 and at most 86400 (e.g. 30 or 0.5)");
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(v * 1000.0)));
}

long parse_int(const char* name, const std::string& value, long min, long max) {
  const char* s = value.c_str();
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (value.empty() || end == s || *end != '\0' || errno != 0 || v < min || v > max)
    bad(name, value,
        "a decimal integer from " + std::to_string(min) + " to " + std::to_string(max));
  return v;
}

size_t parse_bytes(const char* name, const std::string& value, size_t min, size_t max) {
  // Plain decimal bytes, or with a binary suffix K, M, G (e.g. 256K).
  size_t mult = 1;
  std::string digits = value;
  if (!digits.empty()) {
    switch (digits.back()) {
      case 'K': case 'k': mult = size_t{1} << 10; digits.pop_back(); break;
      case 'M': case 'm': mult = size_t{1} << 20; digits.pop_back(); break;
      case 'G': case 'g': mult = size_t{1} << 30; digits.pop_back(); break;
      default: break;
    }
  }
  const char* s = digits.c_str();
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  const std::string range = std::to_string(min) + " to " + std::to_string(max) +
                            " bytes (decimal, optional suffix K, M or G)";
  if (digits.empty() || digits[0] == '-' || digits[0] == '+' || end == s || *end != '\0' ||
      errno != 0)
    bad(name, value, range);
  if (v > max / mult || v * mult < min || v * mult > max) bad(name, value, range);
  return static_cast<size_t>(v * mult);
}

std::chrono::milliseconds timeout() {
  const std::string v = raw("TANDEM_TIMEOUT");
  return v.empty() ? std::chrono::milliseconds(300000) : parse_seconds("TANDEM_TIMEOUT", v);
}

size_t shm_chunk_bytes() {
  const std::string v = raw("TANDEM_SHM_CHUNK_BYTES");
  return v.empty() ? size_t{256} << 10
                   : parse_bytes("TANDEM_SHM_CHUNK_BYTES", v, 4096, size_t{64} << 20);
}

size_t shm_arena_bytes() {
  const std::string v = raw("TANDEM_SHM_ARENA_BYTES");
  return v.empty() ? size_t{64} << 20
                   : parse_bytes("TANDEM_SHM_ARENA_BYTES", v, 0, size_t{64} << 30);
}

int shm_spin_us() {
  const std::string v = raw("TANDEM_SHM_SPIN_US");
  return v.empty() ? 20 : static_cast<int>(parse_int("TANDEM_SHM_SPIN_US", v, 0, 1000000));
}

}  // namespace settings
}  // namespace tandem
