"""Proof that the suite catches bugs: the mutant registry (``mutants``), the kill matrix,
rule coverage and property-based fuzzing.
"""
