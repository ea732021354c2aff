"""Mutants written by outsiders: plausible bugs from people who read only the docs.

Each batch is one outsider's own implementation (``base.py``) and the broken variants they
wrote against it (``batchN.py``), before running any of them; the kit's meta-tests treat
them exactly like the kit's own mutants. Their value is that nobody wrote them against the
suite: batch 1 found one bug the suite let through (a chunk offered after finish while
the observer is still busy) and two it caught only weakly; batch 2 (``base2``, ``batch2``)
found five it let through and one it caught only under another rule; batch 4 (``base4``,
``batch4``) five it let through and one it caught under another rule; batch 5 (``base5``,
``batch5``) none: all seven were killed properly on the first try; batch 6 (``base6``,
``batch6``) two it let through (a time limit of 0 read as none, an ``on_finish`` called
under the lock that hands out IDs); batch 7 (``base7``, ``batch7``) two it let through
(a 2 s pipe grace after the child's exit, a budget cut backed off to a whole character),
and four it caught only by load, by another rule or without naming the rule; batch 8
(``base8``, ``batch8``) three it let through, one of them (a cancel that reaps the child
before it stops observation) caught only since the emitter's detached grandchild. The
scenarios now catch them all, except the one batch 4 variant listed in ``batch4.UNSEEN``
(``batch8.UNSEEN`` and ``batch9.UNSEEN`` still name the reap-first cancel and the
kill-drain-then-cancel time limit: the batch files are kept as hashed, and
``mutants.NOW_SEEN`` registers both). Every base had one bug of its own, found by the
detached grandchild in a timed call: after the time limit's kill it waited for end of
file on the pipes, which a process outside the group keeps open. The kit fixed each base
(``at_limit``) and keeps the wait as written as a mutant
(``out-soo-baseN-timeout-waits-for-pipes``, each base's ``waits_for_pipes``).
"""
