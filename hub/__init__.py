"""The manager: controllers, scheduler loop, MultiKueue dispatch, visibility, webhooks."""
