"""Generated bindings, one subpackage per lock entry. Do not edit."""
