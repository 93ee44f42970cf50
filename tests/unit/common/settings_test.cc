// The one settings table (common/settings_table.h) and its reader
// (common/settings.h): every declaration is well formed, and a variable is
// read only through its declaration, with its one default and bounds.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>

#include "bootstrap/env.h"
#include "common/errors.h"
#include "common/settings.h"
#include "common/settings_table.h"
#include "elastic/service.h"
#include "env_guard.h"

namespace tandem {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> words(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string w; std::getline(in, w, ',');) out.push_back(w);
  return out;
}

bool numeric(SettingType t) {
  return t == SettingType::kInt || t == SettingType::kBytes || t == SettingType::kNumber ||
         t == SettingType::kSeconds;
}

bool prefixed(const std::string& name) {
  return name.rfind("TANDEM_", 0) == 0 || name.rfind("HOROVOD_", 0) == 0;
}

// What makes one declaration wrong, or "" when it is well formed.
std::string fault_of(const SettingDecl& d) {
  const std::string name = d.name ? d.name : "";
  if (!prefixed(name)) return "its name is not TANDEM_* or HOROVOD_*";
  if (d.horovod_name && std::string(d.horovod_name).rfind("HOROVOD_", 0) != 0)
    return "its Horovod name is not HOROVOD_*";
  if (d.doc == nullptr || *d.doc == '\0') return "it has no doc line";
  if (std::string(d.doc).find('\n') != std::string::npos) return "its doc is not one line";
  const bool has_choices = d.choices && *d.choices;
  const bool wants_choices = d.type == SettingType::kEnum || d.type == SettingType::kList;
  if (has_choices != wants_choices) return "choices are given exactly for enums and lists";
  if (numeric(d.type) ? d.min > d.max : (d.min != 0 || d.max != 0))
    return "bounds are given exactly for numbers, min <= max";
  const std::string def = d.default_text;
  if (def.empty()) return "";
  try {
    switch (d.type) {
      case SettingType::kInt:
      case SettingType::kBytes:
        parse_int_setting(d.name, d.default_text, static_cast<int64_t>(d.min),
                          static_cast<int64_t>(d.max));
        break;
      case SettingType::kNumber:
      case SettingType::kSeconds: parse_double_setting(d.name, d.default_text, d.min, d.max); break;
      case SettingType::kBool: parse_bool_setting(d.name, d.default_text); break;
      case SettingType::kEnum: {
        const auto c = words(d.choices);
        if (std::find(c.begin(), c.end(), def) == c.end()) return "its default is not a choice";
        break;
      }
      case SettingType::kList: {
        const auto c = words(d.choices);
        for (const std::string& w : words(def))
          if (std::find(c.begin(), c.end(), w) == c.end()) return "its default is not a choice";
        break;
      }
      case SettingType::kString: break;
    }
  } catch (const InvalidArgument& e) {
    return std::string("its default is out of its type or bounds: ") + e.what();
  }
  return "";
}

TEST(SettingsTable, EveryDeclarationIsWellFormed) {
  std::set<std::string> names;
  for (const SettingDecl& d : kSettings) {
    EXPECT_EQ(fault_of(d), "") << d.name;
    EXPECT_TRUE(names.insert(d.name).second) << d.name << " is declared twice";
    if (d.horovod_name) { EXPECT_TRUE(names.insert(d.horovod_name).second) << d.horovod_name; }
  }
  for (const EnvironmentFact& f : kEnvironmentFacts) {
    EXPECT_FALSE(prefixed(f.name)) << f.name << ": a TANDEM_/HOROVOD_ variable is a setting";
    EXPECT_TRUE(f.reason && *f.reason) << f.name << " has no reason";
    EXPECT_TRUE(names.insert(f.name).second) << f.name << " is listed twice";
  }
}

// The check above can fail: each kind of fault is caught.
TEST(SettingsTable, MalformedDeclarationsAreCaught) {
  const SettingDecl good{"TANDEM_X", nullptr, SettingType::kInt, "5", 0, 10, "", "a doc"};
  EXPECT_EQ(fault_of(good), "");
  auto with = [&](auto change) {
    SettingDecl d = good;
    change(d);
    return fault_of(d);
  };
  EXPECT_THAT(with([](SettingDecl& d) { d.default_text = "11"; }), HasSubstr("bounds"));
  EXPECT_THAT(with([](SettingDecl& d) { d.doc = ""; }), HasSubstr("doc"));
  EXPECT_THAT(with([](SettingDecl& d) { d.name = "X"; }), HasSubstr("name"));
  EXPECT_THAT(with([](SettingDecl& d) { d.min = 20; }), HasSubstr("min <= max"));
  EXPECT_THAT(with([](SettingDecl& d) {
                d.type = SettingType::kEnum;
                d.min = d.max = 0;
                d.choices = "a,b";
              }),
              HasSubstr("not a choice"));
}

TEST(SettingsReader, AnUndeclaredNameIsABug) {
  const char* name = "TANDEM_NOT_DECLARED_ANYWHERE";
  EnvGuard g(name, "1");
  EXPECT_THROW(env_int(name), Error);
  EXPECT_THROW(env_int_if_set(name), Error);
  EXPECT_THROW(env_double(name), Error);
  EXPECT_THROW(env_milliseconds(name), Error);
  EXPECT_THROW(env_bool(name), Error);
  EXPECT_THROW(env_string(name), Error);
  EXPECT_THROW(env_value(name), Error);
  EXPECT_THROW(declared_getenv(name), Error);
  EXPECT_THROW(environment_fact("SLURM_NOT_LISTED_ANYWHERE"), Error);
  EXPECT_THROW(env::get(name), Error);
  try {
    env_int(name);
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("not declared in common/settings_table.h"));
  }
}

TEST(SettingsReader, AVariableIsReadAsItsDeclaredType) {
  EXPECT_THROW(env_string("TANDEM_SHM_CMA"), Error);
  EXPECT_THROW(env_int("TANDEM_TIMEOUT"), Error);
  EXPECT_THROW(env_bool("TANDEM_TCP_CONNECT"), Error);
  // No default: only env_int_if_set may read it.
  EXPECT_THROW(env_int("TANDEM_ELASTIC_ORDER"), Error);
}

TEST(SettingsReader, UnsetOrEmptyMeansTheDeclaredDefault) {
  ::unsetenv("TANDEM_SHM_CMA");
  EXPECT_EQ(env_int("TANDEM_SHM_CMA"), 1);
  EnvGuard g("TANDEM_SHM_CMA", "");
  EXPECT_EQ(env_int("TANDEM_SHM_CMA"), 1);
  ::unsetenv("TANDEM_TCP_CONNECT");
  EXPECT_EQ(env_string("TANDEM_TCP_CONNECT"), "planned");
  ::unsetenv("TANDEM_ELASTIC_ORDER");
  EXPECT_EQ(env_int_if_set("TANDEM_ELASTIC_ORDER"), std::nullopt);
}

TEST(SettingsReader, IntegersAreParsedStrictlyWithinTheDeclaredBounds) {
  EnvGuard g("TANDEM_SHM_CMA", "2");
  EXPECT_EQ(env_int("TANDEM_SHM_CMA"), 2);
  for (const char* bad : {"2x", "x", " 2", "3", "-1", "99999999999999999999999", "0x1"}) {
    ::setenv("TANDEM_SHM_CMA", bad, 1);
    try {
      env_int("TANDEM_SHM_CMA");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("TANDEM_SHM_CMA='") + bad + "'"));
      EXPECT_THAT(e.what(), HasSubstr("between 0 and 2"));
    }
  }
}

// TANDEM_BOOTSTRAP_TIMEOUT has one declaration: the bootstrap and the
// elastic service read the same default and the same bounds.
TEST(SettingsReader, BootstrapTimeoutIsOneSetting) {
  ::unsetenv("TANDEM_BOOTSTRAP_TIMEOUT");
  EXPECT_EQ(bootstrap_timeout(), std::chrono::milliseconds(60000));
  EXPECT_EQ(elastic::ServiceSettings::from_environment().join_timeout,
            std::chrono::milliseconds(60000));
  EnvGuard g("TANDEM_BOOTSTRAP_TIMEOUT", "2.5");
  EXPECT_EQ(bootstrap_timeout(), std::chrono::milliseconds(2500));
  EXPECT_EQ(elastic::ServiceSettings::from_environment().join_timeout,
            std::chrono::milliseconds(2500));
  for (const char* bad : {"0", "0.0001", "86401", "5m"}) {
    ::setenv("TANDEM_BOOTSTRAP_TIMEOUT", bad, 1);
    EXPECT_THROW(bootstrap_timeout(), BootstrapError) << bad;
    EXPECT_THROW(elastic::ServiceSettings::from_environment(), InvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace tandem
