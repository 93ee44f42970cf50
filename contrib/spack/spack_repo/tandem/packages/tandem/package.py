# Tandem for Spack: Horovod-style data-parallel training on Slurm.
#
#   spack repo add contrib/spack/spack_repo/tandem
#   spack develop --path <the Tandem tree> --no-clone tandem@=0.1.0   # inside a Spack environment
#   spack add tandem+cuda ^slurm@22-05   # Slurm as an external (packages.yaml): the site's own
#   spack install
#
# docs/install.md has the whole path (packages.yaml for Slurm, the plugstack
# line, the module). Slurm must be the site's own, as an external: the plugin
# loads only into the Slurm release series it was compiled against, so the
# concretized slurm's version is part of this package's hash.
from spack.package import *

try:  # Spack >= 1.0: build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.meson import MesonPackage
except ImportError:  # older Spack: part of spack.package
    from spack.package import MesonPackage


class Tandem(MesonPackage):
    """Horovod-style data-parallel training on Slurm: srun --horovod=on
    binds each task to its GPU, CPUs and NIC, gives it its rank, runs the
    step under PMIx and preloads Tandem's collective engine, so scripts
    written for horovod.torch or horovod.tensorflow run unchanged in the
    user's own environment."""

    # No public download yet: `spack develop` builds from a checkout (above).
    license("Apache-2.0")

    version("0.1.0")

    variant("cuda", default=True,
            description="Build the NCCL path (CUDA and NCCL headers at build time; "
                        "the libraries are loaded at run time)")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("meson@1.0:", type="build")
    depends_on("pkgconfig", type="build")
    # tandem-info and the man page renderer are Python scripts.
    depends_on("python@3.8:", type=("build", "run"))
    depends_on("hwloc@2:")
    depends_on("pmix@4:")
    # Only spank.h and slurm_version.h are used; the plugin must run inside
    # this Slurm, so the site's Slurm should be an external.
    depends_on("slurm@22-05:", type=("build", "run"))
    depends_on("cuda", type="build", when="+cuda")
    depends_on("nccl", type=("build", "run"), when="+cuda")

    def meson_args(self):
        spec = self.spec
        args = [
            "-Dtests=disabled",
            "-Dslurm_plugindir={0}".format(join_path(self.prefix.lib, "slurm")),
        ]
        if spec.satisfies("+cuda"):
            args += [
                "-Dcuda=enabled",
                "-Dcudadir={0}".format(spec["cuda"].prefix),
                "-Dnccl_include={0}".format(spec["nccl"].prefix.include),
            ]
        else:
            args.append("-Dcuda=disabled")
        return args

    def setup_run_environment(self, env):
        # What `module load tandem` gives a login shell (etc/modulefiles):
        # the Python packages and the engine they load, in the one folder
        # <libdir>/tandem that container runtimes bind (docs/containers.md).
        env.prepend_path("PYTHONPATH", join_path(self.prefix.lib, "tandem", "python"))
        env.set("TANDEM_LIBRARY", join_path(self.prefix.lib, "tandem", "libtandem.so.0"))
        if self.spec.satisfies("+cuda"):
            # The engine dlopen()s NCCL; name Spack's, not whatever ld.so finds.
            env.set("TANDEM_NCCL_LIBRARY",
                    join_path(self.spec["nccl"].prefix.lib, "libnccl.so.2"))

    @run_after("install")
    def plugstack_hint(self):
        tty.msg("Tandem's plugstack line is {0}: include it from Slurm's plugstack.conf on "
                "every node and submit host (man 8 tandem_spank)".format(
                    join_path(self.prefix.etc, "tandem", "plugstack.conf")))
