; Tag query for Kotlin (tree-sitter-kotlin). The grammar has few fields: patterns rely on
; node order. Companion objects are not definitions: their members belong to the class.
; An extension function `fun String.shout()` gets String as @owner.

; -- definitions ---------------------------------------------------------------------

(class_declaration
  "class"
  (type_identifier) @name) @definition.class

(class_declaration
  "interface"
  (type_identifier) @name) @definition.interface

(class_declaration
  (type_identifier) @name
  (enum_class_body)) @definition.type

(object_declaration
  (type_identifier) @name) @definition.class

(function_declaration
  (simple_identifier) @name) @definition.function

(function_declaration
  receiver: (receiver_type
    [(user_type) (nullable_type (user_type))] @owner)
  (simple_identifier) @name) @definition.method

(type_alias
  (type_identifier) @name) @definition.type

(property_declaration
  (modifiers
    (property_modifier) @_const)
  (variable_declaration
    (simple_identifier) @name)
  (#eq? @_const "const")) @definition.constant

; -- calls ---------------------------------------------------------------------------

(call_expression
  .
  (simple_identifier) @name) @reference.call

(call_expression
  .
  (navigation_expression
    .
    (_) @receiver
    (navigation_suffix
      (simple_identifier) @name) .)) @reference.call

; -- inheritance: superclass constructor calls and interfaces ---------------------------

(delegation_specifier
  (user_type) @name @reference.class)

(delegation_specifier
  (constructor_invocation
    (user_type) @name) @reference.class)

; -- imports: `import a.b.C` → module a.b, name C; `import a.b.*` → module a.b ----------

(import_header
  (identifier) @import.path .) @reference.import

(import_header
  (identifier) @import.path
  (import_alias
    (type_identifier) @import.alias)) @reference.import

(import_header
  (identifier) @name
  (wildcard_import) @import.name) @reference.import
