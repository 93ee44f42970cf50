#!/usr/bin/env bash
# Installs the Debian 12 packages Tandem builds, tests and demos with, only
# those missing, then the framework venvs and the NCCL header from PyPI
# (contrib/install-python-envs.sh). Needs root (or sudo), Debian's archive
# and a pip index.
set -euo pipefail

packages=(
  # build
  g++ pkg-config meson ninja-build libhwloc-dev libpmix-dev libslurm-dev
  libgtest-dev libgmock-dev
  # contrib/check-layers.sh (the C++ format check)
  clang-format
  # local cluster and end-to-end tests
  slurmctld slurmd slurm-client munge hwloc iproute2 util-linux procps
  # horovodrun across hosts over ssh (tests/e2e/test_horovodrun_ssh.py)
  openssh-server openssh-client
  # comparisons in the benchmarks, python API and examples
  openmpi-bin libopenmpi-dev python3 python3-pytest python3-numpy python3-torch
  # packages (contrib/package/): the .deb and its install test, the RPM, the module
  debhelper dh-python ccache groff-base man-db rpm lmod
  # containers (tests/e2e/test_containers.py): image builds, Charliecloud, Podman with runc
  debootstrap charliecloud-runtime podman runc
  # Horovod's elastic PyTorch examples, run unchanged by the elastic tests
  # (torchvision's models and MNIST reader, a file lock; psutil for
  # Horovod's elastic test mains)
  python3-torchvision python3-filelock python3-psutil
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts these daemons on install; the project runs its own instances.
  for svc in slurmctld slurmd munge; do
    $sudo systemctl disable --now "$svc" >/dev/null 2>&1 || $sudo service "$svc" stop >/dev/null 2>&1 || true
  done
fi

"$(dirname "$0")/install-python-envs.sh"
