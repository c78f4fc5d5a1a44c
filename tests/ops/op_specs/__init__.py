"""Per-op case generators for tests/ops/conformance_cases.py."""
