"""Shared fixtures for the reference's own tests.

Every async test runs on both anyio backends: the reference promises to work under asyncio
and trio alike, and cancellation in particular behaves differently enough to be worth it.
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    backend: str = request.param
    return backend
