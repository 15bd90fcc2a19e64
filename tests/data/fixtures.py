"""Helpers for the data tests: a loopback HTTP server and small raw files in the real formats.

Kept out of conftest.py on purpose (others own it); test modules import what they need.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

from data import synthetic
from data.download import download
from data.paths import prepared_dir
from data.prepare import prepare

# Small sizes keep every test fast; the generators are the same as for the demo data.
MNIST_SIZES = (120, 40)
IMDB_SIZES = (40, 20)
# The other datasets' test sizes (ptb: lines of train, and of valid and test each; manythings:
# train + test = pairs in the zip, which prepare splits 4:1).
DATASET_SIZES: dict[str, tuple[int, int]] = {
    "cifar10": (100, 40),
    "cifar100": (200, 50),
    "svhn": (100, 40),
    "ptb": (300, 60),
    "manythings": (160, 40),
    "voc2012": (6, 4),  # images in train.txt and val.txt of the synthetic tar (data/voc.py)
}


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (free port) serving ``files`` {url path: bytes}.

    It honours ``Range: bytes=N-`` (206 with Content-Range, 416 past the end) unless
    ``ignore_range`` is set (then it answers 200 with the whole file, as some servers do).
    ``cut(n, times)`` makes the next ``times`` responses stop after ``n`` body bytes and close
    the connection, with the full Content-Length announced. Every request is recorded in
    ``requests`` as (path, Range header or None, status).
    """

    def __init__(self, files: dict[str, bytes] | None = None):
        self.files: dict[str, bytes] = dict(files or {})
        self.requests: list[tuple[str, str | None, int]] = []
        self.ignore_range = False
        self._cut_after: int | None = None
        self._cuts_left = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, once per test.
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        """Base URL, without a trailing slash."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def cut(self, after_bytes: int, times: int = 1) -> None:
        """Cut the next ``times`` responses after ``after_bytes`` bytes of body."""
        with self._lock:
            self._cut_after, self._cuts_left = after_bytes, times

    def paths(self) -> list[str]:
        """Paths requested so far, in order."""
        return [path for path, _, _ in self.requests]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _take_cut(self) -> int | None:
        with self._lock:
            if self._cuts_left <= 0:
                return None
            self._cuts_left -= 1
            return self._cut_after

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                path, wanted = self.path, self.headers.get("Range")
                data = server.files.get(path)
                if data is None:
                    server.requests.append((path, wanted, 404))
                    self.send_error(404)
                    return
                start, status = 0, 200
                if wanted and not server.ignore_range:
                    start = int(wanted.removeprefix("bytes=").split("-")[0])
                    if start >= len(data):
                        server.requests.append((path, wanted, 416))
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    status = 206
                server.requests.append((path, wanted, status))
                body = data[start:]
                self.send_response(status)
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                cut = server._take_cut()
                self.wfile.write(body if cut is None else body[:cut])
                self.wfile.flush()
                self.close_connection = True

        return Handler


def sha256(data: bytes) -> str:
    """Hex sha256 of bytes."""
    return hashlib.sha256(data).hexdigest()


def synthetic_raw(folder: Path) -> dict[str, dict[str, bytes]]:
    """Small synthetic MNIST and IMDB raw files written under ``folder``; {dataset: {name: bytes}}."""
    out: dict[str, dict[str, bytes]] = {}
    for dataset, sizes in (("mnist", MNIST_SIZES), ("imdb", IMDB_SIZES)):
        paths = synthetic.GENERATORS[dataset](folder / dataset, *sizes, 0)
        out[dataset] = {p.name: p.read_bytes() for p in paths}
    return out


def manifest_for(files: dict[str, dict[str, bytes]], mirrors: list[str], **overrides: dict) -> dict:
    """A manifest dict for ``files`` {dataset: {name: bytes}}, sha256 and size taken from the bytes.

    ``overrides`` {file name: {key: value}} changes single entries (e.g. a wrong sha256).
    """
    datasets = {}
    for dataset, named in files.items():
        entries = []
        for name, data in named.items():
            entry = {"name": name, "sha256": sha256(data), "size": len(data)}
            entry.update(overrides.get(name, {}))
            entries.append(entry)
        datasets[dataset] = {"mirrors": list(mirrors), "files": entries}
    return {"datasets": datasets}


def imdb_tar(reviews: dict[str, str]) -> bytes:
    """An aclImdb-style tar.gz from {member path: text}, e.g. {"aclImdb/train/pos/0_9.txt": "..."}."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in reviews.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def synthetic_files(
    folder: Path, dataset: str, sizes: tuple[int, int] | None = None, seed: int = 0
) -> dict[str, bytes]:
    """A dataset's synthetic raw files (DATASET_SIZES unless given), written under ``folder``: {name: bytes}."""
    paths = synthetic.GENERATORS[dataset](folder / dataset, *(sizes or DATASET_SIZES[dataset]), seed)
    return {p.name: p.read_bytes() for p in paths}


def served(files: dict[str, bytes]) -> LoopbackServer:
    """A loopback server with ``files`` at /a/<name> (enter it with ``with``)."""
    return LoopbackServer({f"/a/{name}": data for name, data in files.items()})


def fetch_and_prepare(dataset: str, manifest: dict, root: Path) -> Path:
    """download() then prepare() one dataset with ``manifest``, quietly; the prepared folder."""
    raw = download(dataset, root, manifest=manifest, progress=False, timeout=10)
    return prepare(dataset, raw, prepared_dir(root, dataset), manifest=manifest, progress=False)


def write_manifest_toml(path: Path, manifest: dict) -> Path:
    """Write a manifest dict (as made by manifest_for) as a TOML file for --manifest."""
    lines = []
    for dataset, table in manifest["datasets"].items():
        lines += [f"[datasets.{dataset}]", f"mirrors = {table['mirrors']!r}".replace("'", '"')]
        for entry in table["files"]:
            lines += [f"[[datasets.{dataset}.files]]", f'name = "{entry["name"]}"',
                      f'sha256 = "{entry["sha256"]}"', f"size = {entry['size']}"]
    path.write_text("\n".join(lines) + "\n")
    return path
