// Futex wait/wake on a word in the shared segment: the one place the node-local
// synchronisation (node_sync) and the runtime's doorbell sleep and wake.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace tandem {

// Sleeps while *word == expected, for at most d (spurious wake-ups allowed:
// callers re-check their condition). Shared, not FUTEX_PRIVATE: the word is
// in memory mapped by several processes.
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds d);
// Wakes every waiter on word.
void futex_wake(std::atomic<uint32_t>* word);

}  // namespace tandem
