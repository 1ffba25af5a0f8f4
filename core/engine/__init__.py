"""The queueing engine: pure, synchronous, deterministic; no I/O, no asyncio, no clients."""
