"""Shi et al. (CCBD 2016): its study file, workloads, published tables (tables.py), claims and report section."""
