"""The payload's CPython 3.6 gate: what paper-era images (CPython 3.6) run must be 3.6 code.

Every Python file of the payload (bench/) except the current-era framework modules
(bench/frameworks/<framework>/current.py and current_*.py, Python 3.11 only) is checked three ways, each by
its own means:

1. the grammar: ``ast.parse(source, feature_version=(3, 6))`` refuses syntax 3.6 lacks (the
   walrus, positional-only parameters, parenthesized context managers, ``match``, ...);
2. the library: vermin (``--target=3.6- --eval-annotations``) flags standard-library modules,
   members and keyword arguments newer than 3.6 (dataclasses, importlib.metadata, datetime.UTC,
   subprocess.run(text=...)), ``from __future__ import annotations`` and ``list[int]``-style
   annotations, which 3.6 evaluates when it defines a function;
3. the imports: only the standard library, NumPy, psutil, nvidia-ml-py (``pynvml``) and bench
   itself (a paper-era framework module, and a collective module of bench/collectives, also its own
   framework's packages: its declaration's `imports`, bench/frameworks/<framework>/__init__.py), and
   none of the NumPy names newer than the paper era's NumPy 1.14.

    python -m images.compat [FILE_OR_FOLDER ...]     (default: the payload core)

prints one line per violation and exits 1 when there is any. `make lint` runs it.
"""

import argparse
import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from bench import frameworks

REPO = Path(__file__).resolve().parents[1]
PAYLOAD = REPO / "bench"
# The era whose framework modules are exempt from the gate: they run only on the current era's Python.
EXEMPT_ERA = "current"
TARGET = (3, 6)
THIRD_PARTY = {"numpy", "psutil", "pynvml"}
# NumPy names the payload core may not use: added after NumPy 1.14 (the paper era's).
NEWER_NUMPY = {
    "default_rng": "1.17", "Generator": "1.17", "PCG64": "1.17", "SeedSequence": "1.17", "BitGenerator": "1.17",
    "sliding_window_view": "1.20", "typing": "1.20",
}


def exempt(path: Path) -> bool:
    """Whether a payload file is a current-era framework module (bench/frameworks/<framework>/current*.py)."""
    return path.parent.parent.name == "frameworks" and frameworks.module_era(path.stem) == EXEMPT_ERA


def framework_packages(path: Path) -> set[str]:
    """What a framework module (bench/frameworks/<framework>/<era>.py) or a collective module
    (bench/collectives/<framework>.py) may import beside THIRD_PARTY: its framework's declared packages."""
    if path.parent.parent.name == "frameworks" and path.stem != "__init__":
        name = path.parent.name
    elif path.parent.name == "collectives":
        name = path.stem
    else:
        return set()
    return set(frameworks.declaration(name).imports) if name in frameworks.discovered() else set()


def core_files(root: Path = PAYLOAD) -> list[Path]:
    """The payload's Python files the gate covers: everything under bench/ but the exempt modules."""
    return sorted(p for p in Path(root).rglob("*.py") if "__pycache__" not in p.parts and not exempt(p))


def grammar_violations(path: Path) -> list[str]:
    """'path:line: ...' when the file does not parse as CPython 3.6."""
    try:
        ast.parse(path.read_text(encoding="utf-8"), str(path), feature_version=TARGET)
    except SyntaxError as exc:
        return [f"{path}:{exc.lineno}: not CPython 3.6 syntax: {exc.msg}"]
    return []


def import_violations(path: Path) -> list[str]:
    """Imports outside the standard library, NumPy, psutil, pynvml and bench; NumPy names newer than 1.14."""
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    allowed = set(sys.stdlib_module_names) | THIRD_PARTY | {"bench"} | framework_packages(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module.split(".")[0] == "numpy":
                names += [f"numpy.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute) and node.attr in NEWER_NUMPY:
            out.append(f"{path}:{node.lineno}: .{node.attr} is NumPy >= {NEWER_NUMPY[node.attr]} (the paper era "
                       "has NumPy 1.14)")
            continue
        else:
            continue
        for name in names:
            top, last = name.split(".")[0], name.split(".")[-1]
            if top not in allowed:
                out.append(f"{path}:{node.lineno}: imports {name}: the payload core may use only the standard "
                           "library, numpy, psutil and pynvml (a framework module also its framework)")
            elif top == "numpy" and last in NEWER_NUMPY:
                out.append(f"{path}:{node.lineno}: imports {name} (NumPy >= {NEWER_NUMPY[last]})")
    return out


def library_violations(paths: Iterable[Path]) -> list[str]:
    """vermin's findings of anything newer than CPython 3.6, one line per finding."""
    paths = [str(p) for p in paths]
    if not paths:
        return []
    # vermin has no `python -m` entry; its console script is vermin:main.
    cmd = [sys.executable, "-c", "import sys, vermin; sys.exit(vermin.main())", "--target=3.6-",
           "--eval-annotations", "--violations", "--no-tips", "--no-parse-comments", "-q", *paths]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or "No module named" in proc.stderr:
        raise RuntimeError(f"vermin did not run (exit {proc.returncode}): {proc.stderr.strip()[-300:]}; "
                           "run 'make host'")
    lines, current = [], None
    for line in proc.stdout.splitlines():
        if line.startswith("!2, ") and " " in line.strip():
            current = line.split()[-1]  # the file vermin speaks of next
        elif line.startswith("  ") and current and " require" in line:
            lines.append(f"{current}: {line.strip()}")
        elif line.startswith(("Minimum required", "Incompatible", "Target versions not met", "Note:")):
            continue
    if proc.returncode == 1 and not lines:
        lines.append(f"vermin: target 3.6 not met ({proc.stdout.strip()[-300:]})")
    return lines


def violations(paths: Iterable[Path]) -> list[str]:
    """Every violation of the gate in the given files."""
    paths = list(paths)
    found = []
    for path in paths:
        grammar = grammar_violations(path)
        found += grammar or import_violations(path)
    return found + library_violations(paths)


def _expand(args: list[str]) -> list[Path]:
    paths = []
    for arg in args:
        p = Path(arg)
        paths += sorted(p.rglob("*.py")) if p.is_dir() else [p]
    return paths


def main(argv: list[str] | None = None) -> int:
    """Check the given files or folders (default: the payload core); exit 1 on any violation."""
    ap = argparse.ArgumentParser(prog="python -m images.compat", description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*",
                    help="files or folders (default: bench/ without bench/frameworks/*/current*.py)")
    args = ap.parse_args(argv)
    paths = _expand(args.paths) if args.paths else core_files()
    found = violations(paths)
    for line in found:
        print(line)
    print(f"CPython 3.6 gate: {len(paths)} files, {len(found)} violations", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
