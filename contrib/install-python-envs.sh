#!/usr/bin/env bash
# The framework environments Tandem is tested with, beside Debian's python3
# (torch 1.13), and the NCCL header the CUDA build compiles against. Idempotent:
# what is already there and complete is kept.
#
#   contrib/install-python-envs.sh          # into $TANDEM_DEPS (default /opt/tandem-deps)
#   contrib/install-python-envs.sh --print  # prints the meson -D options that use them
#   contrib/install-python-envs.sh --print-pythons  # the e2e tests' --python NAME=PATH options
#
# Layout under $TANDEM_DEPS:
#   torch2/   venv: torch==2.13.0 (CPU), numpy, pytest, keras==3.15.1 (torch backend)
#   tf/       venv: tensorflow-cpu==2.21.0, keras==3.15.1, pytest
#   lint/     venv: ruff==0.17.5 (contrib/check-layers.sh lints python/, tests/, contrib/)
#   suite/    parameterized==0.9.0 (pure Python, pip --target): what Horovod's own
#             test files import beyond their framework; contrib/horovod-suite.sh puts
#             it on PYTHONPATH, nothing else does
#   tfkeras/  venv: tensorflow-cpu==2.21.0, tf-keras==2.21.0 (Keras 2, used with
#             TF_USE_LEGACY_KERAS=1), keras==3.15.1 (TF's own dependency), pytest,
#             scipy==1.15.3 (Keras 2's ImageDataGenerator, which Horovod's
#             keras_mnist_advanced.py uses)
#   tf215/    venv: tensorflow-cpu==2.15.1 (Keras 2.15: the last TensorFlow that
#             Horovod 0.28.1 builds for), pytest, scipy==1.15.3
#   nccl/include/nccl.h   from the nvidia-nccl-cu13 wheel, used only when the
#                         CUDA toolkit under /usr/local/cuda has no nccl.h
#
# Exact versions on purpose: a looser range for torch pulls the CUDA build
# (gigabytes); these files lie on the machine's pip index. A venv counts as
# ready only once its .complete marker is written after a successful import
# check, so an interrupted install is redone, not trusted.
set -euo pipefail

deps=${TANDEM_DEPS:-/opt/tandem-deps}
cuda=${TANDEM_CUDA_ROOT:-/usr/local/cuda}
nccl_wheel_version=2.30.7

base_python() {  # the pip-capable CPython 3.11 (pyenv's on these machines)
  local p
  for p in ${TANDEM_BASE_PYTHON:-} python3.11 python3; do
    if [ -n "$p" ] && command -v "$p" >/dev/null && "$p" -c 'import venv, ensurepip' 2>/dev/null; then
      command -v "$p"; return 0
    fi
  done
  echo "install-python-envs: no python3 with venv and ensurepip on PATH (set TANDEM_BASE_PYTHON)" >&2
  return 1
}

make_venv() {  # make_venv NAME CHECK PACKAGES...
  local name=$1 check=$2; shift 2
  local dest=$deps/$name
  if [ -f "$dest/.complete" ] && "$dest/bin/python" -c "$check" >/dev/null 2>&1; then
    return 0
  fi
  if [ -f "$dest/.complete" ]; then
    # A complete venv of an older list (a package added since): pip installs
    # the exact pins into it; rebuilt from scratch only if that does not do.
    echo "install-python-envs: $dest: adding to it ($*)"
    "$dest/bin/python" -m pip install -q --disable-pip-version-check "$@" 2>&1 \
      | grep -v "is ignored: it is neither a file nor a directory" || true
    if "$dest/bin/python" -c "$check" >/dev/null 2>&1; then
      return 0
    fi
  fi
  echo "install-python-envs: $dest ($*)"
  rm -rf "$dest"
  "$(base_python)" -m venv "$dest"
  "$dest/bin/python" -m pip install -q --disable-pip-version-check "$@" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
  "$dest/bin/python" -c "$check" >/dev/null || {
    echo "install-python-envs: $name: '$check' fails after pip install $*" >&2; return 1; }
  touch "$dest/.complete"
}

nccl_include() {
  if [ -f "$cuda/include/nccl.h" ]; then echo "$cuda/include"; else echo "$deps/nccl/include"; fi
}

if [ "${1:-}" = "--print-pythons" ]; then
  # Debian's python3 (torch 1.13) first, then the venvs made below.
  # One word each (--python=NAME=PATH): Debian's pytest 7.2 cannot tell an option
  # of a conftest from a path when its value is a separate word.
  echo "--python=debian=/usr/bin/python3 --python=torch2=$deps/torch2/bin/python --python=tf=$deps/tf/bin/python --python=tfkeras=$deps/tfkeras/bin/python --python=tf215=$deps/tf215/bin/python"
  exit 0
fi

if [ "${1:-}" = "--print" ]; then
  echo "-Dnccl_include=$(nccl_include) -Dtest_python_torch2=$deps/torch2/bin/python -Dtest_python_tf=$deps/tf/bin/python -Dtest_python_tfkeras=$deps/tfkeras/bin/python -Dtest_python_tf215=$deps/tf215/bin/python"
  exit 0
fi

if [ "${1:-}" = "--print-ruff" ]; then  # the linter contrib/check-layers.sh runs
  echo "$deps/lint/bin/ruff"
  exit 0
fi

if [ "${1:-}" = "--print-suite-path" ]; then  # contrib/horovod-suite.sh's PYTHONPATH entry
  echo "$deps/suite"
  exit 0
fi

mkdir -p "$deps"

# keras in torch2: Keras 3 on its torch backend (KERAS_BACKEND=torch), served
# by tandem.keras too (docs/keras.md).
make_venv torch2 'import os; os.environ["KERAS_BACKEND"] = "torch"; import torch, numpy, pytest, keras; assert torch.__version__.startswith("2.13.0") and keras.__version__ == "3.15.1"' \
  torch==2.13.0 numpy pytest keras==3.15.1
make_venv tf 'import tensorflow as tf, keras, pytest; assert tf.__version__ == "2.21.0" and keras.__version__ == "3.15.1"' \
  tensorflow-cpu==2.21.0 keras==3.15.1 pytest
make_venv lint 'import subprocess, sys, os; out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ruff"), "--version"], capture_output=True, text=True).stdout; assert out.split() == ["ruff", "0.17.5"], out' \
  ruff==0.17.5

if [ ! -f "$deps/suite/.complete" ]; then
  echo "install-python-envs: $deps/suite (parameterized==0.9.0)"
  rm -rf "$deps/suite"
  "$(base_python)" -m pip install -q --disable-pip-version-check --target "$deps/suite" \
    parameterized==0.9.0 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
  [ -f "$deps/suite/parameterized/__init__.py" ] || {
    echo "install-python-envs: parameterized did not install into $deps/suite" >&2; exit 1; }
  touch "$deps/suite/.complete"
fi
# Keras 2 on a current TensorFlow: TensorFlow's migration path for Keras 2
# code (tf.keras is tf_keras when TF_USE_LEGACY_KERAS=1 is set).
make_venv tfkeras 'import os; os.environ["TF_USE_LEGACY_KERAS"] = "1"; import tensorflow as tf, tf_keras, keras, pytest, scipy; assert tf.__version__ == "2.21.0" and tf_keras.__version__ == "2.21.0" and keras.__version__ == "3.15.1" and tf.keras.Model is tf_keras.Model and scipy.__version__ == "1.15.3"' \
  tensorflow-cpu==2.21.0 tf-keras==2.21.0 keras==3.15.1 pytest scipy==1.15.3
# The TensorFlow a site upgrading from Horovod 0.28.1 has (Keras 2.15).
make_venv tf215 'import tensorflow as tf, keras, pytest, scipy; assert tf.__version__ == "2.15.1" and keras.__version__.startswith("2.15.") and scipy.__version__ == "1.15.3"' \
  tensorflow-cpu==2.15.1 pytest scipy==1.15.3

if [ ! -f "$cuda/include/nccl.h" ] && [ ! -f "$deps/nccl/include/nccl.h" ]; then
  echo "install-python-envs: nccl.h from nvidia-nccl-cu13==$nccl_wheel_version into $deps/nccl"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  "$(base_python)" -m pip download -q --no-deps -d "$tmp" "nvidia-nccl-cu13==$nccl_wheel_version" 2>&1 \
    | grep -v "is ignored: it is neither a file nor a directory" || true
  "$(base_python)" - "$tmp" "$deps/nccl" <<'EOF'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("nvidia_nccl_cu13-*.whl"))
out = pathlib.Path(sys.argv[2]) / "include"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith("nvidia/nccl/include/") and not name.endswith("/"):
            dest = out / name[len("nvidia/nccl/include/"):]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(z.read(name))
EOF
fi
