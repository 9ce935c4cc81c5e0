(call_expression function: (identifier) @call.name)

(call_expression
  function: (selector_expression
    operand: (_) @call.scope
    field: (field_identifier) @call.name))
