"""The shell-output observer (SOO) room: catalogue, schema, model, driver, history and
oracle, expectations, reference adapter, mutants and strategies."""
