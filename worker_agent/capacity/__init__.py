"""The worker's capacity report (WorkerCapacity), computed from its nodes, pods and queues.

Pure: a controller feeds it informer caches and writes the result when `report_due`.
"""
