"""MultiKueue dispatch benchmark: fleetq's hub against upstream Kueue's MultiKueue."""
