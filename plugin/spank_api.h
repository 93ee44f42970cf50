// Slurm's spank.h declares the hooks without extern "C" guards; include it
// through this header only, so declarations and definitions agree on C linkage.
#pragma once

extern "C" {
#include <slurm/spank.h>
}
