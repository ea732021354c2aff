"""The contract rooms: one package per contract, the same parts in each (see
``seamspec.conformance._core.registry`` and docs/architecture.md). Rooms depend on the
core and on ``seamspec.reference``, never on each other.
"""
