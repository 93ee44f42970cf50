// The C boundary: every exported function runs its body through guarded(),
// which turns the engine's typed exceptions into a result code and the
// thread's last-error message. Nothing is thrown past extern "C".
#pragma once

#include <exception>
#include <string>

#include "common/errors.h"
#include "tandem/tandem.h"

namespace tandem {

void set_last_error(const std::string& message);
void clear_last_error();
const char* last_error_cstr();
// Maps an exception to its result code (the one table, common/errors.h)
// and records its message.
tandem_result_t record(const std::exception_ptr& e);

template <typename F>
tandem_result_t guarded(F&& body) noexcept {
  try {
    body();
    return TANDEM_SUCCESS;
  } catch (...) { return record(std::current_exception()); }
}

}  // namespace tandem
