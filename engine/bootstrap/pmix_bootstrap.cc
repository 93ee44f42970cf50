#include "bootstrap/pmix_bootstrap.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <set>
#include <string>

#include "bootstrap/identity.h"
#include "bootstrap/pmix_api.h"
#include "common/errors.h"
#include "common/settings.h"

namespace tandem {

namespace {

std::string pmix_text(pmix_status_t rc) { return pmix_api().Error_string(rc); }

// What PMIX_PROC_LOAD does, without libpmix: PMIx 5 made the macro a call of
// PMIx_Proc_load, a symbol the engine, which opens libpmix at run time, has
// no link to.
pmix_proc_t proc_of(const char* nspace, pmix_rank_t rank) {
  pmix_proc_t p{};
  std::memcpy(p.nspace, nspace, strnlen(nspace, PMIX_MAX_NSLEN));  // p.nspace stays terminated
  p.rank = rank;
  return p;
}

// PMIX_TIMEOUT counts whole seconds; 0 would mean "wait forever", so a
// sub-second timeout rounds up to 1 s.
int timeout_seconds(std::chrono::milliseconds t) {
  return std::max(1, static_cast<int>(std::ceil(static_cast<double>(t.count()) / 1000.0)));
}

// Turns a failed PMIx call into the engine's error type for it.
[[noreturn]] void throw_pmix(const std::string& what, pmix_status_t rc,
                             std::chrono::milliseconds t) {
  const std::string msg = what + ": " + pmix_text(rc);
  if (rc == PMIX_ERR_TIMEOUT)
    throw TimeoutError(what + " did not complete within " + std::to_string(timeout_seconds(t)) +
                       " s: a rank did not arrive (PMIx does not say which; stopped, crashed, or "
                       "not running this collective)");
  if (rc == PMIX_ERR_LOST_CONNECTION || rc == PMIX_ERR_UNREACH || rc == PMIX_ERR_PROC_ABORTED ||
      rc == PMIX_ERR_PROC_ABORTING)
    throw PeerLostError(msg);
  throw BootstrapError(msg);
}

// PMIX_VALUE_RELEASE, through the opened library.
struct ValueDeleter {
  void operator()(pmix_value_t* v) const {
    pmix_api().Value_destruct(v);
    free(v);
  }
};
using ValuePtr = std::unique_ptr<pmix_value_t, ValueDeleter>;

// The PMIx client session of the process. PMIx_Init runs when the first
// bootstrap needs it; PMIx_Finalize not when the bootstrap goes but when
// the process exits (and no bootstrap is left): a job may leave and join
// again (tandem_finalize, tandem_init) any number of times, and a PMIx
// client that finalized and initialized again is not something every PMIx
// version and server handles (nor needs: the job's namespace and rank do
// not change). PMIx counts Init/Finalize pairs, so another PMIx user in the
// process is not disturbed.
class Session {
 public:
  Session() {
    std::lock_guard<std::mutex> lock(mu());
    State& s = state();
    if (!s.initialized) {
      // A container that does not see slurmd's spool: PMIx_Init would fail
      // after printing its own errors about the missing data store.
      const auto dir = environment_fact("PMIX_SERVER_TMPDIR");
      struct stat st {};
      if (dir && (stat(dir->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)))
        throw PmixInitError("the PMIx server's directory " + *dir +
                            " (PMIX_SERVER_TMPDIR) is not visible here");
      pmix_status_t rc = pmix_api().Init(&s.me, nullptr, 0);
      if (rc != PMIX_SUCCESS)
        throw PmixInitError("PMIx_Init failed: " + pmix_text(rc) +
                            ": no PMIx server answered (start the job with srun --mpi=pmix or "
                            "mpirun; without a PMIx launcher set TANDEM_BOOTSTRAP=tcp or single)");
      s.initialized = true;
      s.pid = getpid();
      std::atexit(finalize_at_exit);
    }
    me_ = s.me;
    generation_ = s.sessions++;
    ++s.live;
  }
  ~Session() {
    std::lock_guard<std::mutex> lock(mu());
    --state().live;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  const pmix_proc_t& me() const { return me_; }
  // How many bootstraps this process made before this one: every rank of
  // the job makes the same sequence, so it numbers the job's sessions.
  uint64_t generation() const { return generation_; }

 private:
  struct State {
    bool initialized = false;
    pmix_proc_t me{};
    uint64_t sessions = 0;
    int live = 0;
    pid_t pid = 0;  // the process that initialized PMIx
  };
  static std::mutex& mu() {
    static auto* m = new std::mutex;
    return *m;
  }
  static State& state() {
    static auto* s = new State;
    return *s;
  }
  // A bootstrap still alive at exit (the program never called
  // tandem_finalize) may have threads inside PMIx: leave it alone then. A
  // forked child that exits must not finalize its parent's PMIx client.
  static void finalize_at_exit() {
    std::lock_guard<std::mutex> lock(mu());
    State& s = state();
    if (s.initialized && s.live == 0 && s.pid == getpid()) {
      pmix_api().Finalize(nullptr, 0);
      s.initialized = false;
    }
  }

  pmix_proc_t me_;
  uint64_t generation_ = 0;
};

// An integer value of any PMIx integer type.
long long as_integer(const pmix_value_t& v, const std::string& key) {
  switch (v.type) {
    case PMIX_UINT8: return v.data.uint8;
    case PMIX_UINT16: return v.data.uint16;
    case PMIX_UINT32: return v.data.uint32;
    case PMIX_UINT64: return static_cast<long long>(v.data.uint64);
    case PMIX_INT: return v.data.integer;
    case PMIX_INT32: return v.data.int32;
    case PMIX_INT64: return v.data.int64;
    case PMIX_SIZE: return static_cast<long long>(v.data.size);
    default:
      throw BootstrapError("PMIx key " + key + " has type " + std::to_string(v.type) +
                           ", expected an integer");
  }
}

class PmixBootstrap : public Bootstrap {
 public:
  explicit PmixBootstrap(std::chrono::milliseconds timeout);
  const Identity& identity() const override { return identity_; }
  std::vector<Bytes> allgather(const Bytes& mine, std::chrono::milliseconds timeout) override;
  void barrier(std::chrono::milliseconds timeout) override;

 private:
  // Reads key for rank (PMIX_RANK_WILDCARD: job-level data). optional: look
  // only in the local cache, nullptr when not there.
  ValuePtr get(pmix_rank_t rank, const char* key, std::chrono::milliseconds timeout, bool optional);
  long long get_int(pmix_rank_t rank, const char* key, std::chrono::milliseconds timeout);
  void fence(bool collect, std::chrono::milliseconds timeout, const std::string& what);
  std::vector<int> node_ids(std::chrono::milliseconds timeout);

  Session session_;
  Identity identity_;
  uint64_t next_op_ = 0;
};

ValuePtr PmixBootstrap::get(pmix_rank_t rank, const char* key, std::chrono::milliseconds timeout,
                            bool optional) {
  const pmix_proc_t proc = proc_of(session_.me().nspace, rank);
  pmix_info_t info[2];
  int secs = timeout_seconds(timeout);
  bool yes = true;
  pmix_api().Info_load(&info[0], PMIX_TIMEOUT, &secs, PMIX_INT);
  pmix_api().Info_load(&info[1], PMIX_OPTIONAL, &yes, PMIX_BOOL);
  pmix_value_t* v = nullptr;
  pmix_status_t rc = pmix_api().Get(&proc, key, info, optional ? 2 : 1, &v);
  if (rc != PMIX_SUCCESS) {
    if (optional) return nullptr;
    throw_pmix("PMIx_Get " + std::string(key) + " of rank " +
                   (rank == PMIX_RANK_WILDCARD ? std::string("*") : std::to_string(rank)),
               rc, timeout);
  }
  return ValuePtr(v);
}

long long PmixBootstrap::get_int(pmix_rank_t rank, const char* key,
                                 std::chrono::milliseconds timeout) {
  return as_integer(*get(rank, key, timeout, false), key);
}

void PmixBootstrap::fence(bool collect, std::chrono::milliseconds timeout,
                          const std::string& what) {
  const pmix_proc_t all = proc_of(session_.me().nspace, PMIX_RANK_WILDCARD);
  pmix_info_t info[2];
  int secs = timeout_seconds(timeout);
  pmix_api().Info_load(&info[0], PMIX_TIMEOUT, &secs, PMIX_INT);
  pmix_api().Info_load(&info[1], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
  pmix_status_t rc = pmix_api().Fence(&all, 1, info, 2);
  if (rc != PMIX_SUCCESS) throw_pmix(what + " (PMIx_Fence)", rc, timeout);
}

// The node id of every rank: from the launcher's job data where it has it
// (srun and mpirun give every peer's PMIX_NODEID locally), else by one
// exchange of each rank's own id.
std::vector<int> PmixBootstrap::node_ids(std::chrono::milliseconds timeout) {
  std::vector<int> ids(identity_.size, -1);
  bool complete = true;
  for (int r = 0; r < identity_.size && complete; ++r) {
    auto v = get(static_cast<pmix_rank_t>(r), PMIX_NODEID, timeout, true);
    if (v) ids[r] = static_cast<int>(as_integer(*v, PMIX_NODEID));
    else complete = false;
  }
  if (complete) return ids;
  std::string mine = std::to_string(get_int(session_.me().rank, PMIX_NODEID, timeout));
  auto all = allgather(Bytes(mine.begin(), mine.end()), timeout);
  for (int r = 0; r < identity_.size; ++r)
    ids[r] = std::stoi(std::string(all[r].begin(), all[r].end()));
  return ids;
}

PmixBootstrap::PmixBootstrap(std::chrono::milliseconds timeout) {
  const pmix_proc_t& me = session_.me();
  identity_.rank = static_cast<int>(me.rank);
  identity_.size = static_cast<int>(get_int(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, timeout));
  std::vector<int> ids = node_ids(timeout);
  std::vector<std::string> keys;
  for (int id : ids) keys.push_back(std::to_string(id));
  std::string job = session_.me().nspace;
  for (char& c : job)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '-';
  if (job.size() > 60) job = job.substr(job.size() - 60);
  Identity id = identity_from_nodes(identity_.rank, keys, "pmix-" + job);
  // Keep the launcher's node numbering (PMIX_NODEID, which is SLURM_NODEID
  // under srun) when it is dense, so that cross_rank matches what the plugin
  // exports as HOROVOD_CROSS_RANK.
  std::set<int> distinct(ids.begin(), ids.end());
  if (*distinct.begin() == 0 && *distinct.rbegin() == static_cast<int>(distinct.size()) - 1) {
    id.node_of_rank = ids;
    id.cross_rank = ids[identity_.rank];
  }
  // PMIx's own local rank and size must agree with the node ids: the shared
  // memory transport relies on both describing the same node.
  const long long local_rank = get_int(me.rank, PMIX_LOCAL_RANK, timeout);
  const long long local_size = get_int(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, timeout);
  if (local_rank != id.local_rank || local_size != id.local_size)
    throw BootstrapError("PMIx gives rank " + std::to_string(id.rank) + " local rank " +
                         std::to_string(local_rank) + " of " + std::to_string(local_size) +
                         " but its PMIX_NODEID of every rank gives " +
                         std::to_string(id.local_rank) + " of " + std::to_string(id.local_size) +
                         ": the launcher's job data is inconsistent");
  identity_ = std::move(id);
}

// Each allgather puts one key "tandem.<g>.ag.<n>" (g: the session, n: the
// operation; the pair never repeats in a process, as PMIx keeps every
// rank's earlier values), fences with data collection, then reads every
// rank's copy. A blob
// travels with a one-byte header so that an empty blob is never an empty
// PMIx byte object (which some PMIx versions refuse).
std::vector<Bytes> PmixBootstrap::allgather(const Bytes& mine, std::chrono::milliseconds timeout) {
  const std::string key =
      "tandem." + std::to_string(session_.generation()) + ".ag." + std::to_string(next_op_++);
  // Sized once and filled: gcc 14 takes reserve() + push_back() for a
  // delete of a pointer past the allocation (-Wfree-nonheap-object).
  Bytes framed(mine.size() + 1);
  framed[0] = 'T';
  std::copy(mine.begin(), mine.end(), framed.begin() + 1);
  pmix_value_t v;
  v.type = PMIX_BYTE_OBJECT;
  v.data.bo.bytes = reinterpret_cast<char*>(framed.data());
  v.data.bo.size = framed.size();
  pmix_status_t rc = pmix_api().Put(PMIX_GLOBAL, key.c_str(), &v);  // copies the value
  if (rc != PMIX_SUCCESS) throw_pmix("bootstrap allgather: PMIx_Put " + key, rc, timeout);
  rc = pmix_api().Commit();
  if (rc != PMIX_SUCCESS) throw_pmix("bootstrap allgather: PMIx_Commit", rc, timeout);
  fence(true, timeout, "bootstrap allgather");
  std::vector<Bytes> out(identity_.size);
  for (int r = 0; r < identity_.size; ++r) {
    ValuePtr got = get(static_cast<pmix_rank_t>(r), key.c_str(), timeout, false);
    if (got->type != PMIX_BYTE_OBJECT || got->data.bo.size < 1)
      throw BootstrapError("bootstrap allgather: rank " + std::to_string(r) + "'s " + key +
                           " is not a tandem blob");
    const auto* p = reinterpret_cast<const uint8_t*>(got->data.bo.bytes);
    out[r].assign(p + 1, p + got->data.bo.size);
  }
  return out;
}

void PmixBootstrap::barrier(std::chrono::milliseconds timeout) {
  fence(false, timeout, "bootstrap barrier");
}

}  // namespace

std::unique_ptr<Bootstrap> make_pmix_bootstrap(std::chrono::milliseconds timeout) {
  return std::make_unique<PmixBootstrap>(timeout);
}

}  // namespace tandem
