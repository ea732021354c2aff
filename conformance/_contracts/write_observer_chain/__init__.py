"""The write-observer chain (WOC) room: catalogue, schema, model, driver, oracle,
expectations, reference adapter, mutants, strategies and timeline."""
