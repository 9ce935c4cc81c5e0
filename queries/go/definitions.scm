(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [
        (type_identifier) @parent
        (pointer_type (type_identifier) @parent)
        (generic_type type: (type_identifier) @parent)
        (pointer_type (generic_type type: (type_identifier) @parent))
      ]))
  name: (field_identifier) @name) @definition.method

(function_declaration name: (identifier) @name) @definition.function

; `type T struct {…}` is the whole declaration; in `type ( A …; B … )` each
; spec is its own.
(type_declaration . (type_spec name: (type_identifier) @name) .) @definition.class

(type_spec name: (type_identifier) @name) @definition.class

(type_declaration . (type_alias name: (type_identifier) @name) .) @definition.class

(type_alias name: (type_identifier) @name) @definition.class
