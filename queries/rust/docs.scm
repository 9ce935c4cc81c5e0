; An outer doc comment (`///`, `/** */`) written first in a function's
; body, where it documents nothing (rustc: "unused doc comment").
((function_item body: (block . (line_comment) @doc)) @definition
  (#match? @doc "^///"))

((function_item body: (block . (block_comment) @doc)) @definition
  (#match? @doc "^/\\*\\*"))
