; Tag query for Go (tree-sitter-go).
; A method's @owner is its receiver type: `func (s *Service) Apply()` is Service.Apply.

; -- definitions ---------------------------------------------------------------------

(function_declaration
  name: (identifier) @name) @definition.function

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @owner
             (pointer_type (type_identifier) @owner)
             (generic_type type: (type_identifier) @owner)
             (pointer_type (generic_type type: (type_identifier) @owner))]))
  name: (field_identifier) @name) @definition.method

(type_spec
  name: (type_identifier) @name
  type: (interface_type)) @definition.interface

(interface_type
  (method_elem
    name: (field_identifier) @name) @definition.method)

(type_spec
  name: (type_identifier) @name
  type: (_)) @definition.type

(type_alias
  name: (type_identifier) @name) @definition.type

(source_file
  (const_declaration
    (const_spec
      name: (identifier) @name) @definition.constant))

; -- calls ---------------------------------------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (selector_expression
    operand: (_) @receiver
    field: (field_identifier) @name)) @reference.call

; -- inheritance: embedded structs and interfaces -------------------------------------

(struct_type
  (field_declaration_list
    (field_declaration
      !name
      type: [(type_identifier) (qualified_type)
             (pointer_type (type_identifier))] @name) @reference.class))

(interface_type
  (type_elem
    [(type_identifier) (qualified_type)] @name) @reference.class)

; -- imports: the path, with the local name when one is given --------------------------

(import_spec
  !name
  path: (interpreted_string_literal (interpreted_string_literal_content) @name)) @reference.import

(import_spec
  name: [(package_identifier) (blank_identifier) (dot)] @import.alias
  path: (interpreted_string_literal (interpreted_string_literal_content) @name)) @reference.import
