"""Shared foundation of the hub and the worker agent: API types, engine, Kubernetes runtime."""
