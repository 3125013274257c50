"""The user-facing layer: the ``block``/``warp`` namespaces built from the generated specs, the
``local``/``shared`` arrays, two-phase objects and cuda.coop's module (``coop``)."""
