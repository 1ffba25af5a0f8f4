"""Capacity-aware dispatch: which worker cluster should get a workload, decided from reports.

Pure like the rest of the engine: the hub feeds it WorkerCapacity reports and workloads
from its caches and writes the outcome (`nominatedClusterNames`) itself.
"""
