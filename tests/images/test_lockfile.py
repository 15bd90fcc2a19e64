"""versions.lock's check of a built image's Debian packages: they are compared with the pins of the Debian release
the image was built on (the paper era's buster or bullseye base), read inside the image by `make verify-lock`."""

from __future__ import annotations

import tomllib

from images import build as images
from images import lockfile

BULLSEYE_THEANO = {"g++": "4:10.2.1-1", "libopenblas-dev": "0.3.13+ds-3+deb11u1", "libc6": "2.31-13+deb11u13"}


def test_an_image_s_debian_packages_are_checked_against_its_own_release_s_pins():
    theano = images.ImageSpec("theano", "paper")
    assert lockfile.debian_drift(theano, "bullseye", BULLSEYE_THEANO) == []
    assert lockfile.debian_drift(theano, "buster", BULLSEYE_THEANO) == [
        "Debian buster package g++: pinned 4:8.3.0-1, installed 4:10.2.1-1",
        "Debian buster package libopenblas-dev: pinned 0.3.5+ds-3, installed 0.3.13+ds-3+deb11u1"]
    assert lockfile.debian_drift(images.ImageSpec("mxnet", "paper"), "bullseye", BULLSEYE_THEANO) == [
        "Debian bullseye package libgomp1: pinned 10.2.1-6, installed nothing"]
    assert lockfile.debian_drift(images.ImageSpec("tensorflow", "paper"), "bookworm", {}) == [
        "built on Debian bookworm, for which no paper-era packages are pinned (buster, bullseye)"]


def test_versions_lock_records_both_releases_pins_of_the_paper_images():
    lock = tomllib.loads(lockfile.LOCK_FILE.read_text())["images"]
    assert lock["mxnet/paper/cpu"]["apt"] == {"buster": ["libgomp1=8.3.0-6"], "bullseye": ["libgomp1=10.2.1-6"]}
    assert lock["tensorflow/paper/cpu"]["apt"] == []
    assert lock["theano/current/cpu"]["apt"][0] == "g++=4:12.2.0-3"  # one list where the base is one release
