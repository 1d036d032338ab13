"""The estate fixtures of these tests."""

from tests.access.estate import estate, server

__all__ = ["estate", "server"]
