; Tag query for C (tree-sitter-c). Also used for .h headers.

; -- definitions ---------------------------------------------------------------------

(function_definition
  declarator: (function_declarator
    declarator: (identifier) @name)) @definition.function

(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: (identifier) @name))) @definition.function

(preproc_function_def
  name: (identifier) @name) @definition.function

[(struct_specifier name: (type_identifier) @name body: (_))
 (union_specifier name: (type_identifier) @name body: (_))
 (enum_specifier name: (type_identifier) @name body: (_))] @definition.type

(type_definition
  declarator: (type_identifier) @name) @definition.type

; Only macros with a value: `#define GUARD_H` is not a constant.
(preproc_def
  name: (identifier) @name
  value: (_)) @definition.constant

(translation_unit
  (declaration
    (type_qualifier) @_const
    declarator: (init_declarator
      declarator: (identifier) @name)) @definition.constant
  (#eq? @_const "const"))

; -- calls ---------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    argument: (_) @receiver
    field: (field_identifier) @name)) @reference.call

; -- imports: #include "x.h" and <x.h> -------------------------------------------------

(preproc_include
  path: (_) @name) @reference.import
