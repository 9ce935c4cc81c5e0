(import_spec path: (_) @import.module)

(import_spec name: (package_identifier) @import.alias path: (_) @import.module)
