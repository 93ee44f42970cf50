#include "bootstrap/tcp_store_client.h"

#include "bootstrap/store_protocol.h"
#include "common/errors.h"

namespace tandem {

namespace {
// How long past a request's own deadline the store may take to answer before
// it counts as hung: covers scheduling noise on an oversubscribed host.
constexpr auto kStoreGrace = std::chrono::seconds(5);
}  // namespace

TcpStoreClient::TcpStoreClient(const HostPort& addr, const std::string& token, int rank, int size,
                               Deadline deadline)
    : addr_(addr), name_("the rendezvous store at " + addr.str()) {
  fd_ = connect_until(addr, deadline);
  store::Writer w(static_cast<uint8_t>(store::Op::kHello));
  w.str(token).u32(static_cast<uint32_t>(rank)).u32(static_cast<uint32_t>(size));
  send_frame(w.frame(), deadline);
  Bytes reply = recv_frame(deadline);
  store::Reader r(reply.data(), reply.size());
  auto code = static_cast<store::Reply>(r.u8());
  if (code == store::Reply::kRejected) {
    std::string why = r.str();
    std::string hint = why == "wrong job token"
                           ? ": TANDEM_RENDEZVOUS_TOKEN must be the same secret on every rank of "
                             "the job (tandem-run sets it)"
                           : "";
    throw BootstrapError(name_ + " refused rank " + std::to_string(rank) + ": " + why + hint);
  }
  if (code != store::Reply::kOk) store_lost("unexpected answer to HELLO");
  session_ = r.u32();
  if (!r.done()) store_lost("malformed answer to HELLO");
}

TcpStoreClient::~TcpStoreClient() {
  if (!fd_) return;
  store::Writer w(static_cast<uint8_t>(store::Op::kBye));
  try {
    send_frame(w.frame(), Clock::now() + std::chrono::seconds(1));
  } catch (const Error&) {
    // The store is already gone: nothing to say goodbye to.
  }
}

void TcpStoreClient::store_lost(const std::string& why) {
  fd_.reset();
  throw BootstrapError(name_ + " is gone (" + why +
                       "): the process hosting it (tandem-run or rank 0) exited or was killed");
}

void TcpStoreClient::send_frame(const Bytes& frame, Deadline deadline) {
  if (!fd_) store_lost("connection closed after an earlier error");
  try {
    if (!send_all(fd_.get(), frame.data(), frame.size(), deadline + kStoreGrace, name_))
      store_lost("it stopped reading requests");
  } catch (const PeerLostError& e) { store_lost(e.what()); }
}

Bytes TcpStoreClient::recv_frame(Deadline deadline) {
  if (!fd_) store_lost("connection closed after an earlier error");
  try {
    uint8_t len_buf[4];
    if (!recv_all(fd_.get(), len_buf, 4, deadline + kStoreGrace, name_))
      store_lost("it did not answer within the deadline plus " +
                 std::to_string(kStoreGrace.count()) + " s");
    uint32_t len = store::frame_length(len_buf);
    if (len == 0 || len > store::kMaxFrame) store_lost("it sent a bad frame length");
    Bytes body(len);
    if (!recv_all(fd_.get(), body.data(), len, deadline + kStoreGrace, name_))
      store_lost("it stopped in the middle of an answer");
    return body;
  } catch (const PeerLostError& e) { store_lost(e.what()); }
}

void TcpStoreClient::set(const std::string& key, const Bytes& value, Deadline deadline) {
  store::Writer w(static_cast<uint8_t>(store::Op::kSet));
  w.str(key).bytes(value.data(), value.size());
  send_frame(w.frame(), deadline);
  Bytes reply = recv_frame(deadline);
  if (reply.empty() || static_cast<store::Reply>(reply[0]) != store::Reply::kOk)
    store_lost("unexpected answer to SET");
}

bool TcpStoreClient::ask(store::Writer& request, store::Reply found, const char* what,
                         Deadline deadline, Bytes* reply) {
  send_frame(request.frame(), deadline);
  *reply = recv_frame(deadline);
  store::Reader r(reply->data(), reply->size());
  const auto code = static_cast<store::Reply>(r.u8());
  if (code == found) return true;
  if (code == store::Reply::kMissing) return false;
  if (code == store::Reply::kLost) {
    const uint32_t rank = r.u32();
    throw PeerLostError("rank " + std::to_string(rank) + " dropped its connection to " + name_ +
                        " without leaving the job: the process exited or was killed");
  }
  store_lost(std::string("unexpected answer to ") + what);
}

std::optional<Bytes> TcpStoreClient::get(const std::string& key, Deadline deadline) {
  store::Writer w(static_cast<uint8_t>(store::Op::kGet));
  w.str(key).u64(static_cast<uint64_t>(ms_left(deadline)));
  Bytes reply;
  if (!ask(w, store::Reply::kValue, "GET", deadline, &reply)) return std::nullopt;
  store::Reader r(reply.data() + 1, reply.size() - 1);
  Bytes v = r.bytes();
  if (!r.done()) store_lost("malformed VALUE");
  return v;
}

std::optional<std::vector<Bytes>> TcpStoreClient::gather(const std::string& prefix, int count,
                                                         Deadline deadline) {
  store::Writer w(static_cast<uint8_t>(store::Op::kGather));
  w.str(prefix).u32(static_cast<uint32_t>(count)).u64(static_cast<uint64_t>(ms_left(deadline)));
  Bytes reply;
  if (!ask(w, store::Reply::kValues, "GATHER", deadline, &reply)) return std::nullopt;
  store::Reader r(reply.data() + 1, reply.size() - 1);
  if (r.u32() != static_cast<uint32_t>(count)) store_lost("a VALUES answer of another size");
  std::vector<Bytes> values(static_cast<size_t>(count));
  for (auto& v : values) v = r.bytes();
  if (!r.done()) store_lost("malformed VALUES");
  return values;
}

void TcpStoreClient::del(const std::string& key) {
  store::Writer w(static_cast<uint8_t>(store::Op::kDel));
  w.str(key);
  send_frame(w.frame(), Clock::now() + std::chrono::seconds(1));
}

}  // namespace tandem
