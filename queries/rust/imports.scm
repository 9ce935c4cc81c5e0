(use_declaration
  argument: (scoped_identifier path: (_) @import.module name: (identifier) @import.name))

(use_declaration
  argument: (scoped_use_list
    path: (_) @import.module
    list: (use_list (identifier) @import.name)))

(use_declaration argument: (identifier) @import.module)

(use_declaration
  argument: (use_as_clause path: (scoped_identifier path: (_) @import.module name: (identifier) @import.name)))

; `mod x;`: a module in a file of its own
(mod_item name: (identifier) @import.submodule !body)
