; require("x"), require "x"
((function_call
   name: (identifier) @_require
   arguments: (arguments . (string content: (string_content) @import.module) .))
 (#eq? @_require "require"))
