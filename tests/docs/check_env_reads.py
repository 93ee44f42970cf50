#!/usr/bin/python3
"""The C and C++ code reads the environment only through the settings reader
(engine/common/settings.{h,cc}) and the variables its table declares
(engine/common/settings_table.h):

- a direct read (getenv, secure_getenv, std::getenv, environ, spank_getenv)
  in engine/, plugin/ or tools/ is an error naming file:line, unless the
  file is the reader itself or is listed in ALLOWED below with its reason;
- a reader call with a literal name, or a constant of the file or the
  headers defining one (kFooVariable = "TANDEM_FOO"), must name a declared
  setting (kSettings) or a listed launcher fact (kEnvironmentFacts).

The Python package (python/) has no settings reader of its own: it reads a
few variables with os.environ, and is not checked here.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = ROOT / "engine" / "common" / "settings_table.h"
READER = "engine/common/settings.cc"
SCANNED = ("engine", "plugin", "tools")
SUFFIXES = (".c", ".cc", ".h", ".cpp")

# The one list of places that read the environment without the reader, each
# with its reason. Everything else goes through engine/common/settings.h.
ALLOWED = {
    "engine/common/log.cc":
        "the log is configured before anything else, in the plugin and the tools too, which "
        "link it without the reader; its variables (TANDEM_LOG, HOROVOD_LOG_LEVEL, "
        "TANDEM_LOG_SUBSYS) are declared in the table and documented",
    "engine/preload/preload.c":
        "the preload shim is C, loaded by ld.so before the engine exists; it reads "
        "TANDEM_LIBRARY, TANDEM_PYTHONPATH and PYTHONPATH to load the engine",
    "plugin/elastic_job.cc":
        "HOME and SLURM_CLUSTER_NAME in srun: the launcher's environment, where the plugin "
        "keeps the elastic job's file",
    "plugin/local.cc":
        "srun's own environment (SLURM_KILL_BAD_EXIT, SLURM_MPI_TYPE, the --horovod "
        "option's SLURM_SPANK_ variable): the plugin predicts what srun will do",
    "plugin/plugin_log.cc":
        "the plugin's log reads the task's environment before the reader could be "
        "configured (TaskEnv over the process's environment)",
    "plugin/spank_task_env.cc":
        "the job's environment as slurmstepd holds it (spank_getenv), which the plugin "
        "reads and sets for each task",
    "tools/tandem-bench-device.cc":
        "a benchmark over the C API that links only libtandem (whose internals are hidden): "
        "it loads the CUDA runtime and picks the device as the GPU path documents "
        "(TANDEM_CUDA_LIBRARY, TANDEM_GPU_DEVICE) before the engine is initialised",
    "tools/tandem-whoami.cc":
        "prints the identity the plugin set (HOROVOD_RANK, ..., PMIX_RANK, "
        "CUDA_VISIBLE_DEVICES) as it is, to show what a task received",
}

DIRECT = re.compile(r"\b(?:secure_getenv|getenv|spank_getenv)\s*\(|\benviron\b")
READERS = ("env_int", "env_int_if_set", "env_double", "env_milliseconds", "env_bool",
           "env_string", "env_value", "declared_getenv", "environment_fact",
           "setting_declaration", "declared_default_int", "declared_default_number",
           "env::get", "env::get_int")
CALL = re.compile(r"(?<![\w:])(" + "|".join(re.escape(r) for r in READERS) +
                  r")\s*\(\s*(\"[A-Za-z0-9_]+\"|k\w+)")
CONSTANT = re.compile(r"constexpr\s+const\s+char\s*\*\s*(?:const\s+)?(k\w+)\s*=\s*\"([A-Z0-9_]+)\"")


def strip_comments(text):
    """The text with comments blanked out, keeping line numbers."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])'",
                  lambda m: m.group(0) if m.group(0)[0] in "\"'" else blank(m), text, flags=re.S)


def declared():
    text = TABLE.read_text()
    settings = set()
    for name, horovod in re.findall(r'\{"([A-Z0-9_]+)",\s*(?:nullptr|"([A-Z0-9_]+)"),\s*SettingType::', text):
        settings.add(name)
        if horovod:
            settings.add(horovod)
    facts = set(re.findall(r'\{"([A-Z0-9_]+)",\s*"[^"]*"\}', text.split("kEnvironmentFacts[]", 1)[1]))
    return settings, facts


def sources():
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES:
                yield path


def check(files=None):
    settings, facts = declared()
    errors = []
    paths = list(files) if files is not None else list(sources())
    texts = {p: strip_comments(p.read_text(errors="replace")) for p in paths}
    constants = {}
    for text in texts.values():
        constants.update(CONSTANT.findall(text))
    for path, text in texts.items():
        rel = path.relative_to(ROOT).as_posix()
        for number, line in enumerate(text.splitlines(), 1):
            if rel != READER and rel not in ALLOWED and DIRECT.search(line):
                errors.append(f"{rel}:{number}: reads the environment around the settings reader: "
                              "use engine/common/settings.h (declare the variable in "
                              "engine/common/settings_table.h), or list the file in "
                              "tests/docs/check_env_reads.py ALLOWED with the reason")
            for reader, arg in CALL.findall(line):
                name = arg.strip('"') if arg.startswith('"') else constants.get(arg)
                if name is None:
                    continue  # a parameter: checked where the caller names it
                known = facts if reader == "environment_fact" else settings | (
                    facts if reader == "env::get" else set())
                if name not in known:
                    errors.append(f"{rel}:{number}: {reader}({name}): {name} is not declared in "
                                  "engine/common/settings_table.h")
    for rel in sorted(ALLOWED):
        if not (ROOT / rel).is_file():
            errors.append(f"tests/docs/check_env_reads.py: ALLOWED names {rel}, which does not exist: remove it")
    return errors, len(paths)


def main():
    errors, count = check()
    for e in errors:
        print(e)
    print(f"{count} C/C++ files checked; {len(ALLOWED)} allowed to read the environment directly")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
