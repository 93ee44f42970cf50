// What a runtime whose background thread failed gives every later call
// (ErrorKind::lasting, common/errors.h): the failure's own error when it is
// a state of the job (a lost peer, a timeout), else TANDEM_ERR_ABORTED with
// the failure's message. The handle that met the failure has its own code.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "cluster.h"
#include "common/errors.h"

namespace tandem::runtime::testing {
namespace {

// A world of one whose allreduce throws what the test gives it.
class FailingDataPath : public DataPath {
 public:
  explicit FailingDataPath(std::function<void()> fail) : fail_(std::move(fail)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<Bytes> exchange(const Bytes& mine) override { return {mine}; }
  void* fusion_buffer(size_t bytes) override {
    buffer_.resize(bytes);
    return buffer_.data();
  }
  void allreduce(void*, size_t, tandem_dtype_t, tandem_op_t, double, double) override { fail_(); }
  void broadcast(void*, size_t, int) override {}
  void allgatherv(const void*, size_t, void*, const std::vector<size_t>&) override {}
  void alltoallv(const void*, const std::vector<size_t>&, void*,
                 const std::vector<size_t>&) override {}
  void reducescatter(const void*, void*, const std::vector<size_t>&, tandem_dtype_t, tandem_op_t,
                     double, double) override {}

 private:
  std::function<void()> fail_;
  std::vector<uint8_t> buffer_;
};

class FailingFactory : public DataPathFactory {
 public:
  explicit FailingFactory(std::function<void()> fail) : fail_(std::move(fail)) {}
  std::unique_ptr<DataPath> create(const std::vector<int>&) override {
    return std::make_unique<FailingDataPath>(fail_);
  }

 private:
  std::function<void()> fail_;
};

struct Outcome {
  tandem_result_t handle;  // the allreduce that met the failure
  tandem_result_t later;   // the next enqueue
  std::string later_message;
};

Outcome fail_with(std::function<void()> fail) {
  Runtime rt(0, 1, std::make_unique<FailingFactory>(std::move(fail)), Cluster::test_settings(),
             [](log::Level, const std::string&) {});
  float x = 1;
  auto h = rt.enqueue({tensor("x", &x, &x, {1})}, allreduce());
  Outcome o{wait(h), TANDEM_SUCCESS, ""};
  try {
    rt.enqueue({tensor("y", &x, &x, {1})}, allreduce());
  } catch (const std::exception& e) {
    o.later = code_of(e);
    o.later_message = e.what();
  }
  return o;
}

TEST(BrokenRuntime, LostPeerAndTimeoutStayWhatTheyWere) {
  Outcome o = fail_with([] { throw PeerLostError("rank 1 was lost"); });
  EXPECT_EQ(o.handle, TANDEM_ERR_PEER_LOST);
  EXPECT_EQ(o.later, TANDEM_ERR_PEER_LOST);
  EXPECT_EQ(o.later_message, "rank 1 was lost");
  o = fail_with([] { throw TimeoutError("rank 1 is silent"); });
  EXPECT_EQ(o.handle, TANDEM_ERR_TIMEOUT);
  EXPECT_EQ(o.later, TANDEM_ERR_TIMEOUT);
}

TEST(BrokenRuntime, MismatchAndBadArgumentAbortLaterCallsWithTheirMessage) {
  Outcome o = fail_with([] { throw MismatchError("sizes differ between ranks"); });
  EXPECT_EQ(o.handle, TANDEM_ERR_MISMATCH);
  EXPECT_EQ(o.later, TANDEM_ERR_ABORTED);
  EXPECT_EQ(o.later_message, "sizes differ between ranks");
  o = fail_with([] { throw InvalidArgument("a bad count"); });
  EXPECT_EQ(o.handle, TANDEM_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(o.later, TANDEM_ERR_ABORTED);
  EXPECT_EQ(o.later_message, "a bad count");
}

TEST(BrokenRuntime, UnknownFailuresAreInternalAndAbortLaterCalls) {
  Outcome o = fail_with([] { throw std::logic_error("a bug"); });
  EXPECT_EQ(o.handle, TANDEM_ERR_INTERNAL);
  EXPECT_EQ(o.later, TANDEM_ERR_ABORTED);
  o = fail_with([] { throw BootstrapError("the set's bootstrap failed"); });
  EXPECT_EQ(o.handle, TANDEM_ERR_BOOTSTRAP);  // was INTERNAL before the one table
  EXPECT_EQ(o.later, TANDEM_ERR_ABORTED);
}

}  // namespace
}  // namespace tandem::runtime::testing
