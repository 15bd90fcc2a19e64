"""How the run's Python was built, and the base image it was built in, read from the run's own files.

Paper-vs-current time ratios depend on more than the framework versions: the registry's
python:3.6.15-slim-buster was configured with --enable-optimizations (profile-guided optimization,
PGO), a CPython compiled here by ``make base ERA=paper`` may not be, and the compiler differs. So a
run records its interpreter's build as the interpreter itself reports it (``python_build()``:
sysconfig's CONFIG_ARGS and OPT, platform.python_compiler()), and, in an image built on the kit's own
base, that base's record (``base_record()``: /etc/dlrepro/base.json, written by ``make base``: which
CPython source, its sha256, python.org's file or a stand-in, which Debian, how it departs from the
registry image). An image on another base, and every environment outside an image, has no such file:
nothing is recorded then.

Only the options that describe the build are kept: none that names a folder (``--prefix``,
``LDFLAGS=-L/home/...``), so a shared run.json names no folder of the machine it ran on.
Standard library only, CPython 3.6-clean.
"""

import json
import platform
import shlex
import sysconfig
from typing import Any, Dict, List, Optional

# Written into the kit's paper-era base by `make base ERA=paper` (images/base).
BASE_FILE = "/etc/dlrepro/base.json"
# configure's options for profile-guided optimization and link-time optimization.
PGO_OPTION = "--enable-optimizations"
LTO_OPTION = "--with-lto"
# configure options worth recording: feature switches, not install locations or tool variables.
_OPTION_PREFIXES = ("--enable-", "--disable-", "--with-", "--without-")


def python_build(config_args: Optional[str] = None, opt: Optional[str] = None) -> Dict[str, Any]:
    """run.json's environment.python_build: {implementation, version, compiler, configure (the feature
    options configure was given), pgo, lto (whether configure asked for them), opt (the optimization
    flags every C file was compiled with)}; `config_args` and `opt` default to this interpreter's."""
    if config_args is None:
        config_args = sysconfig.get_config_var("CONFIG_ARGS") or ""
    if opt is None:
        opt = sysconfig.get_config_var("OPT") or ""
    options = build_options(config_args)
    return {
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "compiler": platform.python_compiler() or None,
        "configure": options,
        "pgo": PGO_OPTION in options,
        "lto": any(o == LTO_OPTION or o.startswith(LTO_OPTION + "=") for o in options),
        "opt": " ".join(flag for flag in opt.split() if "/" not in flag) or None,
    }


def build_options(config_args: str) -> List[str]:
    """The feature options among configure's arguments (CONFIG_ARGS, shell-quoted), in their order: those
    that name a folder, and the install locations and tool variables, left out."""
    try:
        words = shlex.split(config_args)
    except ValueError:  # unbalanced quotes: read it word by word
        words = config_args.split()
    return [w for w in words if w.startswith(_OPTION_PREFIXES) and "/" not in w]


def base_record(path: str = BASE_FILE) -> Optional[Dict[str, Any]]:
    """The base image's record (the JSON object at `path`), or None when this environment has none. A file
    that is not a JSON object raises ValueError: the image was built wrong, and the caller says so."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    record = json.loads(text)
    if not isinstance(record, dict):
        raise ValueError(f"{path} holds {type(record).__name__}, not a JSON object")
    return record
