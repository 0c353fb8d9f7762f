"""Benchmarks: scripts that print tables (``python -m tests.benchmarks``), never timed tests."""
