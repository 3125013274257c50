"""coopgen's error for a call it cannot make: it names the primitive, the parameter, what was
given and what is allowed. A backend raises it as its own typing error (coopgen.lower.errors)."""


class CoopgenError(Exception):
    pass


class CoopgenUnsupported(CoopgenError, NotImplementedError):
    """A group or form that cuda.coop names but coopgen does not serve (a NotImplementedError,
    as cuda.coop raises for those outside its profile)."""
