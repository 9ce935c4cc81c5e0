; A LuaLS doc comment (`---`) written first in a function's body. Before
; the first statement the grammar hangs the comment on the function, next
; to its parameters, where its node types list no comment: hence `(_)`,
; which the `---` predicate narrows to the comment.
([
  (function_declaration parameters: (parameters) . (_) @doc)
  (assignment_statement
    (expression_list
      value: (function_definition parameters: (parameters) . (_) @doc)))
] @definition
  (#match? @doc "^---"))
