"""Translation between Kubernetes objects and the engine's model (pure, no I/O)."""
