"""A local, offline Kubernetes fleet for development and tests: tool builds and clusters."""
