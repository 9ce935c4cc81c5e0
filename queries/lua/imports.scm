; require("x"), require "x"
((function_call
   name: (identifier) @_require
   arguments: (arguments . (string content: (string_content) @import.module) .))
 (#eq? @_require "require"))

; local m = require("x")
((variable_declaration
   (assignment_statement
     (variable_list name: (identifier) @import.alias)
     (expression_list
       value: (function_call
         name: (identifier) @_require
         arguments: (arguments . (string content: (string_content) @import.module) .)))))
 (#eq? @_require "require"))
