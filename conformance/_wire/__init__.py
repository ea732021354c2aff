"""The wire protocol: judging an implementation in any language through JSON lines on a
child process's stdin and stdout (``client``, ``child``), serving one (``server``), and the
message schemas (``messages``). Depends on the core only.
"""
