(function_call name: (identifier) @call.name)

(function_call
  name: (dot_index_expression
    table: (_) @call.scope
    field: (identifier) @call.name))

(function_call
  name: (method_index_expression
    table: (_) @call.scope
    method: (identifier) @call.name))
