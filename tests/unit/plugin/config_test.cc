#include "config.h"

#include <gtest/gtest.h>

#include "plugin_error.h"
#include "tandem_config.h"

namespace tandem::plugin {
namespace {

std::string error_of(const std::vector<std::string>& args) {
  try {
    parse_config(args);
  } catch (const PluginError& e) { return e.what(); }
  return "no error";
}

TEST(Config, DefaultsComeFromTheBuild) {
  const Config c = parse_config({});
  EXPECT_EQ(c.engine_path, TANDEM_DEFAULT_ENGINE_PATH);
  EXPECT_EQ(c.python_path, TANDEM_DEFAULT_PYTHON_PATH);
  EXPECT_EQ(c.default_mode, Mode::kOff);
  EXPECT_EQ(c.topology_xml, "");
  EXPECT_EQ(c.binding, "auto");
}

TEST(Config, EveryKeyIsApplied) {
  const Config c = parse_config({"engine=/opt/t/libtandem.so", "python=", "default=verbose",
                                 "topology=/x/topo.xml", "binding=none"});
  EXPECT_EQ(c.engine_path, "/opt/t/libtandem.so");
  EXPECT_EQ(c.python_path, "");
  EXPECT_EQ(c.default_mode, Mode::kVerbose);
  EXPECT_EQ(c.topology_xml, "/x/topo.xml");
  EXPECT_EQ(c.binding, "none");
}

TEST(Config, LaterArgumentWins) {
  EXPECT_EQ(parse_config({"default=on", "default=off"}).default_mode, Mode::kOff);
}

TEST(Config, UnknownKeyIsNamed) {
  const std::string e = error_of({"engine=/a.so", "colour=blue"});
  EXPECT_NE(e.find("unknown key 'colour'"), std::string::npos) << e;
  EXPECT_NE(e.find("engine, python, default, topology, binding"), std::string::npos) << e;
}

TEST(Config, BadValuesAreNamed) {
  EXPECT_NE(error_of({"default=yes"}).find("'default'"), std::string::npos);
  EXPECT_NE(error_of({"default=yes"}).find("found 'yes'"), std::string::npos);
  EXPECT_NE(error_of({"engine=relative.so"}).find("absolute path"), std::string::npos);
  EXPECT_NE(error_of({"engine="}).find("empty"), std::string::npos);
  EXPECT_NE(error_of({"binding=fast"}).find("auto, none"), std::string::npos);
  EXPECT_NE(error_of({"engine"}).find("not key=value"), std::string::npos);
}

TEST(Mode, ParsesExactlyFourValues) {
  EXPECT_EQ(parse_mode("on"), Mode::kOn);
  EXPECT_EQ(parse_mode("off"), Mode::kOff);
  EXPECT_EQ(parse_mode("verbose"), Mode::kVerbose);
  EXPECT_EQ(parse_mode("elastic"), Mode::kElastic);
  EXPECT_TRUE(mode_enabled(Mode::kElastic));
  EXPECT_TRUE(mode_elastic(Mode::kElastic));
  EXPECT_FALSE(mode_elastic(Mode::kOn));
  EXPECT_FALSE(parse_mode("Elastic"));
  EXPECT_FALSE(parse_mode("ON"));
  EXPECT_FALSE(parse_mode(""));
  EXPECT_FALSE(parse_mode("1"));
}

}  // namespace
}  // namespace tandem::plugin
