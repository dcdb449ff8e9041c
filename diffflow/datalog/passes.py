"""The Datalog passes in order (filled in below)."""
