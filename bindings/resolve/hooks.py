"""What resolving a call needs from the backend, which registers it when imported
(coopgen.lower.backend): resolving itself knows no backend's types or launch machinery."""

#: A Python value a call passes as a constant (a fixed operator, an injected identity) -> its
#: description (coopgen.types.desc).
describe_constant = None
#: (first bit, bit count) -> a function extracting those key bits (an operator value).
bit_field_digits = None
#: needed -> the launching block shape (and mark the kernel as specialised on it), or None.
launch_dims = None
