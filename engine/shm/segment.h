// One POSIX shared-memory segment, owned RAII-style: mapped for the lifetime
// of the object, unlinked by its creator on destruction if still linked.
//
// Privacy: names carry the job id and 64 random bits and the segment is
// created O_EXCL with mode 0600, so only the job's user can open it and no
// other job can collide with it.
//
// Nothing left behind: the node group removes the name as soon as the last
// local rank has opened it (shm_group.cc), and any rank that knows the name
// removes it when it fails before then. What no rule inside the job can
// cover is the job killed as a whole (srun, tandem-run, the OOM killer)
// between the creation and the last open: no survivor is left. So the name
// also carries its creator's pid and PID namespace, and the next setup on
// the node removes the segments of this user whose creator no longer exists
// (remove_stale_segments). A name is only judged from the creator's own PID
// namespace (elsewhere its pid means nothing), and a pid in use again keeps
// the segment until a later setup: never a live job's segment, at worst a
// late removal.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tandem {

class SharedSegment {
 public:
  SharedSegment() = default;
  SharedSegment(SharedSegment&& o) noexcept { *this = std::move(o); }
  SharedSegment& operator=(SharedSegment&& o) noexcept;
  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;
  ~SharedSegment();

  // Creates a new segment of `bytes` (zero-filled) and maps it. The first
  // `backed_bytes` are allocated now (posix_fallocate), so a full /dev/shm is
  // a clear error here instead of a SIGBUS later.
  static SharedSegment create(const std::string& name, size_t bytes, size_t backed_bytes);
  // Maps an existing segment; its size must be `bytes`. The opener, too,
  // removes the name on destruction unless unlink() ran: a rank whose setup
  // fails takes the name with it.
  static SharedSegment open(const std::string& name, size_t bytes);

  // Removes the name (the mapping stays). Idempotent; a name already gone
  // (another local rank unlinked it) is fine.
  void unlink();
  // Backs [offset, offset+bytes) with memory now; throws SystemError naming
  // /dev/shm when it is full.
  void back(size_t offset, size_t bytes);

  char* base() const { return base_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  void reset() noexcept;
  std::string name_;
  char* base_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  bool linked_ = false;  // we created or opened it and have not unlinked it yet
};

// "/tandem-<job>-<16 hex digits>-p<pid>-n<PID namespace inode>", the pid
// and namespace this process's; characters of the job id outside
// [A-Za-z0-9._-] become '_'.
std::string make_segment_name(const std::string& job_id);

// Removes this user's segments in `dir` (/dev/shm: the shm_* names) whose
// creator, by the name, is a process of this PID namespace that no longer
// exists, and returns their names. Names of another form, of another
// namespace or user, or of a live pid are left alone. The names returned
// are the files' (no leading '/').
std::vector<std::string> remove_stale_segments(const std::string& dir = "/dev/shm");

}  // namespace tandem
