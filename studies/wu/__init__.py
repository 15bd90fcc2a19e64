"""Wu et al. (IEEE TSC 2019): its study file, workloads, published tables (tables.py), claims and report section."""
