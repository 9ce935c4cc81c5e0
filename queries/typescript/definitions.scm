; inherits: ecma

(class_body
  (public_field_definition
    name: (_) @name
    value: [(arrow_function) (function_expression)]) @definition.method)

(class_body
  (abstract_method_signature name: (_) @name) @definition.method)

(abstract_class_declaration name: (_) @name) @definition.class

(interface_declaration name: (_) @name) @definition.class

(type_alias_declaration name: (_) @name) @definition.class

(enum_declaration name: (_) @name) @definition.class

(internal_module name: (_) @name) @definition.class

(export_statement
  declaration: [
    (abstract_class_declaration name: (_) @name)
    (interface_declaration name: (_) @name)
    (type_alias_declaration name: (_) @name)
    (enum_declaration name: (_) @name)
    (internal_module name: (_) @name)
  ]) @definition.class
