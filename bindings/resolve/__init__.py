"""The resolve stage: a call (entry point + argument descriptions) -> a frozen ``plan.Plan``: the
overload, template arguments, roles, operators and storage needs; no C++ and no backend types."""
