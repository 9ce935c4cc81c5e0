(import_statement name: (dotted_name) @import.module)

(import_statement
  name: (aliased_import name: (dotted_name) @import.module))

(import_from_statement
  module_name: (_) @import.module
  name: (dotted_name) @import.name)

(import_from_statement
  module_name: (_) @import.module
  name: (aliased_import name: (dotted_name) @import.name))
