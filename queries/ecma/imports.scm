(import_statement source: (string (string_fragment) @import.module))

(import_statement
  (import_clause
    (named_imports (import_specifier name: (identifier) @import.name)))
  source: (string (string_fragment) @import.module))

; import m from "x", import * as m from "x": `m` stands for the module
(import_statement
  (import_clause (identifier) @import.alias)
  source: (string (string_fragment) @import.module))

(import_statement
  (import_clause (namespace_import (identifier) @import.alias))
  source: (string (string_fragment) @import.module))

; const m = require("x")
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments . (string (string_fragment) @import.module) .))
  (#eq? @_require "require"))

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
