#include "api/guard.h"

#include <new>

#include "common/errors.h"

namespace tandem {
namespace {
thread_local std::string last_error;
}

void set_last_error(const std::string& message) { last_error = message; }
void clear_last_error() { last_error.clear(); }
const char* last_error_cstr() { return last_error.c_str(); }

tandem_result_t record(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    set_last_error("out of memory");
    return TANDEM_ERR_SYSTEM;
  } catch (const std::exception& x) {
    const tandem_result_t code = code_of(x);
    if (code == TANDEM_ERR_INTERNAL)
      set_last_error(std::string("internal error: ") + x.what() + " (please report this)");
    else set_last_error(x.what());
    return code;
  } catch (...) {
    set_last_error("internal error: unknown exception (please report this)");
    return TANDEM_ERR_INTERNAL;
  }
}

}  // namespace tandem

extern "C" TANDEM_API const char* tandem_last_error(void) { return tandem::last_error_cstr(); }
