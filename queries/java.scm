; Tag query for Java (tree-sitter-java).

; -- definitions ---------------------------------------------------------------------

(class_declaration
  name: (identifier) @name) @definition.class

(record_declaration
  name: (identifier) @name) @definition.class

(interface_declaration
  name: (identifier) @name) @definition.interface

(annotation_type_declaration
  name: (identifier) @name) @definition.interface

(enum_declaration
  name: (identifier) @name) @definition.type

(method_declaration
  name: (identifier) @name) @definition.method

(constructor_declaration
  name: (identifier) @name) @definition.method

; Constants: `static final` fields, and every field of an interface.
(field_declaration
  (modifiers "static" "final")
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.constant

(constant_declaration
  declarator: (variable_declarator
    name: (identifier) @name)) @definition.constant

; -- calls (a constructor call `new T()` counts as a call of T) ------------------------

(method_invocation
  !object
  name: (identifier) @name) @reference.call

(method_invocation
  object: (_) @receiver
  name: (identifier) @name) @reference.call

(object_creation_expression
  type: [(type_identifier) @name
         (generic_type (type_identifier) @name)
         (scoped_type_identifier (type_identifier) @name .)]) @reference.call

; -- inheritance ---------------------------------------------------------------------

(superclass
  [(type_identifier) (scoped_type_identifier) (generic_type)] @name @reference.class)

(super_interfaces
  (type_list
    [(type_identifier) (scoped_type_identifier) (generic_type)] @name @reference.class))

(extends_interfaces
  (type_list
    [(type_identifier) (scoped_type_identifier) (generic_type)] @name @reference.class))

; -- imports: `import a.b.C;` → module a.b, name C; `import a.b.*;` → module a.b, name * --

(import_declaration
  (scoped_identifier
    scope: (_) @name
    name: (identifier) @import.name) .) @reference.import

(import_declaration
  [(scoped_identifier) (identifier)] @name
  (asterisk) @import.name) @reference.import
