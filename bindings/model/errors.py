"""coopgen's error for a call it cannot make: it names the primitive, the parameter, what was
given and what is allowed. A backend raises it as its own typing error (coopgen.lower.errors)."""


class CoopgenError(Exception):
    pass
