#!/usr/bin/env bash
# The Debian package from a clean clone to `apt purge`, as a site would meet it:
#
#  1. clones HEAD and builds tandem_<v>-1+slurm<series>_<arch>.deb and tandem-dev
#     with dpkg-buildpackage (Debian's tools only, ccache);
#  2. checks the .deb itself: version and Slurm pin, the one conffile, the
#     enabling links, the engine by its SONAME, NDEBUG and -O3 in every
#     compile (dh's buildtype=plain drops both), no path of the build tree in
#     any file;
#  3. installs it with apt into a throwaway copy of this machine: a private
#     mount namespace whose /usr, /etc and /var are overlays on a tmpfs, with
#     the source tree, the clone and the build tree hidden under empty tmpfs.
#     dpkg, apt and the Slurm daemons run for real there; nothing reaches the
#     machine's own /usr, /etc or /var (checked through /proc/1/root while
#     installed) and it all vanishes with the namespace;
#  4. there: man pages, `module load tandem` + tandem-run (Lua and Tcl
#     modulefiles), tandem-info; a 2-node cluster started from the installed
#     files only (PlugStackConfig=/etc/slurm/plugstack.conf, Debian's, which
#     includes the package's link); srun -N 2 -n 4 --horovod=on python3 with
#     Debian's torch and with the TensorFlow venv; the line stays `required`;
#     containers: the tasks preload libtandem-preload.so from the engine's
#     folder, the enroot hook (through its link) binds that folder, and
#     tandem-ch-run runs the collective in the cached bullseye image;
#  5. apt remove: the links are gone, the conffiles stay, srun works and
#     slurmd restarts; apt purge: nothing of Tandem left in /etc.
#
#   contrib/package/test-deb.sh                  # all of it
#   contrib/package/test-deb.sh --debs DIR       # steps 2-5 with .debs already built in DIR
#
# Needs root, the packages of contrib/install-deps.sh and the TensorFlow venv
# (contrib/install-python-envs.sh). The build runs in /var/tmp/tandem-package
# (one at a time: flock), a fixed path so that ccache (/var/cache/tandem-ccache)
# hits across runs: Debian's flags put the build path in every compile.
set -euo pipefail

me=test-deb.sh
root=$(cd "$(dirname "$0")/../.." && pwd)
work=/var/tmp/tandem-package
tf_python=${TANDEM_DEPS:-/opt/tandem-deps}/tf/bin/python
debs=""
inside=0
while [ $# -gt 0 ]; do
  case $1 in
    --debs) debs=$(realpath "$2"); shift 2 ;;
    --inside) inside=1; shift ;;  # internal: the namespace half (below)
    *) echo "$me: unknown argument '$1' (usage: $me [--debs DIR])" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "$me: needs root (apt in a mount namespace, the cluster)" >&2; exit 1; }

checks=0
pass() { checks=$((checks + 1)); echo "  ok: $*"; }
fail() { echo "$me: FAILED: $*" >&2; exit 1; }
# grep that reads all its input: `grep -q` exits at the first match and the
# writer then dies of SIGPIPE, which pipefail reports as a failure.
contains() { grep "$@" >/dev/null; }

# ============================================================ inside the namespace
if [ "$inside" -eq 1 ]; then
  : "${T:?}" "${DEBS:?}" "${HIDE:?}" "${MULTIARCH:?}"
  export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
  unset PYTHONPATH TANDEM_LIBRARY LD_PRELOAD MODULEPATH LOADEDMODULES
  harness=$T/harness
  name=pkg$$
  tdir=/usr/lib/$MULTIARCH/tandem  # the engine, the preload, the Python packages: what containers bind
  cdir=$T/cluster

  # ---- the throwaway machine
  mount -t tmpfs -o mode=0755 tandem-package "$T/ns"
  for d in usr etc var; do
    mkdir -p "$T/ns/$d.up" "$T/ns/$d.work"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$T/ns/$d.up,workdir=$T/ns/$d.work" "/$d"
  done
  # /run/netns entries made here stay private to this namespace.
  mount -t tmpfs -o mode=0755 netns /run/netns
  for h in $HIDE; do mount -t tmpfs -o size=1m,mode=0755 hidden "$h"; done

  cluster_stop() { "$harness/cluster/stop.sh" --name "$name" --dir "$cdir" >/dev/null 2>&1 || true; }
  on_exit() {
    local rc=$?
    if [ "$rc" -ne 0 ] && [ -d "$cdir/log" ]; then
      for log in "$cdir"/log/*.log; do echo "--- $log" >&2; tail -n 20 "$log" >&2; done
    fi
    cluster_stop
  }
  trap on_exit EXIT

  for h in $HIDE; do
    [ -z "$(ls -A "$h")" ] || fail "$h is still visible"
  done
  pass "source, clone and build trees hidden ($HIDE)"

  echo "== apt install ./tandem_*.deb ./tandem-dev_*.deb"
  apt-get install -y -q --no-install-recommends "$DEBS"/tandem_*.deb "$DEBS"/tandem-dev_*.deb \
    >"$T/apt-install.log" 2>&1 || { tail -n 30 "$T/apt-install.log" >&2; fail "apt install"; }
  dpkg-query -W -f='${Status}\n' tandem | contains 'install ok installed' || fail "tandem is not installed"
  [ ! -e /proc/1/root/etc/tandem ] && [ ! -e "/proc/1/root$tdir" ] \
    && ! grep -qsx 'Package: tandem' /proc/1/root/var/lib/dpkg/status || fail "the install reached the machine's own /etc, /usr or /var"
  pass "installed in the namespace; the machine itself has no /etc/tandem, $tdir, dpkg entry"
  mapfile -t installed < <(dpkg -L tandem tandem-dev | sort -u)

  link=/etc/slurm/plugstack.conf.d/tandem.conf
  [ -L "$link" ] && [ "$(readlink -f "$link")" = /etc/tandem/plugstack.conf ] || fail "$link is not a link to /etc/tandem/plugstack.conf"
  grep -qx 'include /etc/slurm/plugstack.conf.d/\*.conf' /etc/slurm/plugstack.conf || fail "Debian's plugstack.conf does not include plugstack.conf.d"
  pass "$link -> /etc/tandem/plugstack.conf, included by Debian's /etc/slurm/plugstack.conf"

  # The pin: Slurm of the next series cannot be installed beside this build.
  next=$(dpkg-query -W -f='${Depends}' tandem | grep -oE 'slurm-wlm-basic-plugins \(<< [0-9.]+' | grep -oE '[0-9.]+$')
  mkdir -p "$T/next/DEBIAN"
  printf 'Package: slurm-wlm-basic-plugins\nVersion: %s.1-1\nArchitecture: all\nMaintainer: test <test@example.org>\nDescription: Slurm %s (a stand-in)\n' \
    "$next" "$next" >"$T/next/DEBIAN/control"
  dpkg-deb -b "$T/next" "$T/slurm-next.deb" >/dev/null
  apt-get install -s "$T/slurm-next.deb" 2>&1 | contains '^Remv tandem ' || fail "apt would keep tandem beside Slurm $next"
  pass "apt would remove tandem to install Slurm $next (simulated): the plugin never meets another series"

  echo "== man pages"
  for page in tandem_spank tandem-run tandem-bind tandem-info tandem-bench tandem-ch-run tandem-oci-run; do
    man -w "$page" >/dev/null || fail "man $page: no page"
  done
  MANWIDTH=200 man tandem_spank 2>/dev/null | contains 'libtandem-preload.so beside it goes on' || fail "man tandem_spank lacks the plugstack table"
  MANWIDTH=200 man tandem-run 2>/dev/null | contains -e '--timeout SECONDS' || fail "man tandem-run lacks its options"
  pass "man tandem_spank (plugstack arguments), man tandem-run, -bind, -info, -bench, -ch-run, -oci-run"

  echo "== tandem-info"
  info=$(tandem-info 2>&1) || { echo "$info" >&2; fail "tandem-info exit status"; }
  echo "$info" | contains "installed under /usr" || fail "tandem-info: $info"
  echo "$info" | contains "loaded from /usr/lib/.*/libtandem.so.0" || fail "tandem-info does not load libtandem.so.0: $info"
  pass "tandem-info: $(echo "$info" | head -n 1)"
  # The C tools link the engine, which is in its own folder, not on ld.so's path.
  for tool in tandem-bench tandem-step-bench; do
    ldd "/usr/bin/$tool" | contains "libtandem.so.0 => $tdir/libtandem.so.0" || fail "$tool does not find $tdir/libtandem.so.0: $(ldd "/usr/bin/$tool")"
  done
  out=$(timeout 120 tandem-bench -c allreduce -b 8 -e 8 -n 2 2>&1) && echo "$out" | contains 'Out of bounds values : 0 OK' \
    || { echo "$out" >&2; fail "tandem-bench in a world of one"; }
  pass "tandem-bench and tandem-step-bench load $tdir/libtandem.so.0 (RUNPATH); tandem-bench runs"

  echo "== module load tandem"
  probe='import horovod.torch as hvd; hvd.init(); print(hvd.size())'
  # A login shell as a user gets it (/etc/profile, Lmod's profile.d script),
  # with an empty home: nothing of Tandem unless the module gives it.
  mkdir -p "$T/home"
  login=(env -i HOME="$T/home" LC_ALL=C.UTF-8 TERM=dumb bash -l -c)
  if "${login[@]}" "python3 -c '$probe'" >/dev/null 2>&1; then
    fail "horovod.torch imports without the module: the test would prove nothing"
  fi
  out=$("${login[@]}" "module load tandem && tandem-run -np 2 python3 -c '$probe' && man -w ls" 2>&1) \
    || { echo "$out" >&2; fail "module load tandem + tandem-run"; }
  [ "$(echo "$out" | grep -cx 2)" -eq 2 ] || fail "module load tandem; tandem-run -np 2 ...: expected '2' from both ranks, got: $out"
  pass "login shell: module load tandem (Lua, Lmod's default path); tandem-run -np 2 ... printed 2 on both ranks; man ls still found"
  mkdir -p "$T/tcl/tandem"
  ln -s /usr/share/modulefiles/tandem/"$(dpkg-query -W -f='${Version}' tandem | cut -d- -f1)" "$T/tcl/tandem/"
  out=$("${login[@]}" "export MODULEPATH=$T/tcl && module load tandem && tandem-run -np 2 python3 -c '$probe'" 2>&1) \
    || { echo "$out" >&2; fail "the Tcl modulefile"; }
  [ "$(echo "$out" | grep -cx 2)" -eq 2 ] || fail "Tcl modulefile: expected '2' from both ranks, got: $out"
  pass "the Tcl modulefile (read by Lmod) does the same"

  echo "== a cluster from the installed files only"
  "$harness/cluster/start.sh" --name "$name" --dir "$cdir" --nodes 2 --cpus 4 --gpus 2 \
    --plugstack /etc/slurm/plugstack.conf >/dev/null
  export SLURM_CONF=$cdir/slurm.conf
  if grep -n -e "$ROOT" -e "$WORK/src" -e 'obj-' "$cdir/slurm.conf" /etc/slurm/plugstack.conf \
       /etc/tandem/plugstack.conf; then
    fail "a build-tree path in slurm.conf or the plugstack files"
  fi
  grep -qx "PlugStackConfig=/etc/slurm/plugstack.conf" "$cdir/slurm.conf" || fail "slurm.conf does not use Debian's plugstack.conf"
  pass "slurm.conf and the plugstack chain name no build tree: $(grep -v '^#' /etc/tandem/plugstack.conf)"
  srun --help 2>&1 | contains -e '--horovod' || fail "srun --help shows no --horovod"
  run() { timeout 600 srun --immediate=60 "$@"; }

  out=$(run -N 2 -n 4 --horovod=on tandem-whoami 2>&1) || { echo "$out" >&2; fail "srun tandem-whoami"; }
  [ "$(echo "$out" | grep -c 'engine 0\.')" -eq 4 ] || fail "tandem-whoami: the engine is not preloaded in 4 tasks: $out"
  pass "srun -N 2 -n 4 --horovod=on tandem-whoami: 4 tasks, engine preloaded"

  # trains WHAT COUNT RATIO PATTERN: OUT holds COUNT losses matching PATTERN
  # (the loss is its last field) and the last is below RATIO x the first.
  trains() {
    local what=$1 count=$2 ratio=$3 pattern=$4
    mapfile -t losses < <(echo "$out" | grep -oE "$pattern" | awk '{ print $NF }')
    [ "${#losses[@]}" -eq "$count" ] || fail "$what: expected $count losses, got: $out"
    python3 -c "import sys; a, b, r = map(float, sys.argv[1:]); sys.exit(0 if b < r * a else 1)" \
      "${losses[0]}" "${losses[-1]}" "$ratio" || fail "$what: the loss did not fall below $ratio x: ${losses[*]}"
    echo "$out" | contains 'steps on 4 ranks' || fail "$what: $out"
    pass "$what: loss ${losses[0]} -> ${losses[-1]} on 4 ranks"
  }
  echo "== srun -N 2 -n 4 --horovod=on python3 pytorch_mnist.py (Debian's torch)"
  out=$(cd "$harness" && run -N 2 -n 4 --ntasks-per-node=2 --horovod=on python3 pytorch_mnist.py \
          --epochs 1 --steps 60 --log-interval 10 2>&1) || { echo "$out" >&2; fail "torch training"; }
  trains "Debian's torch, 60 steps" 6 0.5 'loss [0-9.]+'

  echo "== srun -N 2 -n 4 --horovod=on <tf venv>/python tensorflow2_keras_mnist.py"
  out=$(cd "$harness" && run -N 2 -n 4 --ntasks-per-node=2 --horovod=on \
          env KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL=3 "$TF_PYTHON" tensorflow2_keras_mnist.py \
          --epochs 2 --steps-per-epoch 24 --batch-size 16 --verbose 0 2>&1) || { echo "$out" >&2; fail "TF training"; }
  trains "TensorFlow venv, 2 epochs" 2 1 '^epoch [0-9]+ loss [0-9.]+'

  # `required` is kept: Slurm ignores any error of an `optional` plugin,
  # which would let a refused step run half set up.
  out=$(run -N 1 -n 1 --mpi=pmi2 --horovod=on true 2>&1) && fail "--mpi=pmi2 --horovod=on ran: $out"
  echo "$out" | contains "tandem: --horovod=on needs the PMIx MPI plugin" || fail "--mpi=pmi2 --horovod=on: $out"
  pass "the installed line is required: --mpi=pmi2 --horovod=on stops srun with Tandem's message"

  echo "== containers: the preload, the hook and tandem-ch-run from the installed folder"
  out=$(run -N 1 -n 1 --horovod=on sh -c 'echo "$LD_PRELOAD|$TANDEM_LIBRARY|$TANDEM_PYTHONPATH"' 2>&1) \
    || { echo "$out" >&2; fail "srun --horovod=on sh"; }
  [ "$out" = "$tdir/libtandem-preload.so|$tdir/libtandem.so.0|$tdir/python" ] \
    || fail "a --horovod task's LD_PRELOAD|TANDEM_LIBRARY|TANDEM_PYTHONPATH: expected the installed folder $tdir, got: $out"
  for f in libtandem-preload.so libtandem.so.0 python/tandem/__init__.py; do
    [ -f "$tdir/$f" ] || fail "$tdir/$f, which the plugin names, is not installed"
  done
  pass "a --horovod task preloads $tdir/libtandem-preload.so; the engine and packages are beside it"
  [ "$(readlink -f /etc/containers/containers.conf.d/tandem.conf)" = /etc/tandem/containers.conf ] \
    || fail "/etc/containers/containers.conf.d/tandem.conf is not a link to /etc/tandem/containers.conf"
  contains -xF "volumes = [\"$tdir:$tdir:ro\"]" /etc/tandem/containers.conf || fail "the Podman drop-in does not bind $tdir"
  hook=/etc/enroot/hooks.d/50-tandem.sh
  [ "$(readlink -f "$hook")" = /etc/tandem/enroot-hook.sh ] && [ -x "$hook" ] || fail "$hook is not an executable link to /etc/tandem/enroot-hook.sh"
  : >"$T/enroot-mounts"
  ENROOT_MOUNTS=$T/enroot-mounts "$hook" || fail "the enroot hook fails outside a --horovod step"
  [ ! -s "$T/enroot-mounts" ] || fail "the enroot hook binds outside a --horovod step: $(cat "$T/enroot-mounts")"
  ENROOT_MOUNTS=$T/enroot-mounts TANDEM_RENDEZVOUS_TOKEN=x "$hook" || fail "the enroot hook"
  contains -x "$tdir $tdir none x-create=dir,bind,ro,nosuid,nodev,private" "$T/enroot-mounts" \
    || fail "the enroot hook's mount lines: $(cat "$T/enroot-mounts")"
  pass "Podman's drop-in (linked) binds $tdir; enroot's hook (linked) binds it in --horovod steps only"
  img=${TANDEM_IMAGES:-${TANDEM_DEPS:-/opt/tandem-deps}/images}/bullseye
  [ -f "$img/.complete" ] || fail "no bullseye image at $img: contrib/containers/build-image.sh bullseye"
  out=$(run -N 2 -n 2 --horovod=on env USER=root tandem-ch-run "$img" -- \
          python3 -c 'import tandem; tandem.init(); print("RANK", tandem.rank(), tandem.size())' 2>&1) \
    || { echo "$out" >&2; fail "srun --horovod=on tandem-ch-run (bullseye image)"; }
  [ "$(echo "$out" | grep -cE '^RANK [01] 2$')" -eq 2 ] || fail "tandem-ch-run: expected RANK 0 2 and RANK 1 2, got: $out"
  pass "srun -N 2 -n 2 --horovod=on tandem-ch-run <bullseye image> python3: the installed engine and package, 2 ranks"

  echo "== apt remove tandem tandem-dev"
  apt-get remove -y -q tandem tandem-dev >"$T/apt-remove.log" 2>&1 || { tail -n 30 "$T/apt-remove.log" >&2; fail "apt remove"; }
  dpkg-query -W -f='${Status}\n' tandem | contains 'deinstall ok config-files' || fail "tandem is not in state config-files"
  for l in "$link" /etc/containers/containers.conf.d/tandem.conf "$hook"; do
    [ ! -e "$l" ] && [ ! -L "$l" ] || fail "$l is still there after apt remove"
  done
  for f in plugstack.conf containers.conf enroot-hook.sh; do
    [ -f "/etc/tandem/$f" ] || fail "the conffile /etc/tandem/$f went with apt remove"
  done
  for f in "${installed[@]}"; do
    case $f in /etc/tandem/*) continue ;; esac
    [ -d "$f" ] && [ ! -L "$f" ] && continue  # shared directories (/usr/bin, ...)
    [ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f is left after apt remove"
  done
  [ ! -e "$tdir" ] || fail "$tdir is left after apt remove: $(find "$tdir" | head)"
  pass "remove: the links and every file are gone (byte-code too), the conffiles stay"
  out=$(run -N 2 -n 2 hostname 2>&1) || { echo "$out" >&2; fail "srun after apt remove"; }
  out=$(run -N 1 -n 1 --horovod=on true 2>&1) && fail "--horovod=on still accepted after remove"
  echo "$out" | contains "unrecognized option" || fail "srun --horovod=on after remove: $out"
  pass "srun works after apt remove (and --horovod is gone)"
  cluster_stop
  "$harness/cluster/start.sh" --name "$name" --dir "$cdir" --nodes 2 --cpus 4 --gpus 2 \
    --plugstack /etc/slurm/plugstack.conf >/dev/null || fail "the cluster does not start again after apt remove"
  out=$(run -N 2 -n 2 hostname 2>&1) || { echo "$out" >&2; fail "srun after a restart"; }
  pass "slurmctld and slurmd start again with the removed-not-purged package, and srun works"

  echo "== apt purge tandem"
  apt-get purge -y -q tandem >"$T/apt-purge.log" 2>&1 || { tail -n 30 "$T/apt-purge.log" >&2; fail "apt purge"; }
  dpkg-query -W -f='${Status}\n' tandem 2>/dev/null | contains 'config-files' && fail "tandem still has config files"
  # What apt changed in /etc is exactly the overlay's upper layer.
  left=$(cd "$T/ns/etc.up" && { find . -name '*tandem*'; grep -rlI tandem . 2>/dev/null || true; } | sort -u)
  [ -z "$left" ] || fail "left in /etc after purge: $left"
  [ ! -e /etc/tandem ] || fail "/etc/tandem is left after purge"
  out=$(run -N 2 -n 2 hostname 2>&1) || { echo "$out" >&2; fail "srun after apt purge"; }
  pass "purge: nothing of Tandem in /etc (names or contents), srun works"
  echo "$checks checks passed (inside)"
  exit 0
fi

# ============================================================ outside: build, check, then go in
T=$(mktemp -d /tmp/tandem-package.XXXXXX)
cleanup() { rm -rf "$T"; }
trap cleanup EXIT

if [ -z "$debs" ]; then
  echo "== build (clean clone of $(git -C "$root" rev-parse --short HEAD) in $work/src)"
  mkdir -p "$work"
  exec 9>"$work.lock"
  flock -w 1800 9 || fail "another package build holds $work.lock"
  rm -rf "${work:?}"/*
  git clone -q --no-hardlinks "$root" "$work/src"
  start=$(date +%s)
  (
    cd "$work/src"
    # Debian's meson, python3 and compilers, not a user's (pyenv, venvs).
    export PATH=/usr/sbin:/usr/bin:/sbin:/bin  # meson wraps the compilers in ccache itself
    export CCACHE_DIR=/var/cache/tandem-ccache
    export DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(nproc)"
    dpkg-checkbuilddeps
    dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1
  ) || { tail -n 40 "$work/build.log" >&2; fail "dpkg-buildpackage (log: $work/build.log)"; }
  echo "  dpkg-buildpackage: $(( $(date +%s) - start )) s; ccache: $(CCACHE_DIR=/var/cache/tandem-ccache ccache -s 2>/dev/null | grep -iE '^ *(hits|misses)' | tr -s ' ' | tr '\n' ';')"
  debs=$work
fi

echo "== the .deb"
deb=$(ls "$debs"/tandem_*.deb)
dev=$(ls "$debs"/tandem-dev_*.deb)
project_version=$(sed -n "s/^  version : '\(.*\)',/\1/p" "$root/meson.build")
series=$(printf '#include <slurm/slurm_version.h>\nSLURM_VERSION_NUMBER\n' | cpp -P - | tail -n 1)
series=$(printf '%d.%02d' $((series >> 16 & 255)) $((series >> 8 & 255)))
next=$(echo "$series" | awk -F. '{ printf "%d.%02d", $1, $2 + 1 }')
version=$(dpkg-deb -f "$deb" Version)
[[ $version == "$project_version"-*+slurm"$series" ]] || fail "version $version: expected $project_version-N+slurm$series"
[[ $(basename "$deb") == tandem_"$version"_$(dpkg --print-architecture).deb ]] || fail "file name $(basename "$deb")"
depends=$(dpkg-deb -f "$deb" Depends)
echo "$depends" | contains -F "slurm-wlm-basic-plugins (>= $series~), slurm-wlm-basic-plugins (<< $next~)" \
  || fail "Depends does not pin Slurm $series: $depends"
[ "$(dpkg-deb -f "$dev" Depends)" = "tandem (= $version)" ] || fail "tandem-dev Depends: $(dpkg-deb -f "$dev" Depends)"
pass "$(basename "$deb"): Depends $(echo "$depends" | grep -oE 'slurm-wlm-basic-plugins[^,]*, slurm-wlm-basic-plugins[^,]*')"
mkdir -p "$T/deb" "$T/dev"
dpkg-deb -R "$deb" "$T/deb"
dpkg-deb -x "$dev" "$T/dev"
conffiles=$(sort "$T/deb/DEBIAN/conffiles" | tr '\n' ' ')
[ "$conffiles" = "/etc/tandem/containers.conf /etc/tandem/enroot-hook.sh /etc/tandem/plugstack.conf " ] || fail "conffiles: $conffiles"
[ "$(readlink "$T/deb/etc/slurm/plugstack.conf.d/tandem.conf")" = ../../tandem/plugstack.conf ] || fail "no plugstack.conf.d link"
[ "$(readlink "$T/deb/etc/containers/containers.conf.d/tandem.conf")" = ../../tandem/containers.conf ] || fail "no containers.conf.d link"
[ "$(readlink "$T/deb/etc/enroot/hooks.d/50-tandem.sh")" = ../../tandem/enroot-hook.sh ] || fail "no enroot hooks.d link"
[ -x "$T/deb/etc/tandem/enroot-hook.sh" ] || fail "the enroot hook is not executable"
[ -L "$T/deb/etc/lmod/modules/tandem" ] || fail "no Lmod link"
pass "conffiles: $conffiles; plugstack.conf.d, containers.conf.d, enroot hooks.d and /etc/lmod/modules/tandem are links"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
tdir=/usr/lib/$multiarch/tandem
line=$(grep -v '^#' "$T/deb/etc/tandem/plugstack.conf")
[ "$line" = "required /usr/lib/$multiarch/slurm-wlm/tandem_spank.so engine=$tdir/libtandem.so.0 python=$tdir/python" ] \
  || fail "plugstack line: $line"
[ -f "$T/deb/usr/lib/$multiarch/slurm-wlm/tandem_spank.so" ] || fail "no plugin in Slurm's plugin dir"
[ -f "$T/deb$tdir/libtandem-preload.so" ] || fail "no $tdir/libtandem-preload.so (the plugin preloads it from beside the engine)"
for tool in tandem-ch-run tandem-oci-run; do
  [ -x "$T/deb/usr/bin/$tool" ] || fail "no /usr/bin/$tool"
done
[ ! -e "$T/deb$tdir/libtandem.so" ] && [ -L "$T/dev$tdir/libtandem.so" ] \
  || fail "libtandem.so (the -dev link) must be in tandem-dev only"
contains -x "Libs: -L\${prefix}/lib/$multiarch/tandem -ltandem -Wl,-rpath,$tdir" "$T/dev/usr/lib/$multiarch/pkgconfig/tandem.pc" \
  || fail "tandem.pc does not link with $tdir and its RUNPATH: $(grep Libs "$T/dev/usr/lib/$multiarch/pkgconfig/tandem.pc")"
strings "$T/deb/usr/lib/$multiarch/slurm-wlm/tandem_spank.so" | contains -x "$tdir/libtandem.so.0" \
  || fail "the plugin's default engine is not $tdir/libtandem.so.0"
grep -qF "$tdir/libtandem.so.0" "$T/deb$tdir/python/tandem/_config.py" || fail "python's _config.py does not load $tdir/libtandem.so.0"
pass "one folder $tdir: plugstack line, plugin default and python name its libtandem.so.0, the preload beside it; libtandem.so only in tandem-dev; tandem-ch-run, tandem-oci-run"
if [ -f "$debs/build.log" ]; then
  # dh's buildtype=plain drops the release defaults; debian/rules gives them back.
  # Every compile command: -DNDEBUG, and -O3 as the last -O (Debian's/RPM's -O2 comes first).
  read -r compiles bad < <(awk '/^\[[0-9]+\/[0-9]+\] .*(c\+\+|cc) .* -c / { n++; o = "";
      for (i = 1; i <= NF; i++) if ($i ~ /^-O/) o = $i
      if (o != "-O3" || $0 !~ / -DNDEBUG /) bad++ } END { print n + 0, bad + 0 }' "$debs/build.log")
  [ "$compiles" -gt 0 ] && [ "$bad" -eq 0 ] || fail "$bad of $compiles compiles without -DNDEBUG or with a later -O than -O3"
  pass "all $compiles compiles with -DNDEBUG and -O3 after Debian's -O2"
fi
if grep -rlI -e "$work/src" -e "$root" "$T/deb" "$T/dev"; then fail "a build or source path in an installed file (above)"; fi
pass "no source or build-tree path in any text file of the packages"

echo "== install, use, remove, purge in a throwaway namespace"
mkdir -p "$T/ns" "$T/harness/cluster"
cp "$root"/contrib/cluster/{start,stop,common}.sh "$T/harness/cluster/"
cp "$root"/examples/pytorch_mnist.py "$root"/examples/tensorflow2_keras_mnist.py "$T/harness/"
hide="$root"
[ -d "$work/src" ] && [ "$debs" = "$work" ] && hide="$hide $work/src"
[ -n "${BUILD:-}" ] && [ -d "$BUILD" ] && case "$(realpath "$BUILD")" in "$root"/*) ;; *) hide="$hide $(realpath "$BUILD")" ;; esac
cp "$0" "$T/test-deb.sh"
T=$T DEBS=$debs HIDE=$hide ROOT=$root WORK=$work TF_PYTHON=$tf_python MULTIARCH=$multiarch \
  unshare --mount --propagation private "$T/test-deb.sh" --inside
dpkg-query -W tandem >/dev/null 2>&1 && fail "tandem is installed on the machine after the test"
[ ! -e /etc/tandem ] && [ ! -e /etc/slurm/plugstack.conf.d/tandem.conf ] || fail "/etc of the machine changed"
pass "afterwards the machine has no tandem package and no /etc/tandem"
echo "$checks checks passed (outside)"
