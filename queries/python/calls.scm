(call function: (identifier) @call.name)

(call
  function: (attribute
    object: (_) @call.scope
    attribute: (identifier) @call.name))
