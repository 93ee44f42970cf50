// The one log (engine/common/log.h): parsing of TANDEM_LOG,
// TANDEM_LOG_SUBSYS and HOROVOD_LOG_LEVEL, what each configuration prints,
// the line format, and that a disabled message costs no argument evaluation.
#include "common/log.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <mutex>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/settings.h"

namespace tandem::log {
namespace {

// Captures what the log would print, restoring stderr and the defaults after.
class Capture {
 public:
  Capture() {
    set_sink([this](const Record& r) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(format(r));
    });
  }
  ~Capture() {
    set_sink(nullptr);
    configure(Config{});
    clear_identity();
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) { return e.what(); }
  return "(accepted)";
}

TEST(LogConfig, LevelsByNameAnyCaseAndHorovodSpellings) {
  EXPECT_EQ(parse_level("TANDEM_LOG", "error"), Level::kError);
  EXPECT_EQ(parse_level("TANDEM_LOG", "warn"), Level::kWarn);
  EXPECT_EQ(parse_level("TANDEM_LOG", "INFO"), Level::kInfo);
  EXPECT_EQ(parse_level("TANDEM_LOG", "Debug"), Level::kDebug);
  EXPECT_EQ(parse_level("TANDEM_LOG", "trace"), Level::kTrace);
  EXPECT_EQ(parse_level("HOROVOD_LOG_LEVEL", "warning"), Level::kWarn);
  EXPECT_EQ(parse_level("HOROVOD_LOG_LEVEL", "fatal"), Level::kError);
}

TEST(LogConfig, DefaultIsWarningsAndErrorsOfEverySubsystem) {
  const Config c = parse_config(nullptr, nullptr, nullptr);
  EXPECT_EQ(c.level, Level::kWarn);
  EXPECT_EQ(c.subsystems, kAllSubsystems);
  EXPECT_EQ(parse_config("", "", ""), c);  // empty is unset, as for every setting
}

TEST(LogConfig, BadLevelIsOneErrorNamingTheVariableAndValue) {
  EXPECT_EQ(message_of([] { parse_config("loud", nullptr, nullptr); }),
            "TANDEM_LOG='loud': expected one of error, warn, info, debug, trace; fix or unset "
            "the variable");
  EXPECT_NE(message_of([] {
              parse_config(nullptr, nullptr, "chatty");
            }).find("HOROVOD_LOG_LEVEL='chatty': expected one of"),
            std::string::npos);
  EXPECT_NE(message_of([] { parse_config("info ", nullptr, nullptr); }).find("TANDEM_LOG='info '"),
            std::string::npos);
}

TEST(LogConfig, SubsystemListsExclusionAndAll) {
  auto bit = [](Subsys s) { return 1u << static_cast<int>(s); };
  EXPECT_EQ(parse_subsystems("TANDEM_LOG_SUBSYS", "tcp"), bit(Subsys::tcp));
  EXPECT_EQ(parse_subsystems("TANDEM_LOG_SUBSYS", "TCP,bootstrap"),
            bit(Subsys::tcp) | bit(Subsys::bootstrap));
  EXPECT_EQ(parse_subsystems("TANDEM_LOG_SUBSYS", "all"), kAllSubsystems);
  EXPECT_EQ(parse_subsystems("TANDEM_LOG_SUBSYS", "^shm,tcp"),
            kAllSubsystems & ~(bit(Subsys::shm) | bit(Subsys::tcp)));
  for (int i = 0; i < kSubsystems; ++i) {
    const auto s = static_cast<Subsys>(i);
    EXPECT_EQ(parse_subsystems("TANDEM_LOG_SUBSYS", subsystem_name(s)), bit(s)) << i;
  }
}

TEST(LogConfig, BadSubsystemIsOneErrorNamingTheVariableValueAndChoices) {
  for (const char* bad : {"tpc", "tcp,", ",tcp", "tcp,,shm", "^", "net"}) {
    const std::string m = message_of([&] { parse_config(nullptr, bad, nullptr); });
    EXPECT_EQ(
        m.find(
            std::string("TANDEM_LOG_SUBSYS='") + bad +
            "': expected a comma-separated "
            "list of bootstrap, elastic, shm, tcp, coll, runtime, gpu, api, plugin, tools, python"),
        0u)
        << m;
  }
}

TEST(LogConfig, HorovodNameIsHonouredAndMayNotDisagree) {
  EXPECT_EQ(parse_config(nullptr, nullptr, "DEBUG").level, Level::kDebug);
  EXPECT_EQ(parse_config("debug", nullptr, "debug").level, Level::kDebug);
  EXPECT_EQ(parse_config("warn", nullptr, "warning").level, Level::kWarn);
  EXPECT_EQ(message_of([] { parse_config("info", nullptr, "debug"); }),
            "TANDEM_LOG='info' and HOROVOD_LOG_LEVEL='debug' disagree; set only one of them");
}

TEST(LogConfig, FromTheEnvironment) {
  setenv("TANDEM_LOG", "trace", 1);
  setenv("TANDEM_LOG_SUBSYS", "runtime", 1);
  const Config c = config_from_environment();
  setenv("TANDEM_LOG", "nope", 1);
  EXPECT_NE(message_of([] { configure_from_environment(); }).find("TANDEM_LOG='nope'"),
            std::string::npos);
  unsetenv("TANDEM_LOG");
  unsetenv("TANDEM_LOG_SUBSYS");
  EXPECT_EQ(c.level, Level::kTrace);
  EXPECT_EQ(c.subsystems, 1u << static_cast<int>(Subsys::runtime));
}

TEST(Log, SubsystemFilterAppliesBelowWarningsOnly) {
  Capture capture;
  Config c;
  c.level = Level::kDebug;
  c.subsystems = parse_subsystems("TANDEM_LOG_SUBSYS", "tcp");
  configure(c);
  TANDEM_DEBUG(tcp, "tcp %d", 1);
  TANDEM_INFO(tcp, "tcp %d", 2);
  TANDEM_TRACE(tcp, "tcp %d", 3);  // above the level
  TANDEM_DEBUG(shm, "shm %d", 4);  // another subsystem
  TANDEM_INFO(bootstrap, "bootstrap %d", 5);
  TANDEM_WARN(shm, "shm warns %d", 6);  // warnings and errors pass the filter
  TANDEM_ERROR(runtime, "runtime fails %d", 7);
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("DEBUG tcp: tcp 1"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("INFO tcp: tcp 2"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("WARN shm log_test.cc:"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(": shm warns 6"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("ERROR runtime: runtime fails 7"), std::string::npos) << lines[3];
}

TEST(Log, QuietByDefaultAndErrorLevelHidesWarnings) {
  Capture capture;
  configure(Config{});
  TANDEM_INFO(api, "info");
  TANDEM_WARN(api, "warn");
  configure(parse_config("error", nullptr, nullptr));
  TANDEM_WARN(api, "hidden");
  TANDEM_ERROR(api, "shown");
  TANDEM_LOG_ALWAYS(kWarn, tcp, "always");  // security events and requested reports
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find(": warn"), std::string::npos);
  EXPECT_NE(lines[1].find(": shown"), std::string::npos);
  EXPECT_NE(lines[2].find(": always"), std::string::npos);
}

TEST(Log, DisabledMessagesEvaluateNoArgument) {
  Capture capture;
  configure(Config{});
  int evaluated = 0;
  auto expensive = [&] { return ++evaluated; };
  TANDEM_DEBUG(tcp, "%d", expensive());
  TANDEM_TRACE(runtime, "%d", expensive());
  EXPECT_EQ(evaluated, 0);
  TANDEM_WARN(tcp, "%d", expensive());
  EXPECT_EQ(evaluated, 1);
}

TEST(Log, PrefixNamesProgramRankAndNode) {
  Capture capture;
  configure(parse_config("info", nullptr, nullptr));
  TANDEM_INFO(bootstrap, "before");
  set_identity(3, "node2");
  TANDEM_INFO(bootstrap, "after");
  set_program("tandem-run");
  clear_identity();
  TANDEM_INFO(tools, "tool");
  set_program("tandem");
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].rfind("tandem[pid ", 0), 0u) << lines[0];
  EXPECT_EQ(lines[1], "tandem[r3 node2] INFO bootstrap: after");
  EXPECT_EQ(lines[2], "tandem-run INFO tools: tool");
}

TEST(Log, LongMessagesArriveWhole) {
  Capture capture;
  configure(Config{});
  const std::string big(5000, 'x');
  TANDEM_WARN(coll, "%s|", big.c_str());
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find(big + "|"), std::string::npos);
}

// Before anything configures the log (a unit test, a program that has not
// called tandem_init), the first message reads the environment; a bad value
// is then reported once and the defaults kept.
TEST(Log, FirstMessageConfiguresFromTheEnvironment) {
  Capture capture;
  detail::unconfigure_for_tests();
  setenv("TANDEM_LOG", "debug", 1);
  setenv("TANDEM_LOG_SUBSYS", "tcp", 1);
  TANDEM_DEBUG(tcp, "seen");
  TANDEM_DEBUG(shm, "unseen");
  detail::unconfigure_for_tests();
  setenv("TANDEM_LOG", "loud", 1);
  TANDEM_INFO(tcp, "unseen");
  TANDEM_WARN(tcp, "warned");
  unsetenv("TANDEM_LOG");
  unsetenv("TANDEM_LOG_SUBSYS");
  const auto lines = capture.lines();
  ASSERT_EQ(lines.size(), 3u) << ::testing::PrintToString(lines);
  EXPECT_NE(lines[0].find("DEBUG tcp: seen"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("ERROR api: TANDEM_LOG='loud': expected one of error, warn, info, "
                          "debug, trace; fix or unset the variable (logging warnings and errors)"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find("WARN tcp log_test.cc:"), std::string::npos) << lines[2];
}

TEST(SettingsNotes, ReadersNoteWhatDiffersFromTheDefault) {
  setenv("TANDEM_SHM_CMA", "2", 1);
  setenv("TANDEM_SHM_SPIN_US", "50", 1);
  setenv("TANDEM_TCP_CONNECT", "all", 1);
  EXPECT_EQ(env_int("TANDEM_SHM_CMA"), 2);
  EXPECT_EQ(env_int("TANDEM_SHM_SPIN_US"), 50);  // set, but to the default
  EXPECT_EQ(env_string("TANDEM_TCP_CONNECT"), "all");
  EXPECT_EQ(env_int("TANDEM_SHM_CMA"), 2);  // noted once
  unsetenv("TANDEM_SHM_CMA");
  unsetenv("TANDEM_SHM_SPIN_US");
  unsetenv("TANDEM_TCP_CONNECT");
  const auto notes = settings_differing_from_defaults();
  EXPECT_EQ(notes, (std::vector<std::string>{"TANDEM_SHM_CMA=2 (default 1)",
                                             "TANDEM_TCP_CONNECT=all (default planned)"}));
}

}  // namespace
}  // namespace tandem::log
