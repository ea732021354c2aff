"""Reference write-observer chain: the chain (``chain``), the write tools and their single
observer seam (``write_path``), the checkpoint, formatter and diagnostics observers, and the
``stubs`` child programs those observers run. Private: import from ``seamspec.reference``.

This ``__init__`` imports nothing: ``python -m ...stubs`` must not find its module already
imported by its package (runpy would warn on the stub's stderr).
"""
