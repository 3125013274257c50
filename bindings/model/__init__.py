"""The model stage: the spec types the generator emits (``spec``) and the registry of the
generated bindings in use (``registry``). Imports nothing of numba."""
