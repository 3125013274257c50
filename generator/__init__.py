"""coopgen.generator: CUB headers -> API model -> bindings."""
