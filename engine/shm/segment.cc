#include "shm/segment.h"

#include <cerrno>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <random>
#include <signal.h>
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
  s.linked_ = true;
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

namespace {

constexpr char kPrefix[] = "tandem-";

// This process's PID namespace (the inode of /proc/self/ns/pid); 0 when
// /proc does not say, and then no name is judged stale.
unsigned long long pid_namespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0;
}

// The digits after `tag` at the end of `s` ("...-p123"), with s cut before
// the tag; false when s does not end that way.
bool take_number(std::string& s, char tag, unsigned long long* out) {
  const size_t dash = s.rfind('-');
  if (dash == std::string::npos || dash + 2 >= s.size() || s[dash + 1] != tag) return false;
  const std::string digits = s.substr(dash + 2);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 19)
    return false;
  *out = std::strtoull(digits.c_str(), nullptr, 10);
  s.resize(dash);
  return true;
}

}  // namespace

std::vector<std::string> remove_stale_segments(const std::string& dir) {
  std::vector<std::string> removed;
  const unsigned long long ns = pid_namespace();
  if (ns == 0) return removed;
  DIR* d = opendir(dir.c_str());
  if (!d) return removed;
  const int dfd = dirfd(d);
  while (dirent* e = readdir(d)) {
    std::string rest = e->d_name;
    if (rest.rfind(kPrefix, 0) != 0) continue;
    unsigned long long their_ns = 0, pid = 0;
    if (!take_number(rest, 'n', &their_ns) || !take_number(rest, 'p', &pid)) continue;
    if (their_ns != ns || pid == 0 || pid > 0x7fffffffull) continue;
    // EPERM: a process of another user has that pid now, so it is alive.
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    struct stat st {};
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid() ||
        !S_ISREG(st.st_mode))
      continue;
    if (unlinkat(dfd, e->d_name, 0) == 0) removed.push_back(e->d_name);
  }
  closedir(d);
  return removed;
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
  return "/" + std::string(kPrefix) + clean + "-" + hex + "-p" + std::to_string(getpid()) + "-n" +
         std::to_string(pid_namespace());
}

}  // namespace tandem
