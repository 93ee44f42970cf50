#!/usr/bin/env bash
# The one command that runs every Tandem test on a fresh Debian 12 machine:
# installs what is missing, builds with warnings as errors, runs the unit
# tests, starts the local Slurm cluster, runs the end-to-end and Python tests
# under real srun, and stops the cluster leaving nothing behind. The
# structure and lint checks (contrib/check-layers.sh) run before the tests.
#
#   contrib/test.sh            # everything
#   BUILD=dir contrib/test.sh  # another build directory (default: build)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
cd "$root"

"$root/contrib/install-deps.sh"

echo "== build ($build)"
# The framework venvs (torch 2.x, TensorFlow) and the NCCL header location.
# shellcheck disable=SC2207
env_options=($("$root/contrib/install-python-envs.sh" --print))
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true -Dcuda=enabled -Dtests=enabled "${env_options[@]}"
else
  meson configure "$build" "${env_options[@]}"
fi
ninja -C "$build"

# The container tests' images (debootstrap; cached in /opt/tandem-deps/images,
# so only the first run on a machine pays for them, minutes per image). A
# failed build leaves those tests skipped, saying why, and is counted here.
images_failed=0
for image in bullseye bookworm-torch; do
  "$root/contrib/containers/build-image.sh" "$image" || images_failed=1
done

failed=$images_failed
stage() {  # stage NAME CMD...: runs one stage; a failure is counted, later stages still run
  local name=$1; shift
  echo "== $name"
  "$@" || { echo "== $name: FAILED"; failed=$((failed + 1)); }
}

stage layers "$root/contrib/check-layers.sh"

stage unit meson test -C "$build" --print-errorlogs --suite unit

# gpu (NCCL path): the same unit suite with CUDA and NCCL hidden from the
# loader, as on a CPU-only node (the ld.so cache would find them otherwise);
# the TF suite on the extra Keras 2 interpreters (tf-extra) runs once.
stage unit-without-cuda env TANDEM_CUDA_LIBRARY=/nonexistent/libcudart.so.13 \
  TANDEM_NCCL_LIBRARY=/nonexistent/libnccl.so.2 LD_LIBRARY_PATH= \
  meson test -C "$build" --print-errorlogs --suite unit --no-suite tf-extra \
  --logbase testlog-without-cuda

# The Python end-to-end tests run once per framework interpreter (Debian's
# torch 1.13, the torch 2.x venv; the TensorFlow venv for TF tests).
# shellcheck disable=SC2207
e2e_pythons=($("$root/contrib/install-python-envs.sh" --print-pythons))
stage end-to-end /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs --durations=15 \
  --junitxml="$build/e2e-results.xml" --build-dir="$build" "${e2e_pythons[@]}" "$root/tests/e2e"

# What a site installs: the .deb from a clean clone of HEAD, installed, used
# (a cluster from the installed files, torch and TF training, the module,
# the man pages), removed and purged inside a throwaway mount namespace (the
# machine's /usr, /etc, /var never see it); the RPM built from a meson dist
# tarball and installed in a scratch --root. Both reuse ccache across runs.
package_stage() {  # package_stage NAME: contrib/package/test-NAME.sh, its log kept for the summary
  set -o pipefail
  "$root/contrib/package/test-$1.sh" 2>&1 | tee "$build/package-$1.log"
}
stage package-deb package_stage deb
stage package-rpm package_stage rpm

echo "== summary"
/usr/bin/python3 "$root/contrib/test_summary.py" \
  "meson:$build/meson-logs/testlog.json" \
  "meson:$build/meson-logs/testlog-without-cuda.json" \
  "junit:$build/e2e-results.xml" \
  "checks:$build/package-deb.log" \
  "checks:$build/package-rpm.log" || failed=$((failed + 1))
[ "$failed" -eq 0 ]
