"""dlrepro's bench package: runs inside every image (and on the host for the local runner)."""

__version__ = "0.1.0"
