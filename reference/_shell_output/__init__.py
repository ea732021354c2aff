"""Reference shell-output observer: the observer protocol and invocation IDs (``observer``),
the observation session with its presentation thread (``session``), the process runner
(``runner``) and the ``emitter`` program scenarios run as a child. Private: import from
``seamspec.reference``.
"""
