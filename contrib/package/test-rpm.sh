#!/usr/bin/env bash
# The RPM as far as Debian's rpm tools take it:
#
#  1. `meson dist` of a clean clone of HEAD -> tandem-<v>.tar.gz (what a site
#     downloads), then `rpmbuild -ta` on it, the spec found inside the tarball;
#  2. checks the RPMs: Release and Requires pinned to the Slurm series of the
#     header it compiled against, the one %config file, the enabling link,
#     the engine by its SONAME, NDEBUG and -O3 in every compile;
#  3. installs them with rpm into a scratch --root (nothing reaches this
#     machine) and erases them: the link and an unedited plugstack.conf go;
#     an edited one is kept as .rpmsave, which no `*.conf` include reads.
#
# Not checked here (no RPM distribution): BuildRequires and Requires against
# real RPMs (rpmbuild --nodeps; Debian has no slurm-devel RPM: Debian's
# /usr/include/slurm stands in), the Fedora/RHEL macros and brp scripts
# (Debian's rpm has neither %_vpath_builddir nor %_docdir; debuginfo is off),
# and Lmod's default path on RHEL (/usr/share/modulefiles).
#
#   contrib/package/test-rpm.sh
#
# Builds in /var/tmp/tandem-rpm (flock), a fixed path so that ccache
# (/var/cache/tandem-ccache) hits across runs.
set -euo pipefail

me=test-rpm.sh
root=$(cd "$(dirname "$0")/../.." && pwd)
work=/var/tmp/tandem-rpm
checks=0
pass() { checks=$((checks + 1)); echo "  ok: $*"; }
fail() { echo "$me: FAILED: $*" >&2; exit 1; }
# grep that reads all its input: `grep -q` exits at the first match and the
# writer then dies of SIGPIPE, which pipefail reports as a failure.
contains() { grep "$@" >/dev/null; }
command -v rpmbuild >/dev/null || fail "rpmbuild not found: apt-get install rpm (contrib/install-deps.sh)"

mkdir -p "$work"
exec 9>"$work.lock"
flock -w 1800 9 || fail "another RPM build holds $work.lock"
rm -rf "${work:?}"/*
export PATH=/usr/sbin:/usr/bin:/sbin:/bin  # Debian's meson and python3, not a user's
export CCACHE_DIR=/var/cache/tandem-ccache

echo "== meson dist (clean clone of $(git -C "$root" rev-parse --short HEAD))"
git clone -q --no-hardlinks "$root" "$work/src"
meson setup "$work/dist" "$work/src" -Dtests=disabled -Dcuda=disabled >"$work/dist.log" 2>&1 \
  || { tail -n 20 "$work/dist.log" >&2; fail "meson setup for dist"; }
meson dist -C "$work/dist" --formats gztar --no-tests >>"$work/dist.log" 2>&1 \
  || { tail -n 20 "$work/dist.log" >&2; fail "meson dist"; }
tarball=$(ls "$work"/dist/meson-dist/tandem-*.tar.gz)
tar -tzf "$tarball" | contains '/contrib/rpm/tandem.spec$' || fail "the spec is not in $tarball"
pass "$(basename "$tarball") holds contrib/rpm/tandem.spec"

echo "== rpmbuild -ta $(basename "$tarball")"
start=$(date +%s)
# nccl.h where contrib/install-python-envs.sh puts it when the toolkit has none.
cuda_root=${TANDEM_CUDA_ROOT:-/usr/local/cuda}
nccl_include=$cuda_root/include
[ -f "$nccl_include/nccl.h" ] || nccl_include=${TANDEM_DEPS:-/opt/tandem-deps}/nccl/include
rpmbuild -ta "$tarball" --nodeps --define "_topdir $work/rpmbuild" --define 'debug_package %{nil}' \
  --define "cuda_root $cuda_root" --define "nccl_include $nccl_include" \
  >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; fail "rpmbuild (log: $work/build.log)"; }
echo "  rpmbuild: $(( $(date +%s) - start )) s"
rpm=$(ls "$work"/rpmbuild/RPMS/*/tandem-0*.rpm)
devel=$(ls "$work"/rpmbuild/RPMS/*/tandem-devel-*.rpm)

echo "== the RPMs"
project_version=$(sed -n "s/^  version : '\(.*\)',/\1/p" "$root/meson.build")
n=$(printf '#include <slurm/slurm_version.h>\nSLURM_VERSION_NUMBER\n' | cpp -P - | tail -n 1)
series=$(printf '%d.%02d' $((n >> 16 & 255)) $((n >> 8 & 255)))
next=$(printf '%d.%02d' $((n >> 16 & 255)) $(((n >> 8 & 255) + 1)))
nvr=$(rpm -qp --qf '%{VERSION}-%{RELEASE}' "$rpm")
[ "$nvr" = "$project_version-1.slurm$series" ] || fail "version-release $nvr: expected $project_version-1.slurm$series"
rpm -qp --requires "$rpm" | contains -xF "(slurm >= $series with slurm < $next)" \
  || fail "Requires does not pin Slurm $series: $(rpm -qp --requires "$rpm" | tr '\n' ' ')"
pass "tandem-$nvr: Requires (slurm >= $series with slurm < $next)"
config=$(rpm -qcp "$rpm" | sort | tr '\n' ' ')
[ "$config" = "/etc/tandem/containers.conf /etc/tandem/enroot-hook.sh /etc/tandem/plugstack.conf " ] || fail "config files: $config"
rpm -qlvp "$rpm" | contains '/etc/slurm/plugstack.conf.d/tandem.conf -> ../../tandem/plugstack.conf' || fail "no enabling link"
rpm -qlvp "$rpm" | contains '/etc/containers/containers.conf.d/tandem.conf -> ../../tandem/containers.conf' || fail "no Podman drop-in link"
rpm -qlvp "$rpm" | contains '/etc/enroot/hooks.d/50-tandem.sh -> ../../tandem/enroot-hook.sh' || fail "no enroot hook link"
rpm -qlp "$rpm" | contains -x '/usr/lib64/tandem/libtandem.so' && fail "libtandem.so (the link for the linker) in the main package"
rpm -qlp "$devel" | contains -x '/usr/lib64/tandem/libtandem.so' || fail "libtandem.so not in tandem-devel"
pass "%config: $config; the plugstack.conf.d, containers.conf.d and enroot hooks.d links; libtandem.so only in tandem-devel"
# Every compile command: -DNDEBUG, and -O3 as the last -O (Debian's/RPM's -O2 comes first).
read -r compiles bad < <(awk '/^\[[0-9]+\/[0-9]+\] .*(c\+\+|cc) .* -c / { n++; o = "";
    for (i = 1; i <= NF; i++) if ($i ~ /^-O/) o = $i
    if (o != "-O3" || $0 !~ / -DNDEBUG /) bad++ } END { print n + 0, bad + 0 }' "$work/build.log")
[ "$compiles" -gt 0 ] && [ "$bad" -eq 0 ] || fail "$bad of $compiles compiles without -DNDEBUG or -O3 last"
pass "all $compiles compiles with -DNDEBUG and -O3"

echo "== rpm -i / -e in a scratch --root"
r=$work/root
# Debian's rpm warns on every install ("use Alien instead") unless told.
rpm_debian=""
rpm --force-debian --version >/dev/null 2>&1 && rpm_debian=--force-debian
mkdir -p "$r"
rpm --root "$r" --initdb
rpm --root "$r" $rpm_debian -i --nodeps "$rpm" "$devel"
line=$(grep -v '^#' "$r/etc/tandem/plugstack.conf")
[ "$line" = "required /usr/lib64/slurm/tandem_spank.so engine=/usr/lib64/tandem/libtandem.so.0 python=/usr/lib64/tandem/python" ] \
  || fail "plugstack line: $line"
[ "$(readlink -f "$r/etc/slurm/plugstack.conf.d/tandem.conf")" = "$r/etc/tandem/plugstack.conf" ] || fail "link after install"
[ "$(readlink -f "$r/etc/containers/containers.conf.d/tandem.conf")" = "$r/etc/tandem/containers.conf" ] || fail "Podman link after install"
[ -x "$r/etc/enroot/hooks.d/50-tandem.sh" ] || fail "the enroot hook is not an executable after install"
grep -qxF 'volumes = ["/usr/lib64/tandem:/usr/lib64/tandem:ro"]' "$r/etc/tandem/containers.conf" || fail "the Podman drop-in does not bind /usr/lib64/tandem"
grep -qF 'dir=${TANDEM_DIR:-/usr/lib64/tandem}' "$r/etc/tandem/enroot-hook.sh" || fail "the enroot hook does not bind /usr/lib64/tandem"
# The plugin preloads libtandem-preload.so from beside its engine= library.
for f in usr/lib64/slurm/tandem_spank.so usr/lib64/tandem/libtandem.so.0 usr/lib64/tandem/libtandem-preload.so \
         usr/bin/tandem-ch-run usr/bin/tandem-oci-run "usr/share/modulefiles/tandem/$project_version.lua" \
         "usr/share/modulefiles/tandem/$project_version" usr/lib64/tandem/python/horovod/torch/__init__.py; do
  [ -e "$r/$f" ] || fail "/$f is not installed"
done
ls "$r"/usr/share/man/man8/tandem_spank.8* >/dev/null 2>&1 || fail "no tandem_spank(8)"
pass "installed: $line"
rpm --root "$r" $rpm_debian -e tandem-devel tandem
[ -z "$(find "$r/etc" -name '*tandem*')" ] && [ ! -e "$r/usr/lib64/tandem" ] \
  || fail "left after rpm -e: $(find "$r/etc" "$r/usr/lib64/tandem" -name '*tandem*')"
pass "rpm -e: the links, the unedited configuration and the engine's folder are gone"
rpm --root "$r" $rpm_debian -i --nodeps "$rpm"
echo "# edited by the site" >>"$r/etc/tandem/plugstack.conf"
rpm --root "$r" $rpm_debian -e tandem
[ ! -e "$r/etc/slurm/plugstack.conf.d/tandem.conf" ] || fail "the link is left after rpm -e"
[ -f "$r/etc/tandem/plugstack.conf.rpmsave" ] || fail "the edited line was not kept as .rpmsave"
[ -z "$(find "$r/etc/slurm" -name '*.conf' -newer "$rpm")" ] || fail "a *.conf is left in /etc/slurm"
pass "rpm -e of an edited line: kept as /etc/tandem/plugstack.conf.rpmsave, no *.conf left for Slurm's include"
echo "$checks checks passed"
