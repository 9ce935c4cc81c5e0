; Shared by JavaScript and TypeScript (not a language of its own).

(class_body
  (method_definition name: (_) @name) @definition.method)

(function_declaration name: (identifier) @name) @definition.function

(generator_function_declaration name: (identifier) @name) @definition.function

(class_declaration name: (_) @name) @definition.class

; const f = () => …, const f = function () {…}: a function bound to a name.
; The declaration is the definition when it declares only that name.
(lexical_declaration
  .
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])
  .) @definition.function

(variable_declaration
  .
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function) (function_expression) (generator_function)])
  .) @definition.function

(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; const Foo = class {…}
(lexical_declaration
  .
  (variable_declarator name: (identifier) @name value: (class))
  .) @definition.class

; `export` and `export default` belong to what they export.
(export_statement
  declaration: [
    (function_declaration name: (identifier) @name)
    (generator_function_declaration name: (identifier) @name)
  ]) @definition.function

(export_statement
  declaration: (class_declaration name: (_) @name)) @definition.class

(export_statement
  declaration: (lexical_declaration
    .
    (variable_declarator
      name: (identifier) @name
      value: [(arrow_function) (function_expression) (generator_function)])
    .)) @definition.function
