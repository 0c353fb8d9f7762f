"""Leases: what a holder keeps (a lease, a group of them, this process's holdings), their writes and the heartbeat."""
