; Tag query for Python (tree-sitter-python).
; Functions inside a class body become methods in the parser; see graphmem/adapters/code_parser.py.

(class_definition
  name: (identifier) @name) @definition.class

(function_definition
  name: (identifier) @name) @definition.function

(type_alias_statement
  left: (type (identifier) @name)) @definition.type

; Module- and class-level constants by convention: UPPER_CASE names.
; (expression_statement is hidden in this grammar: match the assignment directly.)
(module
  (assignment
    left: (identifier) @name) @definition.constant
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

(class_definition
  body: (block
    (assignment
      left: (identifier) @name) @definition.constant)
  (#match? @name "^_*[A-Z][A-Z0-9_]*$"))

; Calls: f(x), obj.f(x), a.b.f(x).
(call
  function: (identifier) @name) @reference.call

(call
  function: (attribute
    object: (_) @receiver
    attribute: (identifier) @name)) @reference.call

; Inheritance: class A(B, mod.C, Generic[T]).
(class_definition
  superclasses: (argument_list
    [(identifier) (attribute)] @name @reference.class))

(class_definition
  superclasses: (argument_list
    (subscript
      value: [(identifier) (attribute)] @name) @reference.class))

; Imports: import a.b / import a.b as c / from a import b, c as d / from . import x.
(import_statement
  name: (dotted_name) @name) @reference.import

(import_statement
  name: (aliased_import
    name: (dotted_name) @name
    alias: (identifier) @import.alias)) @reference.import

(import_from_statement
  module_name: (_) @name
  name: (dotted_name) @import.name) @reference.import

(import_from_statement
  module_name: (_) @name
  name: (aliased_import
    name: (dotted_name) @import.name
    alias: (identifier) @import.alias)) @reference.import

(import_from_statement
  module_name: (_) @name
  (wildcard_import) @import.name) @reference.import
