"""Async Kubernetes runtime shared by the hub and the agent (clients, informers, work queues)."""
