; Tag query for JavaScript and JSX (tree-sitter-javascript).
; Functions inside a class body become methods in the parser; see graphmem/adapters/code_parser.py.

; -- definitions ---------------------------------------------------------------------

(function_declaration
  name: (identifier) @name) @definition.function

(generator_function_declaration
  name: (identifier) @name) @definition.function

(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; `res.send = function send() {}`, `exports.parse = () => {}`, `Foo.prototype.bar = function () {}`:
; a function assigned to a property belongs to the object (@owner), as CommonJS modules write them.
(assignment_expression
  left: (member_expression
    object: [(identifier) (member_expression)] @owner
    property: (property_identifier) @name)
  right: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; `res.set = res.header = function header() {}`: the function under its first name too, as the
; same node as its second (the pattern above), so that neither name nests in the other.
(assignment_expression
  left: (member_expression
    object: [(identifier) (member_expression)] @owner
    property: (property_identifier) @name)
  right: (assignment_expression
    right: [(arrow_function) (function_expression) (generator_function)]) @definition.function)

(class_declaration
  name: (identifier) @name) @definition.class

(method_definition
  name: [(property_identifier) (private_property_identifier)] @name) @definition.method

(field_definition
  property: (property_identifier) @name
  value: [(arrow_function) (function_expression)]) @definition.method

; Module-level `const` bindings of literal values (functions are matched above).
(program
  (lexical_declaration
    kind: "const"
    (variable_declarator
      name: (identifier) @name
      value: [(number) (string) (template_string) (array) (object) (true) (false) (regex)
              (unary_expression) (binary_expression) (new_expression)]) @definition.constant))

(program
  (export_statement
    declaration: (lexical_declaration
      kind: "const"
      (variable_declarator
        name: (identifier) @name
        value: [(number) (string) (template_string) (array) (object) (true) (false) (regex)
                (unary_expression) (binary_expression) (new_expression)]) @definition.constant)))

; -- calls (a JSX element of a capitalised component counts as a call) -----------------

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

(jsx_opening_element
  name: (identifier) @name
  (#match? @name "^[A-Z]")) @reference.call

(jsx_self_closing_element
  name: (identifier) @name
  (#match? @name "^[A-Z]")) @reference.call

; -- inheritance ---------------------------------------------------------------------

(class_heritage
  [(identifier) (member_expression)] @name @reference.class)

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

; `var resolve = require("m").resolve`: the name resolve of m, under the local name resolve.
(variable_declarator
  name: (identifier) @import.alias
  value: (member_expression
    object: (call_expression
      function: (identifier) @_require
      arguments: (arguments
        .
        (string (string_fragment) @name))
      (#eq? @_require "require"))
    property: (property_identifier) @import.name) @reference.import)

; `const { join, dirname: dir } = require("m")`: the names join and dirname (as dir) of m.
(variable_declarator
  name: (object_pattern
    (shorthand_property_identifier_pattern) @import.name)
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string (string_fragment) @name))
    (#eq? @_require "require")) @reference.import)

(variable_declarator
  name: (object_pattern
    (pair_pattern
      key: (property_identifier) @import.name
      value: (identifier) @import.alias))
  value: (call_expression
    function: (identifier) @_require
    arguments: (arguments
      .
      (string (string_fragment) @name))
    (#eq? @_require "require")) @reference.import)
