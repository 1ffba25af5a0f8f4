"""The worker agent: capacity reports, local admission, status sync."""
