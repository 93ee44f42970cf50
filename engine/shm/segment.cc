#include "shm/segment.h"

#include <cerrno>
#include <fcntl.h>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errors.h"

namespace tandem {

SharedSegment& SharedSegment::operator=(SharedSegment&& o) noexcept {
  if (this != &o) {
    reset();
    name_ = std::move(o.name_);
    base_ = o.base_;
    size_ = o.size_;
    fd_ = o.fd_;
    linked_ = o.linked_;
    o.base_ = nullptr;
    o.size_ = 0;
    o.fd_ = -1;
    o.linked_ = false;
  }
  return *this;
}

SharedSegment::~SharedSegment() { reset(); }

void SharedSegment::reset() noexcept {
  if (linked_) shm_unlink(name_.c_str());
  linked_ = false;
  if (base_) munmap(base_, size_);
  base_ = nullptr;
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

SharedSegment SharedSegment::create(const std::string& name, size_t bytes, size_t backed_bytes) {
  SharedSegment s;
  s.name_ = name;
  s.fd_ = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (s.fd_ < 0) throw SystemError("shm_open(create) " + name, errno);
  s.linked_ = true;
  // The umask may have narrowed the mode; it can never widen it, but make the
  // 0600 explicit in case the filesystem applied something else.
  if (fchmod(s.fd_, 0600) != 0) throw SystemError("fchmod 0600 " + name, errno);
  if (ftruncate(s.fd_, static_cast<off_t>(bytes)) != 0)
    throw SystemError("ftruncate " + name + " to " + std::to_string(bytes) + " bytes", errno);
  s.back(0, backed_bytes);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_, 0);
  if (p == MAP_FAILED) throw SystemError("mmap " + name, errno);
  s.base_ = static_cast<char*>(p);
  s.size_ = bytes;
  return s;
}

SharedSegment SharedSegment::open(const std::string& name, size_t bytes) {
  SharedSegment s;
  s.name_ = name;
  s.fd_ = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (s.fd_ < 0) throw SystemError("shm_open " + name, errno);
  struct stat st {};
  if (fstat(s.fd_, &st) != 0) throw SystemError("fstat " + name, errno);
  if (static_cast<size_t>(st.st_size) != bytes)
    throw BootstrapError("shared segment " + name + " has " + std::to_string(st.st_size) +
                         " bytes, expected " + std::to_string(bytes) +
                         ": the local ranks disagree on TANDEM_SHM_* settings; set them alike");
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd_, 0);
  if (p == MAP_FAILED) throw SystemError("mmap " + name, errno);
  s.base_ = static_cast<char*>(p);
  s.size_ = bytes;
  return s;
}

void SharedSegment::unlink() {
  if (!linked_ && fd_ < 0) return;
  if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT)
    throw SystemError("shm_unlink " + name_, errno);
  linked_ = false;
}

void SharedSegment::back(size_t offset, size_t bytes) {
  if (bytes == 0) return;
  const int err = posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(bytes));
  if (err != 0)
    throw SystemError("allocating " + std::to_string(bytes) + " bytes of shared memory in " +
                          name_ + " (is /dev/shm full or too small? see df /dev/shm)",
                      err);
}

std::string make_segment_name(const std::string& job_id) {
  std::string clean;
  for (char c : job_id.substr(0, 100)) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    clean += ok ? c : '_';
  }
  std::random_device rd;
  const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(r));
  return "/tandem-" + clean + "-" + hex;
}

}  // namespace tandem
