"""Mutants written by outsiders: plausible bugs from people who read only the docs.

Each batch is one outsider's own implementation (``base.py``) and the broken variants they
wrote against it (``batchN.py``), before running any of them; the kit's meta-tests treat
them exactly like the kit's own mutants. Their value is that nobody wrote them against the
suite: batch 1 found four bugs the suite let through (three on the dispatch side, which
the scenarios now catch, and one of the journal's), and the scenarios written for them
then found a fifth in the base itself. Batch 3 (``base3.py``, ``batch3.py``), by another
outsider, had five of six variants pass the whole suite; the scenarios written for them,
a new tampering and a new strict rule (DR-CONTEXT-PLACE) catch all six now. Batch 4
(``base4.py``, ``batch4.py``, variants named ``out-dr4-*``) had five of six pass; a word of
vocabulary (a scripted raise's ``exception`` class), a kit-side check (a commit's list
read again at the turn's end), ``existing_journal`` with no complete entry and an oracle
that judges a raised tool's redaction catch all six now. Batches 5 (``base5.py``,
``batch5.py``, ``out-dr5-*``), 6 (``base6.py``, ``batch6.py``, ``out-dr6-*``), 7
(``base7.py``, ``batch7.py``, ``out-dr7-*``, a harness with no journal), 8 (``base8.py``,
``batch8.py``, ``out-dr8-*``, another harness with no journal), 9 (``base9.py``,
``batch9.py``, ``out-dr9-*``, a third harness with no journal), 10 (``base10.py``,
``batch10.py``, ``out-dr10-*``, a harness with its own signed journal again), 11
(``base11.py``, ``batch11.py``, ``out-dr11-*``, another signed journal), 12
(``base12.py``, ``batch12.py``, ``out-dr12-*``, a fourth harness with no journal), 13
(``base13.py``, ``batch13.py``, ``out-b13dr-*``, a signed journal again) and 14
(``base14.py``, ``batch14.py``, ``out-b14dr-*``, another signed journal) follow
the same shape; the contract page's "Outsider mutants" section says what each first try found
and which scenarios catch each variant now.
"""
