; A JSDoc comment written first in a function's body, where a model used
; to Python's docstrings puts it.
([
  (function_declaration body: (statement_block . (comment) @doc))
  (generator_function_declaration body: (statement_block . (comment) @doc))
  (method_definition body: (statement_block . (comment) @doc))
  (variable_declarator
    value: [
      (arrow_function body: (statement_block . (comment) @doc))
      (function_expression body: (statement_block . (comment) @doc))
    ])
] @definition
  (#match? @doc "^/\\*\\*"))
