"""Mutants written by outsiders: plausible bugs from people who read only the docs.

Each batch is one outsider's own implementation (batch 1: ``base.py``; batch 2, by another
outsider: ``base2.py``) and the broken variants they wrote against it (``batchN.py``),
before running any of them; the kit's meta-tests treat them exactly like the kit's
own mutants. Their value is that nobody wrote them against the suite: batch 1 found four
bugs the suite let through, batch 2 three more and one caught for the wrong reason, which
the scenarios now catch. Batch 3's files were lost: ``batch3.py`` re-creates its six
survivors from their one-line records, on ``base2``, so it is not first-try evidence.
Batch 4 (``base4.py``, ``batch4.py``), by a fourth outsider, is kept as written: of its
seven variants two were killed properly on the first try, one only by scenarios citing
another rule, and four survived; the scenarios now catch all seven. Batch 5 (``base5.py``,
``batch5.py``, variants ``out-woc5-*``), by a fifth outsider, is kept as written too: one
of seven killed properly on the first try, six survived; the scenarios now catch all seven.
Batch 6 (``base6.py``, ``batch6.py``, variants ``out-woc6-*``), by a sixth outsider, is kept
as written: none of seven killed properly on the first try (six survived, one was caught
only by scenarios citing other rules); the scenarios now catch all seven.
Batch 7 (``base7.py``, ``batch7.py``, variants ``out-woc7-*``), by a seventh outsider, is
kept as written: four of seven killed properly on the first try, two survived and one was
failed only by a scenario whose oracle did not name its rule; the scenarios now catch all
seven.
Batch 8 (``base8.py``, ``batch8.py``, variants ``out-woc8-*``), by an eighth outsider, is
kept as written: three of seven killed properly on the first try, four survived; the
scenarios now catch all seven.
Batch 9 (``base9.py``, ``batch9.py``, variants ``out-woc9-*``), by a ninth outsider, is
kept as written: none of seven killed properly on the first try (five survived, two were
failed only by scenarios that did not both cite and name their rule); the scenarios now
catch all seven.
Batch 10 (``base10.py``, ``batch10.py``, variants ``out-woc10-*``), by a tenth outsider, is
kept as written: three of seven killed properly on the first try, three survived and one
was failed only by a scenario citing another rule; the scenarios now catch all seven.
Batch 11 (``base11.py``, ``batch11.py``, variants ``out-woc11-*``), by an eleventh outsider,
is kept as written: none of seven killed properly on the first try (four survived, two were
failed only by scenarios that did not both cite and name their rule, one only by a scenario
citing other rules).
Batch 12 (``base12.py``, ``batch12.py``, variants ``out-woc12-*``), by a twelfth outsider,
is kept as written: none of seven killed on the first try (all seven survived); six are
caught now, and one (``pathlib-match-deny``) is pending a decision on the deny dialect.
Batch 13 (``base13.py``, ``batch13.py``, variants ``out-b13woc-*``), by a thirteenth
outsider, is kept as written: one of seven killed properly on the first try, one only by a
scenario citing another rule, five survived; the blind sweep 13 then caught one more,
and the scenarios now catch all seven.
Batch 14 (``base14.py``, ``batch14.py``, variants ``out-b14woc-*``), by a fourteenth
outsider, is kept as written: six of seven killed properly on the first try, one
(``link-followed-once``) only by a scenario citing another rule; the scenarios now catch
all seven.
"""
