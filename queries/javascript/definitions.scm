; inherits: ecma

; Class fields holding functions: `handle = () => {…}`.
(class_body
  (field_definition
    property: (_) @name
    value: [(arrow_function) (function_expression)]) @definition.method)
