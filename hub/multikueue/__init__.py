"""MultiKueue on the hub: connections to worker clusters and, on top, dispatch to them."""
