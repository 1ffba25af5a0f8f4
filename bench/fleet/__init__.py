"""The fleet simulator's curve: placement cost and spread from 1 to 500 workers."""
