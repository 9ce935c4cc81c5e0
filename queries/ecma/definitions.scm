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

; exports.f = function () {…}, M.f = () => …: a function of a module object.
(expression_statement
  (assignment_expression
    left: (member_expression
      object: (identifier) @parent
      property: (property_identifier) @name)
    right: [(arrow_function) (function_expression) (generator_function)])) @definition.method

; Foo.prototype.bar = function () {…}: a method of Foo.
(expression_statement
  (assignment_expression
    left: (member_expression
      object: (member_expression
        object: (identifier) @parent
        property: (property_identifier) @_prototype)
      property: (property_identifier) @name)
    right: [(arrow_function) (function_expression) (generator_function)])
  (#eq? @_prototype "prototype")) @definition.method

; { name: () => … }, { name() {…} } in an object: a function of it, named by
; its key (a grammar's rules, a table of handlers).
(pair
  key: (property_identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

(object
  (method_definition name: (property_identifier) @name) @definition.function)
