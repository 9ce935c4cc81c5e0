(call_expression function: (identifier) @call.name)

(call_expression
  function: (field_expression
    value: (_) @call.scope
    field: (field_identifier) @call.name))

(call_expression
  function: (scoped_identifier
    path: (_) @call.scope
    name: (identifier) @call.name))

(macro_invocation macro: (identifier) @call.name)
