; Tag query for TSX (tree-sitter-typescript, tsx dialect): typescript.scm plus JSX component calls.
; Functions inside a class body become methods in the parser; see graphmem/adapters/code_parser.py.

; -- definitions ---------------------------------------------------------------------

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(function_signature
  name: (identifier) @name) @definition.function

(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

(class_declaration
  name: (type_identifier) @name) @definition.class

(abstract_class_declaration
  name: (type_identifier) @name) @definition.class

(method_definition
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method

(method_signature
  name: (property_identifier) @name) @definition.method

(abstract_method_signature
  name: (property_identifier) @name) @definition.method

(public_field_definition
  name: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method

(interface_declaration
  name: (type_identifier) @name) @definition.interface

(type_alias_declaration
  name: (type_identifier) @name) @definition.type

(enum_declaration
  name: (identifier) @name) @definition.type

(internal_module
  name: [(identifier) (nested_identifier)] @name) @definition.module

; Module-level `const` bindings of literal values (functions are matched above).
(program
  (lexical_declaration
    kind: "const"
    (variable_declarator
      name: (identifier) @name
      value: [(number) (string) (template_string) (array) (object) (true) (false) (regex)
              (unary_expression) (binary_expression) (as_expression) (satisfies_expression)
              (new_expression)]) @definition.constant))

(program
  (export_statement
    declaration: (lexical_declaration
      kind: "const"
      (variable_declarator
        name: (identifier) @name
        value: [(number) (string) (template_string) (array) (object) (true) (false) (regex)
                (unary_expression) (binary_expression) (as_expression) (satisfies_expression)
                (new_expression)]) @definition.constant)))

; -- calls ---------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (member_expression
    object: (_) @receiver
    property: [(property_identifier) (private_property_identifier)] @name)) @reference.call

(new_expression
  constructor: (identifier) @name) @reference.call

(new_expression
  constructor: (member_expression
    object: (_) @receiver
    property: (property_identifier) @name)) @reference.call

; A JSX element of a capitalised component counts as a call of it.
(jsx_opening_element
  name: (identifier) @name
  (#match? @name "^[A-Z]")) @reference.call

(jsx_self_closing_element
  name: (identifier) @name
  (#match? @name "^[A-Z]")) @reference.call

; -- inheritance ---------------------------------------------------------------------

(class_heritage
  (extends_clause
    value: (_) @name @reference.class))

(class_heritage
  (implements_clause
    [(type_identifier) (nested_type_identifier) (generic_type)] @name @reference.class))

(interface_declaration
  (extends_type_clause
    type: (_) @name @reference.class))

; -- imports (@name is the module; a default import counts as importing its local name) --

(import_statement
  source: (string (string_fragment) @name)) @reference.import

(import_statement
  (import_clause
    (identifier) @import.name)
  source: (string (string_fragment) @name)) @reference.import

(import_statement
  (import_clause
    (named_imports
      (import_specifier
        name: (_) @import.name
        !alias)))
  source: (string (string_fragment) @name)) @reference.import

(import_statement
  (import_clause
    (named_imports
      (import_specifier
        name: (_) @import.name
        alias: (identifier) @import.alias)))
  source: (string (string_fragment) @name)) @reference.import

(import_statement
  (import_clause
    (namespace_import
      (identifier) @import.alias))
  source: (string (string_fragment) @name)) @reference.import

(import_statement
  (import_require_clause
    (identifier) @import.alias
    source: (string (string_fragment) @name))) @reference.import

(export_statement
  source: (string (string_fragment) @name)) @reference.import

(export_statement
  (export_clause
    (export_specifier
      name: (_) @import.name))
  source: (string (string_fragment) @name)) @reference.import

(call_expression
  function: (identifier) @_require
  arguments: (arguments
    .
    (string (string_fragment) @name))
  (#eq? @_require "require")) @reference.import

; `const x = require("m")`: the module under the local name x.
(variable_declarator
  name: (identifier) @import.alias
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string (string_fragment) @name))
    (#eq? @_require "require")) @reference.import)
