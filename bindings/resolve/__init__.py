"""The resolve stage: a call (entry point + argument descriptions) -> a frozen plan
(``plan.Plan``): the overload, template arguments, roles, operators and storage needs. No C++
text and no backend types."""
