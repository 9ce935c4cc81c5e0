; Methods first: a function directly in a class body is a method.
(class_definition
  body: (block
    (function_definition name: (identifier) @name) @definition.method))

(class_definition
  body: (block
    (decorated_definition
      definition: (function_definition name: (identifier) @name)) @definition.method))

(function_definition name: (identifier) @name) @definition.function

(decorated_definition
  definition: (function_definition name: (identifier) @name)) @definition.function

(class_definition name: (identifier) @name) @definition.class

(decorated_definition
  definition: (class_definition name: (identifier) @name)) @definition.class
