"""A loopback package index: the wheels of local folders as a PEP 503 simple index on 127.0.0.1.

It stands in for an index a machine cannot reach (PyTorch's CPU wheel index, in CI and the tests)
with files this machine already holds, so the kit's own download path is the one exercised:

    python -m images.simpleindex [FOLDER ...] [--port N]

serves every wheel of the folders (none named: the find-links folders of this machine's pip
configuration, images.sources.pip_find_links) and prints its address on the first line of stdout,
e.g. ``http://127.0.0.1:40123/``, once it answers; it serves until stopped. Give that address as
DLREPRO_TORCH_CPU_INDEX (or to pip as --index-url). ``/`` lists the projects, ``/<project>/`` their
files with ``#sha256=`` fragments (computed on first request), ``/files/<name>`` the files. It binds
to the loopback address only.
"""

from __future__ import annotations

import argparse
import html
import http.server
import shutil
import sys
import threading
import urllib.parse
from pathlib import Path

from bench.errors import UsageError, run_cli
from images import external, sources

HOST = "127.0.0.1"


class _Handler(http.server.BaseHTTPRequestHandler):
    """GET of the root page, a project page or a file; 404 for anything else."""

    server: SimpleIndex

    def do_GET(self) -> None:  # noqa: N802 (the http.server API)
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if path.startswith("/files/"):
            self._file(path.removeprefix("/files/"))
            return
        project = path.strip("/")
        page = self.server.page(project) if project else self.server.root_page()
        self._send(page.encode() if page is not None else None, "text/html; charset=utf-8")

    def _send(self, body: bytes | None, kind: str) -> None:
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")

    def _file(self, name: str) -> None:
        path = self.server.files.get(name)
        if path is None:
            self._send(None, "text/plain")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(path.stat().st_size))
        self.end_headers()
        self.server.served.append(name)
        with open(path, "rb") as fh:
            shutil.copyfileobj(fh, self.wfile, 1 << 20)

    def log_message(self, *args) -> None:
        pass


class SimpleIndex(http.server.ThreadingHTTPServer):
    """The index over `folders` (wheels only), on 127.0.0.1:`port` (0: any free port). `served`
    lists the files fetched so far, in order."""

    daemon_threads = True

    def __init__(self, folders: list[Path], port: int = 0) -> None:
        self.files = {p.name: p for folder in folders for p in sorted(Path(folder).glob("*.whl"))}
        self.served: list[str] = []
        self._sha256: dict[str, str] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        super().__init__((HOST, port), _Handler)

    @property
    def url(self) -> str:
        """The index's address (what pip calls an index URL)."""
        return f"http://{HOST}:{self.server_port}/"

    def projects(self) -> dict[str, list[str]]:
        """Normalized project name -> the names of its files."""
        out: dict[str, list[str]] = {}
        for name in self.files:
            out.setdefault(sources.norm(name.split("-", 1)[0]), []).append(name)
        return out

    def root_page(self) -> str:
        """The index's root page: one link per project."""
        links = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(self.projects()))
        return f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n"

    def page(self, project: str) -> str | None:
        """A project's page: one link per file, with its sha256; None for an unknown project."""
        names = self.projects().get(project)
        if names is None:
            return None
        links = "".join(f'<a href="../files/{urllib.parse.quote(n)}#sha256={self.sha256(n)}">{html.escape(n)}</a>\n'
                        for n in names)
        return f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n"

    def sha256(self, name: str) -> str:
        """A served file's sha256, computed once."""
        with self._lock:
            if name not in self._sha256:
                self._sha256[name] = external.file_sha256(self.files[name])
            return self._sha256[name]

    def __enter__(self) -> SimpleIndex:
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


def main(argv: list[str] | None = None) -> int:
    """`python -m images.simpleindex [FOLDER ...] [--port N]`: serve until stopped."""
    ap = argparse.ArgumentParser(prog="python -m images.simpleindex", description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help="wheel folders (default: pip's configured find-links)")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free one)")
    args = ap.parse_args(argv)

    def serve(_: object) -> int:
        folders = args.folders or sources.pip_find_links()
        if not folders or not all(f.is_dir() for f in folders):
            named = " ".join(map(str, args.folders)) or "pip has no find-links"
            raise UsageError(f"no wheel folder to serve ({named})",
                             "name existing folders holding the wheels: python -m images.simpleindex DIR")
        try:
            index = SimpleIndex(folders, args.port)
        except OSError as exc:
            raise UsageError(f"cannot listen on {HOST}:{args.port} ({exc.strerror})", "pick another --port") from None
        print(index.url, flush=True)
        print(f"serving {len(index.files)} wheels of {', '.join(map(str, folders))}", file=sys.stderr, flush=True)
        try:
            index.serve_forever()
        except KeyboardInterrupt:
            pass  # Ctrl-C is how it is meant to stop
        finally:
            index.server_close()
        return 0

    return run_cli(serve, None)


if __name__ == "__main__":
    sys.exit(main())
