"""Helpers of benchmarks/run-suite: server processes, models, reports."""
