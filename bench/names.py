"""Plain names: what a user-given name must be before the kit makes a path of it.

A campaign, dataset, workload, framework, era or target name becomes one folder or file name
(results/<campaign>, data/prepared/<dataset>, studies/<study>/workloads/<workload>.toml, ...). A plain name
cannot climb out of its folder ('..', '/'), be absolute, hide itself (a leading '.') or carry a
character a shell or a file system treats specially. Standard library only, CPython 3.6-clean.
"""

import re

from bench.errors import UsageError

# No leading '.' or '-': hidden files, and names a command line reads as options.
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Well inside every file system's 255-byte limit on one name, with room for the suffixes the kit adds.
MAX_LENGTH = 100
RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, no '..'"


def is_plain(name: str) -> bool:
    """Whether `name` is a plain name (RULE, at most MAX_LENGTH characters)."""
    return (isinstance(name, str) and len(name) <= MAX_LENGTH and _PLAIN.fullmatch(name) is not None
            and ".." not in name)


def check_plain(name: str, variable: str, example: str) -> str:
    """Return `name` when it is plain, else a UsageError naming the setting (`variable`, e.g. CAMPAIGN) and an
    `example` of a good value."""
    if not is_plain(name):
        raise UsageError(f"{variable} must be a plain name ({RULE}), got '{name}'", f"set e.g. {variable}={example}")
    return name
