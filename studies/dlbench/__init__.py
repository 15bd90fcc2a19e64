"""DLBench (Elshawi et al., Cluster Computing 2021): its study file, workloads, published numbers and claims; its
published tables are read by the shared comparison (analysis/reference.py)."""
