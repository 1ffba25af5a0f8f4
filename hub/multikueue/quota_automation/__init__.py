"""Upstream's MultiKueue manager quota automation.

`plan` says what a ClusterQueue should hold; `controller` writes it.
"""
