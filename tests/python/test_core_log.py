"""The "tandem" logger (python/tandem/_log.py) follows the engine's log
variables: levels, the python subsystem, the line format, one clear error
for a bad value (at import, as the engine gives at init); the Python
tools' errors in the same format."""

import io
import logging
import os
import subprocess
import sys

import pytest

from tandem import _log


def configured(environ):
    stream = io.StringIO()
    _log.configure(environ, stream=stream)
    return stream


@pytest.fixture(autouse=True)
def restore():
    yield
    _log.configure({})


def test_quiet_by_default_warnings_carry_file_and_line():
    out = configured({"HOROVOD_RANK": "3", "HOROVOD_HOSTNAME": "node2"})
    _log.logger.info("not shown")
    _log.logger.warning("shown %d", 1)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tandem[r3 node2] WARN python test_core_log.py:"), lines
    assert lines[0].endswith(": shown 1"), lines


def test_levels_and_horovod_name():
    assert _log.level_from({}) == logging.WARNING
    assert _log.level_from({"TANDEM_LOG": "TRACE"}) == _log.TRACE
    assert _log.level_from({"TANDEM_LOG": "error"}) == logging.ERROR
    assert _log.level_from({"HOROVOD_LOG_LEVEL": "debug"}) == logging.DEBUG
    assert _log.level_from({"TANDEM_LOG": "info", "HOROVOD_LOG_LEVEL": "INFO"}) == logging.INFO
    out = configured({"TANDEM_LOG": "debug", "TANDEM_RANK": "0", "TANDEM_NODE_NAME": "n"})
    _log.logger.debug("d")
    _log.logger.log(_log.TRACE, "t")
    assert out.getvalue() == "tandem[r0 n] DEBUG python: d\n"


def test_bad_values_name_the_variable_and_value():
    with pytest.raises(ValueError, match=r"^TANDEM_LOG='loud': expected one of error, warn, "
                                         r"info, debug, trace; fix or unset the variable$"):
        _log.level_from({"TANDEM_LOG": "loud"})
    with pytest.raises(ValueError, match=r"^TANDEM_LOG='info' and HOROVOD_LOG_LEVEL='debug' "
                                         r"disagree; set only one of them$"):
        _log.level_from({"TANDEM_LOG": "info", "HOROVOD_LOG_LEVEL": "debug"})


def test_subsystem_filter_applies_below_warnings():
    out = configured({"TANDEM_LOG": "info", "TANDEM_LOG_SUBSYS": "tcp", "TANDEM_RANK": "1",
                      "TANDEM_NODE_NAME": "n"})
    _log.logger.info("python info, not selected")
    logging.getLogger("tandem.tcp").info("tcp info")
    _log.logger.error("python error")
    assert out.getvalue().splitlines() == ["tandem[r1 n] INFO tcp: tcp info",
                                           "tandem[r1 n] ERROR python: python error"]
    assert _log.subsystem_selected({"TANDEM_LOG_SUBSYS": "^python"}) is False
    assert _log.subsystem_selected({"TANDEM_LOG_SUBSYS": "^tcp"}) is True
    assert _log.subsystem_selected({"TANDEM_LOG_SUBSYS": "all"}) is True


def test_import_fails_with_the_message(py_env):
    env = dict(py_env, TANDEM_LOG="loud")
    r = subprocess.run([sys.executable, "-c", "import tandem"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode != 0
    assert "ValueError: TANDEM_LOG='loud': expected one of" in r.stderr, r.stderr


def test_library_load_is_logged_at_info(py_env):
    env = dict(py_env, TANDEM_LOG="info", TANDEM_RANK="0", TANDEM_NODE_NAME="here")
    r = subprocess.run([sys.executable, "-c", "import tandem; tandem.library_version()"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("tandem[r0 here] INFO python: libtandem "), r.stderr


def test_oci_run_errors_are_lines_of_the_one_log(build_dir, tmp_path):
    """tandem-oci-run (Slurm's --container wrapper) stops with one line in the
    tools' format, at every level and subsystem selection, and a bad
    TANDEM_LOG is named without hiding the error."""
    tool = str(build_dir / "tools" / "tandem-oci-run")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TANDEM_", "HOROVOD_"))}

    def run(args, **extra):
        r = subprocess.run([tool] + args, capture_output=True, text=True,
                           env=dict(env, **extra), timeout=60)
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert r.stdout == ""
        return r.stderr.splitlines()

    lines = run([])
    assert len(lines) == 1, lines
    assert lines[0].startswith("tandem-oci-run ERROR tools: expected an OCI runtime command "
                               "to run"), lines
    missing = tmp_path / "no-bundle"
    for extra in ({}, {"TANDEM_LOG": "error", "TANDEM_LOG_SUBSYS": "^tools"}):
        lines = run(["true", "-b", str(missing)], **extra)
        assert lines == ["tandem-oci-run ERROR tools: cannot read the bundle's %s/config.json: "
                         "[Errno 2] No such file or directory: '%s/config.json'; check the "
                         "runtime's -b/--bundle argument in oci.conf's RunTimeRun (%%b)"
                         % (missing, missing)], lines
    (tmp_path / "config.json").write_text("{not json")
    lines = run(["true", "--bundle=%s" % tmp_path], TANDEM_LOG="loud")
    assert len(lines) == 2, lines
    assert lines[0].startswith("tandem-oci-run ERROR tools: TANDEM_LOG='loud': expected one of"), lines
    assert lines[1].startswith("tandem-oci-run ERROR tools: cannot read the bundle's %s/config.json: "
                               % tmp_path), lines
