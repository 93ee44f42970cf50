// Typed errors used inside the engine. Each maps to one tandem_result_t at the
// C boundary (api/), where every exception is caught. Messages are written for
// the user: what was expected, what was found, what to do.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InvalidArgument : public Error { public: using Error::Error; };
class BootstrapError : public Error { public: using Error::Error; };
class PeerLostError : public Error { public: using Error::Error; };
class TimeoutError : public Error { public: using Error::Error; };
class MismatchError : public Error { public: using Error::Error; };
class DuplicateNameError : public Error { public: using Error::Error; };
class UnsupportedError : public Error { public: using Error::Error; };
class AbortedError : public Error { public: using Error::Error; };
class SystemError : public Error {
 public:
  // what: the call that failed and its subject, e.g. "shm_open /tandem-..".
  SystemError(const std::string& what, int err);
  int code() const { return code_; }
 private:
  int code_;
};

}  // namespace tandem
