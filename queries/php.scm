; Tag query for PHP (tree-sitter-php).
; `namespace A\B;` (no braces) scopes what follows it: @scope.file tells the parser so.

; -- definitions ---------------------------------------------------------------------

(namespace_definition
  name: (namespace_name) @name
  !body) @definition.module @scope.file

(namespace_definition
  name: (namespace_name) @name
  body: (_)) @definition.module

(class_declaration
  name: (name) @name) @definition.class

(interface_declaration
  name: (name) @name) @definition.interface

[(trait_declaration name: (name) @name)
 (enum_declaration name: (name) @name)] @definition.type

(function_definition
  name: (name) @name) @definition.function

(method_declaration
  name: (name) @name) @definition.method

(const_declaration
  (const_element
    (name) @name)) @definition.constant

; -- calls (`new T()` counts as a call of T) -------------------------------------------

(function_call_expression
  function: [(name) (qualified_name)] @name) @reference.call

[(member_call_expression object: (_) @receiver name: (name) @name)
 (nullsafe_member_call_expression object: (_) @receiver name: (name) @name)
 (scoped_call_expression scope: (_) @receiver name: (name) @name)] @reference.call

(object_creation_expression
  [(name) (qualified_name)] @name) @reference.call

; -- inheritance: extends, implements, trait use ---------------------------------------

(base_clause
  [(name) (qualified_name)] @name @reference.class)

(class_interface_clause
  [(name) (qualified_name)] @name @reference.class)

(use_declaration
  [(name) (qualified_name)] @name @reference.class)

; -- imports: `use A\B\C;` → module A\B, name C; require/include of a literal path -------

(namespace_use_declaration
  (namespace_use_clause
    [(name) @name
     (qualified_name
       prefix: (namespace_name) @name
       (name) @import.name)]
    !alias)) @reference.import

(namespace_use_declaration
  (namespace_use_clause
    [(name) @name
     (qualified_name
       prefix: (namespace_name) @name
       (name) @import.name)]
    alias: (name) @import.alias)) @reference.import

(namespace_use_declaration
  (namespace_name) @name
  body: (namespace_use_group
    (namespace_use_clause
      (name) @import.name
      !alias))) @reference.import

(namespace_use_declaration
  (namespace_name) @name
  body: (namespace_use_group
    (namespace_use_clause
      (name) @import.name
      alias: (name) @import.alias))) @reference.import

(require_expression
  [(string (string_content) @name)
   (encapsed_string (string_content) @name)
   (binary_expression
     right: [(string (string_content) @name) (encapsed_string (string_content) @name)])]) @reference.import

(require_once_expression
  [(string (string_content) @name)
   (encapsed_string (string_content) @name)
   (binary_expression
     right: [(string (string_content) @name) (encapsed_string (string_content) @name)])]) @reference.import

(include_expression
  [(string (string_content) @name)
   (encapsed_string (string_content) @name)
   (binary_expression
     right: [(string (string_content) @name) (encapsed_string (string_content) @name)])]) @reference.import

(include_once_expression
  [(string (string_content) @name)
   (encapsed_string (string_content) @name)
   (binary_expression
     right: [(string (string_content) @name) (encapsed_string (string_content) @name)])]) @reference.import
