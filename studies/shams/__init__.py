"""Shams et al. (ICDCS 2017): its study file, workloads and claim (no published table yet)."""
