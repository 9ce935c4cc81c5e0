(import_statement source: (string (string_fragment) @import.module))

(import_statement
  (import_clause
    (named_imports (import_specifier name: (identifier) @import.name)))
  source: (string (string_fragment) @import.module))

(import_statement
  (import_clause (identifier) @import.name)
  source: (string (string_fragment) @import.module))

; require("x"), const { a } = require("x")
((call_expression
   function: (identifier) @_require
   arguments: (arguments . (string (string_fragment) @import.module) .))
 (#eq? @_require "require"))

(variable_declarator
  name: (object_pattern
    (shorthand_property_identifier_pattern) @import.name)
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.module) .))
  (#eq? @_require "require"))
