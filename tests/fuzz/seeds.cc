// Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
// with the project's own writers: the frames a rank sends the store and the
// elastic service, the store's answers, the transport's endpoint, hello, ack
// and header, real cycle messages and bit rounds, plugstack lines and
// settings. Run after a change of a wire format:
//
//   build/tests/fuzz/fuzz_seeds tests/fuzz/corpus
//
// Crash inputs found by contrib/fuzz.sh are added beside the seeds by hand
// (crash-<what>), and stay.
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/store_protocol.h"
#include "common/settings.h"
#include "elastic/protocol.h"
#include "fuzz_target.h"
#include "runtime/cycle_message.h"
#include "transport/tcp/wire.h"

using namespace tandem;

namespace {

std::string root;

void put(const std::string& target, const std::string& name, const Bytes& bytes) {
  const std::string dir = root + "/" + target;
  mkdir(dir.c_str(), 0755);
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "fuzz_seeds: cannot write %s/%s\n", dir.c_str(), name.c_str());
    std::exit(1);
  }
}
void put(const std::string& target, const std::string& name, const std::string& text) {
  put(target, name, Bytes(text.begin(), text.end()));
}

// Frames one after another, as they travel on one connection.
struct Stream {
  Bytes bytes;
  Stream& operator<<(store::Writer& w) {
    const Bytes& f = w.frame();
    bytes.insert(bytes.end(), f.begin(), f.end());
    return *this;
  }
  Stream& operator<<(store::Writer&& w) { return *this << w; }
};

store::Writer op(store::Op o) { return store::Writer(static_cast<uint8_t>(o)); }
store::Writer reply(store::Reply r) { return store::Writer(static_cast<uint8_t>(r)); }

tcp::SockAddr v4(uint16_t port) {
  tcp::SockAddr a;
  auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.len = sizeof(sockaddr_in);
  a.set_port(port);
  return a;
}
tcp::SockAddr v6(uint16_t port) {
  tcp::SockAddr a;
  auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  in6->sin6_family = AF_INET6;
  in6->sin6_addr = in6addr_loopback;
  in6->sin6_scope_id = 2;
  a.len = sizeof(sockaddr_in6);
  a.set_port(port);
  return a;
}

// What TcpStoreClient sends (tcp_store_client.cc), field for field.
void store_server() {
  const Bytes blob{'e', 'p', 0, 1, 2};
  Stream s;
  s << op(store::Op::kHello).str(kFuzzToken).u32(0).u32(2)
    << op(store::Op::kSet).str("s0/tcp/0").bytes(blob.data(), blob.size())
    << op(store::Op::kGet).str("s0/tcp/0").u64(0)
    << op(store::Op::kSet).str("s0/ag/0").bytes(blob.data(), blob.size())
    << op(store::Op::kGather).str("s0/ag/").u32(1).u64(1000) << op(store::Op::kDel).str("s0/tcp/0")
    << op(store::Op::kBye);
  put("store_server", "session", s.bytes);
  Stream wait;
  wait << op(store::Op::kHello).str(kFuzzToken).u32(1).u32(2)
       << op(store::Op::kGet).str("s0/missing").u64(60000);
  put("store_server", "get-waits", wait.bytes);
  // A second HELLO on a connection that said BYE: refused (a rank rejoins
  // on a new connection).
  Stream again;
  again << op(store::Op::kHello).str(kFuzzToken).u32(0).u32(1) << op(store::Op::kBye)
        << op(store::Op::kHello).str(kFuzzToken).u32(0).u32(1)
        << op(store::Op::kGather).str("s1/ag/").u32(2).u64(0);
  put("store_server", "second-hello", again.bytes);
  Stream wrong;
  wrong << op(store::Op::kHello).str("another-job").u32(0).u32(2);
  put("store_server", "wrong-token", wrong.bytes);
}

// What TcpStoreServer answers (tcp_store_server.cc) to the client the target
// drives: HELLO, then SET, GET, GATHER of two, DEL (no answer), in turn.
void store_client() {
  const Bytes a{'a'}, b{'b', 'b'};
  Stream first;
  first << reply(store::Reply::kOk).u32(0) << reply(store::Reply::kOk)
        << reply(store::Reply::kValue).bytes(a.data(), a.size())
        << reply(store::Reply::kValues).u32(2).bytes(a.data(), a.size()).bytes(b.data(), b.size())
        << reply(store::Reply::kOk) << reply(store::Reply::kMissing)
        << reply(store::Reply::kMissing);
  put("store_client", "answers", first.bytes);
  Stream lost;
  lost << reply(store::Reply::kOk).u32(3) << reply(store::Reply::kOk)
       << reply(store::Reply::kLost).u32(1);
  put("store_client", "lost", lost.bytes);
  Stream refused;
  refused << reply(store::Reply::kRejected).str("wrong job token");
  put("store_client", "refused", refused.bytes);
}

// What ElasticClient sends the service (elastic/client.cc).
void elastic_service() {
  using elastic::Op;
  auto eop = [](Op o) { return store::Writer(static_cast<uint8_t>(o)); };
  const Bytes endpoint = tcp::encode_endpoint(v4(40000));
  const Bytes blob{'x', 'y'};
  Stream s;
  s << eop(Op::kHello).str(kFuzzToken).str("node1").str("node1").u32(4242).u64(0)
    << eop(Op::kJoin).u32(elastic::kNoGeneration).bytes(endpoint.data(), endpoint.size())
    << op(store::Op::kSet).str("g0/tcp/0").bytes(blob.data(), blob.size())
    << op(store::Op::kGet).str("g0/tcp/0").u64(1000) << eop(Op::kPong).u32(1) << eop(Op::kDone);
  put("elastic_service", "generation", s.bytes);
  Stream reach;
  reach << eop(Op::kHello).str(kFuzzToken).str("node2").str("").u32(7).u64(3)
        << eop(Op::kJoin).u32(0).bytes(endpoint.data(), endpoint.size())
        << eop(Op::kReach).u32(0).u32(2).u32(1).u32(2)
        << op(store::Op::kGet).str("g1/missing").u64(0) << op(store::Op::kDel).str("g1/x");
  put("elastic_service", "rejoin-reach", reach.bytes);
  Stream wrong;
  wrong << eop(Op::kHello).str("another-job").str("node1").str("node1").u32(1).u64(0);
  put("elastic_service", "wrong-token", wrong.bytes);
}

void tcp_wire() {
  put("tcp_wire", "endpoint-v4", tcp::encode_endpoint(v4(40000)));
  put("tcp_wire", "endpoint-v6", tcp::encode_endpoint(v6(40001)));
  tcp::Hello h;
  h.world_rank = 3;
  for (size_t i = 0; i < h.secret.size(); ++i) h.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  const auto hello = tcp::encode_hello(h);
  put("tcp_wire", "hello", Bytes(hello.begin(), hello.end()));
  put("tcp_wire", "hello-prefix", Bytes(hello.begin(), hello.begin() + 10));
  const auto ack = tcp::encode_ack(3);
  put("tcp_wire", "ack", Bytes(ack.begin(), ack.end()));
  Bytes header(tcp::kHeaderBytes, 0);
  tcp::encode_length(header.data(), 1u << 20);
  put("tcp_wire", "header", header);
}

void cycle_message() {
  using runtime::CycleMessage;
  CycleMessage m;
  runtime::Request q;
  q.name = "grad/layer1.weight";
  q.shape = {64, 3, 3};
  m.requests.push_back(q);
  q.name = "alltoall/x";
  q.type = runtime::OpType::kAlltoall;
  q.shape = {4, 2};
  q.splits = {1, 1, 2, 0};
  m.requests.push_back(q);
  runtime::set_bit(m.cache_bits, 3);
  runtime::set_bit(m.cache_bits, 70);
  put("cycle_message", "requests", m.serialize());
  CycleMessage w;
  w.joined = true;
  runtime::Wait wait;
  wait.set = 0;
  wait.name = "grad/bias";
  wait.more = 2;
  wait.missing = {1, 3};
  w.waits.push_back(wait);
  runtime::set_bit(w.invalid_bits, 1);
  put("cycle_message", "join-waits", w.serialize());
  CycleMessage bye;
  bye.shutdown = true;
  put("cycle_message", "shutdown", bye.serialize());
  put("cycle_message", "bit-round", runtime::encode_bit_round(m, 80, true));
}

void plugin_options() {
  put("plugin_options", "plugstack",
      "engine=/usr/lib/x86_64-linux-gnu/tandem/libtandem.so.0\npython=/usr/lib/x86_64-linux-gnu/"
      "tandem/python\ndefault=off\nbinding=auto\nvisible=own\nmembind=on\nnics=eth0,ib0");
  put("plugin_options", "srun-line",
      "-N2\n--ntasks-per-node=2\n--horovod=elastic\n--mpi=pmix\n-K0\n"
      "--\npython3\ntrain.py");
  put("plugin_options", "tasks-per-node", "2(x3),1\nverbose");
  put("plugin_options", "service-address", "node1 40123 0123456789abcdef0123456789abcdef\n");
}

void settings() {
  constexpr size_t kCount = sizeof(kSettings) / sizeof(kSettings[0]);
  auto seed = [&](const char* name, bool horovod, const std::string& value) {
    for (size_t i = 0; i < kCount; ++i)
      if (std::strcmp(kSettings[i].name, name) == 0) {
        Bytes b{static_cast<uint8_t>(i * 2 + (horovod ? 1 : 0))};
        b.insert(b.end(), value.begin(), value.end());
        put("settings", std::string(name) + (horovod ? "-horovod" : ""), b);
        return;
      }
    std::fprintf(stderr, "fuzz_seeds: expected %s in the settings table, found no such name\n",
                 name);
    std::exit(1);
  };
  seed("TANDEM_TIMEOUT", false, "30.5");
  seed("TANDEM_LOG", true, "debug");
  seed("TANDEM_BOOTSTRAP_TIMEOUT", false, "0.001");
  seed("TANDEM_LOG_SUBSYS", false, "tcp,shm");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (e.g. tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  root = argv[1];
  mkdir(root.c_str(), 0755);
  store_server();
  store_client();
  elastic_service();
  tcp_wire();
  cycle_message();
  plugin_options();
  settings();
  return 0;
}
