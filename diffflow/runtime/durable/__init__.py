"""Durable state: checkpoints and the write-ahead log (docs/DURABILITY.md)."""
