; Tag query for C# (tree-sitter-c-sharp).
; `namespace A.B;` (file-scoped) scopes what follows it: @scope.file tells the parser so.

; -- definitions ---------------------------------------------------------------------

[(class_declaration name: (identifier) @name)
 (record_declaration name: (identifier) @name)] @definition.class

(interface_declaration
  name: (identifier) @name) @definition.interface

[(struct_declaration name: (identifier) @name)
 (enum_declaration name: (identifier) @name)
 (delegate_declaration name: (identifier) @name)] @definition.type

[(method_declaration name: (identifier) @name)
 (constructor_declaration name: (identifier) @name)] @definition.method

(local_function_statement
  name: (identifier) @name) @definition.function

(namespace_declaration
  name: [(identifier) (qualified_name)] @name) @definition.module

(file_scoped_namespace_declaration
  name: [(identifier) (qualified_name)] @name) @definition.module @scope.file

(field_declaration
  (modifier) @_const
  (variable_declaration
    (variable_declarator
      name: (identifier) @name))
  (#eq? @_const "const")) @definition.constant

; -- calls (`new T()` counts as a call of T) -------------------------------------------

(invocation_expression
  function: [(identifier) @name
             (generic_name (identifier) @name)]) @reference.call

; `_` (not `(_)`): `this` and `base` are anonymous nodes in this grammar.
(invocation_expression
  function: (member_access_expression
    expression: _ @receiver
    name: [(identifier) @name
           (generic_name (identifier) @name)])) @reference.call

(object_creation_expression
  type: [(identifier) @name
         (generic_name (identifier) @name)
         (qualified_name qualifier: (_) @receiver name: (identifier) @name)]) @reference.call

; -- inheritance ---------------------------------------------------------------------

(base_list
  [(identifier) (qualified_name) (generic_name)] @name @reference.class)

; -- imports: `using A.B;` → module A.B; `using X = A.B;` → module A.B as X --------------

(using_directive
  !name
  [(identifier) (qualified_name)] @name) @reference.import

(using_directive
  name: (identifier) @import.alias
  .
  [(identifier) (qualified_name)] @name) @reference.import
