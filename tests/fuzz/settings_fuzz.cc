// The settings readers (common/settings.h) on what a user or a launcher put
// in the environment: the first byte picks a declared variable (and whether
// it is set under its Horovod name), the rest is its value. Each reader
// answers a value within the declaration's bounds or an Error naming the
// variable; never a crash, nor a value outside the bounds.
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/errors.h"
#include "common/settings.h"
#include "fuzz_target.h"

using namespace tandem;

namespace {

void read_as_declared(const SettingDecl& d) {
  switch (d.type) {
    case SettingType::kBool: (void)env_bool(d.name); break;
    case SettingType::kInt:
    case SettingType::kBytes: {
      if (auto v = env_int_if_set(d.name))
        if (*v < d.min || *v > d.max) fuzz_fail("an integer setting outside its bounds was read");
      break;
    }
    case SettingType::kNumber:
    case SettingType::kSeconds: {
      const double v = env_double(d.name);
      if (!(v >= d.min && v <= d.max)) fuzz_fail("a number setting outside its bounds was read");
      if (d.type == SettingType::kSeconds) (void)env_milliseconds(d.name);
      break;
    }
    case SettingType::kString:
    case SettingType::kEnum:
    case SettingType::kList: (void)env_string(d.name); break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  constexpr size_t kCount = sizeof(kSettings) / sizeof(kSettings[0]);
  const SettingDecl& d = kSettings[(data[0] >> 1) % kCount];
  const bool horovod = (data[0] & 1) && d.horovod_name;
  const char* name = horovod ? d.horovod_name : d.name;
  // An environment value ends at its first NUL, as it does in a real one.
  const std::string value(reinterpret_cast<const char*>(data + 1),
                          strnlen(reinterpret_cast<const char*>(data + 1), size - 1));
  setenv(name, value.c_str(), 1);
  try {
    read_as_declared(d);
  } catch (const Error&) {
    // The one message naming the variable, its value and what was expected.
  }
  if (!value.empty()) {
    try {
      (void)parse_int_setting(name, value.c_str(), -1000000, 1000000);
    } catch (const Error&) {}
    try {
      (void)parse_double_setting(name, value.c_str(), 0, 1e9);
    } catch (const Error&) {}
    try {
      (void)parse_bool_setting(name, value.c_str());
    } catch (const Error&) {}
  }
  unsetenv(name);
  return 0;
}
