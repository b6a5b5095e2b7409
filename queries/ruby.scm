; Tag query for Ruby (tree-sitter-ruby).
; `def` inside a class becomes a method in the parser; `def self.x` is always a method.

; -- definitions ---------------------------------------------------------------------

(method
  name: (_) @name) @definition.function

(singleton_method
  name: (_) @name) @definition.method

(class
  name: [(constant) (scope_resolution)] @name) @definition.class

(module
  name: [(constant) (scope_resolution)] @name) @definition.module

(assignment
  left: (constant) @name) @definition.constant

; -- calls ---------------------------------------------------------------------------

(call
  receiver: (_) @receiver
  method: (identifier) @name) @reference.call

(call
  !receiver
  method: (identifier) @name) @reference.call

; -- inheritance: superclass and mixins ------------------------------------------------

(class
  superclass: (superclass
    [(constant) (scope_resolution)] @name) @reference.class)

(call
  !receiver
  method: (identifier) @_mixin
  arguments: (argument_list
    [(constant) (scope_resolution)] @name)
  (#match? @_mixin "^(include|extend|prepend)$")) @reference.class

; -- imports: require, require_relative, load ------------------------------------------

(call
  !receiver
  method: (identifier) @_require
  arguments: (argument_list
    .
    (string (string_content) @name))
  (#match? @_require "^(require|require_relative|load|autoload)$")) @reference.import
