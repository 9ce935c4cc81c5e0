(impl_item
  type: [
    (type_identifier) @parent
    (generic_type type: (type_identifier) @parent)
    (scoped_type_identifier name: (type_identifier) @parent)
  ]
  body: (declaration_list
    (function_item name: (identifier) @name) @definition.method))

(trait_item
  name: (type_identifier) @parent
  body: (declaration_list
    [
      (function_item name: (identifier) @name)
      (function_signature_item name: (identifier) @name)
    ] @definition.method))

(function_item name: (identifier) @name) @definition.function

(struct_item name: (type_identifier) @name) @definition.class

(enum_item name: (type_identifier) @name) @definition.class

(union_item name: (type_identifier) @name) @definition.class

(trait_item name: (type_identifier) @name) @definition.class

(type_item name: (type_identifier) @name) @definition.class

(mod_item name: (identifier) @name body: (_)) @definition.class

(macro_definition name: (identifier) @name) @definition.function
