#!/bin/sh
# libtandem must not need CUDA or NCCL at load time: the plugin preloads it
# into every task, CPU-only nodes included. Fails listing any such DT_NEEDED.
set -eu
lib=$1
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[ -n "$needed" ] || { echo "readelf found no DT_NEEDED at all in $lib: wrong file?"; exit 1; }
bad=$(printf '%s\n' "$needed" | grep -Ei 'cuda|nccl|nvidia' || true)
if [ -n "$bad" ]; then
  echo "$lib links against: $bad (load them with dlopen in engine/gpu instead)"
  exit 1
fi
echo "$lib needs only: $(echo $needed)"
