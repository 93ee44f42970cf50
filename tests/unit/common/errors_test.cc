// The one error table (engine/common/errors.h): one row per result code, in
// code order; each C++ type maps to its code and back; which failures
// outlast the call that met them.
#include "common/errors.h"

#include <gtest/gtest.h>

#include <new>
#include <set>
#include <string>

namespace tandem {
namespace {

TEST(ErrorTable, OneRowPerCodeInOrderWithUniqueNames) {
  std::set<std::string> names, classes;
  for (int c = 0; c < TANDEM_RESULT_COUNT_; ++c) {
    const ErrorKind* k = find_error_kind(c);
    ASSERT_NE(k, nullptr) << c;
    EXPECT_EQ(k->code, c);
    EXPECT_TRUE(names.insert(k->name).second) << k->name;
    if (c == TANDEM_SUCCESS) {
      EXPECT_EQ(k->class_name, nullptr);
      continue;
    }
    ASSERT_NE(k->class_name, nullptr) << k->name;
    EXPECT_TRUE(classes.insert(k->class_name).second) << k->class_name;
    EXPECT_NE(std::string(k->description), "");
  }
  EXPECT_EQ(find_error_kind(-1), nullptr);
  EXPECT_EQ(find_error_kind(TANDEM_RESULT_COUNT_), nullptr);
  EXPECT_STREQ(error_kind(TANDEM_ERR_TIMEOUT).name, "TANDEM_ERR_TIMEOUT");
  EXPECT_STREQ(error_kind(TANDEM_ERR_TIMEOUT).class_name, "TimeoutError");
  EXPECT_STREQ(error_kind(TANDEM_ERR_INVALID_ARGUMENT).class_name, "InvalidArgumentError");
}

// Every code with a C++ type: throw_error gives that type, code_of gives the
// code back, the message travels unchanged.
TEST(ErrorTable, EveryTypeMapsToItsCodeAndBack) {
  int typed = 0;
  for (int c = 1; c < TANDEM_RESULT_COUNT_; ++c) {
    const ErrorKind& k = error_kind(static_cast<tandem_result_t>(c));
    if (!k.matches) continue;
    ++typed;
    try {
      throw_error(k.code, "message " + std::to_string(c));
    } catch (const std::exception& e) {
      EXPECT_TRUE(k.matches(e)) << k.name;
      EXPECT_EQ(code_of(e), k.code) << k.name;
      EXPECT_EQ(std::string(e.what()), "message " + std::to_string(c));
    }
  }
  EXPECT_EQ(typed, TANDEM_RESULT_COUNT_ - 3);  // all but success, in progress, internal
  EXPECT_EQ(code_of(SystemError("shm_open /x", ENOSPC)), TANDEM_ERR_SYSTEM);
  EXPECT_EQ(code_of(std::bad_alloc()), TANDEM_ERR_SYSTEM);
  EXPECT_EQ(code_of(Error("a bug")), TANDEM_ERR_INTERNAL);
  EXPECT_EQ(code_of(std::logic_error("a bug")), TANDEM_ERR_INTERNAL);
}

TEST(ErrorTable, ArgumentErrorsAreThoseOfTheCall) {
  std::set<int> argument, lasting;
  for (int c = 0; c < TANDEM_RESULT_COUNT_; ++c) {
    if (error_kind(static_cast<tandem_result_t>(c)).argument_error) argument.insert(c);
    if (error_kind(static_cast<tandem_result_t>(c)).lasting) lasting.insert(c);
  }
  EXPECT_EQ(argument, (std::set<int>{TANDEM_ERR_INVALID_ARGUMENT, TANDEM_ERR_DUPLICATE_NAME}));
  EXPECT_EQ(lasting, (std::set<int>{TANDEM_ERR_PEER_LOST, TANDEM_ERR_TIMEOUT, TANDEM_ERR_ABORTED}));
}

// After a failure: a lost peer or a timeout stays what it was; a mismatch
// or a bad argument (of the call that failed) becomes ABORTED for the calls
// after it, with the first failure's message.
TEST(ErrorTable, WhatLaterCallsFailWith) {
  auto after = [](tandem_result_t code) {
    try {
      throw_after_failure(code, "first failure");
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()), "first failure");
      return code_of(e);
    }
    return TANDEM_SUCCESS;
  };
  EXPECT_EQ(after(TANDEM_ERR_PEER_LOST), TANDEM_ERR_PEER_LOST);
  EXPECT_EQ(after(TANDEM_ERR_TIMEOUT), TANDEM_ERR_TIMEOUT);
  EXPECT_EQ(after(TANDEM_ERR_MISMATCH), TANDEM_ERR_ABORTED);
  EXPECT_EQ(after(TANDEM_ERR_INVALID_ARGUMENT), TANDEM_ERR_ABORTED);
  EXPECT_EQ(after(TANDEM_ERR_SYSTEM), TANDEM_ERR_ABORTED);
  EXPECT_EQ(after(TANDEM_ERR_INTERNAL), TANDEM_ERR_ABORTED);
}

}  // namespace
}  // namespace tandem
