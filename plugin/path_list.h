// Prepending one entry to a search-path variable (LD_PRELOAD, PYTHONPATH)
// without losing the user's entries and without ever listing one twice.
#pragma once

#include <string>
#include <string_view>

namespace tandem::plugin {

// Returns `entry` followed by the entries of `list` other than `entry`, in
// their order, joined by ':'. `separators` are the characters that split
// `list` (ld.so accepts ':' and ' ' in LD_PRELOAD; PYTHONPATH only ':').
// Empty entries are dropped: in PYTHONPATH an empty entry means the current
// directory, which a job should not gain by accident.
std::string prepend_unique(std::string_view entry, std::string_view list,
                           std::string_view separators = ":");

}  // namespace tandem::plugin
