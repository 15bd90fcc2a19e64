"""ilkarman/DeepLearningFrameworks: its study file, workloads, published times (tables.py), claims and report
section."""
