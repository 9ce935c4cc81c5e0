; `function M.x`, `function M:x` and `M.x = function` belong to the table M.
(function_declaration
  name: (method_index_expression
    table: (identifier) @parent
    method: (identifier) @name)) @definition.method

(function_declaration
  name: (dot_index_expression
    table: (identifier) @parent
    field: (identifier) @name)) @definition.method

(function_declaration name: (identifier) @name) @definition.function

; M.x = function () … end, local f = function () … end
(assignment_statement
  (variable_list
    .
    name: (dot_index_expression
      table: (identifier) @parent
      field: (identifier) @name) .)
  (expression_list . value: (function_definition) .)) @definition.method

(variable_declaration
  (assignment_statement
    (variable_list . name: (identifier) @name .)
    (expression_list . value: (function_definition) .))) @definition.function

(assignment_statement
  (variable_list . name: (identifier) @name .)
  (expression_list . value: (function_definition) .)) @definition.function
