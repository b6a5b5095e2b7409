; Tag query for Rust (tree-sitter-rust).
; Functions in an `impl` block get the implemented type as @owner: `impl Service { fn apply() }`
; defines Service.apply. Functions inside a trait become methods in the parser.

; -- definitions ---------------------------------------------------------------------

(function_item
  name: (identifier) @name) @definition.function

(impl_item
  type: [(type_identifier) @owner
         (generic_type type: (type_identifier) @owner)
         (scoped_type_identifier name: (type_identifier) @owner)]
  body: (declaration_list
    (function_item
      name: (identifier) @name) @definition.method))

(function_signature_item
  name: (identifier) @name) @definition.function

(macro_definition
  name: (identifier) @name) @definition.function

(trait_item
  name: (type_identifier) @name) @definition.interface

[(struct_item name: (type_identifier) @name)
 (enum_item name: (type_identifier) @name)
 (union_item name: (type_identifier) @name)
 (type_item name: (type_identifier) @name)] @definition.type

(mod_item
  name: (identifier) @name) @definition.module

[(const_item name: (identifier) @name)
 (static_item name: (identifier) @name)] @definition.constant

(impl_item
  type: [(type_identifier) @owner
         (generic_type type: (type_identifier) @owner)
         (scoped_type_identifier name: (type_identifier) @owner)]
  body: (declaration_list
    (const_item
      name: (identifier) @name) @definition.constant))

; -- calls (and macro invocations) ----------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    value: (_) @receiver
    field: (field_identifier) @name)) @reference.call

(call_expression
  function: (scoped_identifier
    path: (_) @receiver
    name: (identifier) @name)) @reference.call

(call_expression
  function: (generic_function
    function: [(identifier) @name
               (field_expression value: (_) @receiver field: (field_identifier) @name)
               (scoped_identifier path: (_) @receiver name: (identifier) @name)])) @reference.call

(macro_invocation
  macro: (identifier) @name) @reference.call

; -- inheritance: trait implementations and supertraits --------------------------------

(impl_item
  trait: [(type_identifier) (scoped_type_identifier) (generic_type)] @name
  type: [(type_identifier) @owner
         (generic_type type: (type_identifier) @owner)
         (scoped_type_identifier name: (type_identifier) @owner)]) @reference.class

(trait_item
  bounds: (trait_bounds
    [(type_identifier) (scoped_type_identifier) (generic_type)] @name @reference.class))

; -- imports: `use a::b::{c, d as e}` → module a::b, names c and d (as e) ---------------

(use_declaration
  argument: (identifier) @name) @reference.import

(use_declaration
  argument: (scoped_identifier
    path: (_) @name
    name: (identifier) @import.name)) @reference.import

(use_declaration
  argument: (use_as_clause
    path: [(identifier) @name
           (scoped_identifier path: (_) @name name: (identifier) @import.name)]
    alias: (identifier) @import.alias)) @reference.import

(use_declaration
  argument: (scoped_use_list
    path: (_) @name
    list: (use_list
      [(identifier) (self) (scoped_identifier)] @import.name))) @reference.import

(use_declaration
  argument: (scoped_use_list
    path: (_) @name
    list: (use_list
      (use_as_clause
        path: (_) @import.name
        alias: (identifier) @import.alias)))) @reference.import

(use_declaration
  argument: (use_wildcard
    (_) @name
    "*" @import.name)) @reference.import

(extern_crate_declaration
  name: (identifier) @name) @reference.import
