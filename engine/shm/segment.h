// One POSIX shared-memory segment, owned RAII-style: mapped for the lifetime
// of the object, unlinked by its creator on destruction if still linked.
//
// Privacy: names carry the job id and 64 random bits and the segment is
// created O_EXCL with mode 0600, so only the job's user can open it and no
// other job can collide with it. The node group unlinks it as soon as every
// local rank has mapped it, so a crash leaves nothing in /dev/shm.
#pragma once

#include <cstddef>
#include <string>

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
  // Maps an existing segment; its size must be `bytes`.
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
  bool linked_ = false;  // we created it and have not unlinked it yet
};

// "/tandem-<job>-<16 hex digits>"; characters of the job id outside
// [A-Za-z0-9._-] become '_'.
std::string make_segment_name(const std::string& job_id);

}  // namespace tandem
