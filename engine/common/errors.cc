#include "common/errors.h"

#include <cstring>

namespace tandem {

SystemError::SystemError(const std::string& what, int err)
    : Error(what + ": " + std::strerror(err)), code_(err) {}

}  // namespace tandem
