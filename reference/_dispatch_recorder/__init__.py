"""Reference dispatch recorder: mutations and the recorder protocol (``model``), the
fail-closed executor (``executor``), the turn loop with its commit barrier (``turn_loop``)
and the signed journal (``journal`` over ``journal_format``, ``journal_keys``,
``journal_writer``, ``journal_signer`` and the ``signer_service`` child program).
Private: import from ``seamspec.reference``.
"""
