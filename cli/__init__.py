"""The `fleetq` command line."""
