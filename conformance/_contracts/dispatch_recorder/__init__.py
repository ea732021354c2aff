"""The dispatch recorder (DR) room: catalogue, schema, model, driver with its scripted
participants and journal steps, oracle (with the journal checks), expectations,
reference adapter, mutants and strategies."""
