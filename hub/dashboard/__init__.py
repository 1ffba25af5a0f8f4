"""The fleet dashboard: a browser UI served by the hub from its caches (docs/dashboard.md)."""
