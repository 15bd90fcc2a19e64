"""bench/pythonbuild.py: how the run's Python was built (from the interpreter's own sysconfig) and the base image
record (/etc/dlrepro/base.json) a run in an image on the kit's own base carries into run.json."""

import json
import platform
import shlex
import subprocess
import sysconfig
from pathlib import Path

import pytest

from bench import entrypoint, pythonbuild, schema
from tests.runrecord import minimal_run

# python:3.6.15-slim-buster's CONFIG_ARGS (the registry image's Dockerfile configures it so: PGO, no LTO).
REGISTRY_CONFIG_ARGS = ("'--build=x86_64-linux-gnu' '--enable-loadable-sqlite-extensions' '--enable-optimizations' "
                        "'--enable-option-checking=fatal' '--enable-shared' '--with-system-expat' '--with-system-ffi' "
                        "'--without-ensurepip' 'build_alias=x86_64-linux-gnu'")
# The record `make base ERA=paper` writes (images/pythonsource.py base_record), every value a string.
BASE = {"era": "paper", "debian_release": "bullseye", "debian_version": "11.11", "python": "3.6.15",
        "source": "Python-3.6.15.tar.xz", "source_sha256": "ab" * 32, "source_kind": "stand-in",
        "configure": "--build=x86_64-linux-gnu --prefix=/usr/local --enable-shared", "pgo": "no",
        "cc": "gcc (Debian 10.2.1-6) 10.2.1 20210110", "departs_from": "CPython 3.6.15 built here from a stand-in"}


def test_the_build_recorded_is_what_this_interpreters_sysconfig_says():
    record = pythonbuild.python_build()
    words = shlex.split(sysconfig.get_config_var("CONFIG_ARGS") or "")
    assert record["version"] == platform.python_version() and record["compiler"] == platform.python_compiler()
    assert record["pgo"] == ("--enable-optimizations" in words)  # this machine's 3.11: as it was configured
    assert record["lto"] == any(w.startswith("--with-lto") for w in words)
    assert set(record["configure"]) <= set(words) and not any("/" in o for o in record["configure"])
    assert not any(w.startswith("--prefix") for w in record["configure"])  # an install folder names the machine
    assert record["opt"] and set(record["opt"].split()) <= set(sysconfig.get_config_var("OPT").split())


def test_the_registry_images_configure_reads_as_pgo_without_lto():
    record = pythonbuild.python_build(REGISTRY_CONFIG_ARGS, "-DNDEBUG -g -fwrapv -O3 -Wall")
    assert record["configure"] == [
        "--enable-loadable-sqlite-extensions", "--enable-optimizations", "--enable-option-checking=fatal",
        "--enable-shared", "--with-system-expat", "--with-system-ffi", "--without-ensurepip"]
    assert (record["pgo"], record["lto"], record["opt"]) == (True, False, "-DNDEBUG -g -fwrapv -O3 -Wall")


def test_options_that_name_a_folder_of_the_machine_are_left_out():
    record = pythonbuild.python_build("'--prefix=/home/alice/py' '--with-lto' '--with-openssl=/home/alice/ssl' "
                                      "'LDFLAGS=-L/home/alice/lib'", "-O3 -I/home/alice/include")
    assert (record["configure"], record["lto"], record["pgo"], record["opt"]) == (["--with-lto"], True, False, "-O3")
    assert "alice" not in json.dumps(record)


def test_no_base_file_is_no_record_and_a_file_not_holding_an_object_is_refused(tmp_path):
    assert pythonbuild.base_record(str(tmp_path / "base.json")) is None
    (tmp_path / "base.json").write_text("[1]")
    with pytest.raises(ValueError, match=r"^.*base\.json holds list, not a JSON object$"):
        pythonbuild.base_record(str(tmp_path / "base.json"))


def test_a_run_records_its_python_build_and_its_base_and_reads_back(tmp_path, capsys):
    (tmp_path / "base.json").write_text(json.dumps(BASE))
    record = minimal_run()
    entrypoint.record_build(record["environment"], str(tmp_path / "base.json"))
    assert record["environment"]["base"] == BASE
    assert record["environment"]["python_build"] == pythonbuild.python_build()
    schema.write_run(tmp_path, record)
    assert schema.read_run(tmp_path)["environment"]["base"]["source_kind"] == "stand-in"
    assert capsys.readouterr().err == ""


def test_a_malformed_base_record_is_one_line_in_the_log_and_left_out(tmp_path, capsys):
    base = tmp_path / "base.json"
    base.write_text(json.dumps(dict(BASE, source_kind="mirror")))
    record = minimal_run()
    entrypoint.record_build(record["environment"], str(base))
    assert "base" not in record["environment"] and "python_build" in record["environment"]
    assert capsys.readouterr().err == (f"warning: {base} not recorded: source_kind 'mirror' is not one of "
                                       "('python.org', 'stand-in')\n")
    base.write_text("{not json")
    entrypoint.record_build(record["environment"], str(base))
    assert capsys.readouterr().err.startswith(f"warning: {base} not recorded: Expecting property name")
    schema.write_run(tmp_path, record)  # the run's record stays valid


PAPER_BASE = "dlrepro/base:paper"  # `make base ERA=paper`'s alias (images/base/make-paper-base.sh)


@pytest.mark.slow
@pytest.mark.paper_image
def test_in_the_paper_base_the_build_recorded_agrees_with_the_bases_own_labels():
    """CPython 3.6.15 in the kit's paper base: bench.pythonbuild (run by that interpreter) reads PGO as the base's
    label org.dlrepro.python-pgo says it was built, and the base record as its labels carry it."""
    inspect = subprocess.run(["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", PAPER_BASE],
                             capture_output=True, text=True, timeout=60)
    if inspect.returncode != 0:
        pytest.skip(f"no {PAPER_BASE} on this engine (make base ERA=paper)")
    labels = json.loads(inspect.stdout)
    repo = Path(__file__).resolve().parents[2]
    script = ("import json; from bench import pythonbuild; "
              "print(json.dumps([pythonbuild.python_build(), pythonbuild.base_record()]))")
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", "-v", f"{repo / 'bench'}:/src/bench:ro",
                           "-w", "/src", PAPER_BASE, "python3", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    build, base = json.loads(proc.stdout)
    assert build["version"] == "3.6.15" == base["python"]
    assert build["pgo"] == (labels["org.dlrepro.python-pgo"] == "yes") == (base["pgo"] == "yes")
    assert set(build["configure"]) <= set(labels["org.dlrepro.python-configure"].split())
    assert base["source_sha256"] == labels["org.dlrepro.python-source-sha256"]
    assert schema.base_problem(base) is None  # what a run in an image on this base records
