; Tag query for C++ (tree-sitter-cpp).
; An out-of-line definition `void Service::apply() {}` is named by its qualified identifier:
; the parser reads the leading segments as the owner, so it defines Service.apply.

; -- definitions ---------------------------------------------------------------------

(function_definition
  declarator: (function_declarator
    declarator: [(identifier) (field_identifier) (qualified_identifier)
                 (destructor_name) (operator_name)] @name)) @definition.function

(function_definition
  declarator: (pointer_declarator
    declarator: (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))) @definition.function

(function_definition
  declarator: (reference_declarator
    (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))) @definition.function

(preproc_function_def
  name: (identifier) @name) @definition.function

(class_specifier
  name: [(type_identifier) (qualified_identifier)] @name
  body: (_)) @definition.class

[(struct_specifier name: (type_identifier) @name body: (_))
 (union_specifier name: (type_identifier) @name body: (_))
 (enum_specifier name: (type_identifier) @name body: (_))] @definition.type

(type_definition
  declarator: (type_identifier) @name) @definition.type

(alias_declaration
  name: (type_identifier) @name) @definition.type

(namespace_definition
  name: [(namespace_identifier) (nested_namespace_specifier)] @name) @definition.module

; Only macros with a value: `#define GUARD_H` is not a constant.
(preproc_def
  name: (identifier) @name
  value: (_)) @definition.constant

; const and constexpr variables of a file or a namespace, and of a class.
([(translation_unit
   (declaration
     (type_qualifier) @_const
     declarator: (init_declarator
       declarator: (identifier) @name)) @definition.constant)
  (declaration_list
   (declaration
     (type_qualifier) @_const
     declarator: (init_declarator
       declarator: (identifier) @name)) @definition.constant)]
  (#match? @_const "^(const|constexpr)$"))

(field_declaration
  (type_qualifier) @_const
  declarator: (field_identifier) @name
  default_value: (_)
  (#match? @_const "^(const|constexpr)$")) @definition.constant

; -- calls (`new T()` counts as a call of T) -------------------------------------------

(call_expression
  function: (identifier) @name) @reference.call

(call_expression
  function: (field_expression
    argument: (_) @receiver
    field: [(field_identifier) @name
            (template_method name: (field_identifier) @name)])) @reference.call

(call_expression
  function: (qualified_identifier
    scope: (_) @receiver
    name: [(identifier) @name
           (template_function name: (identifier) @name)])) @reference.call

(call_expression
  function: (template_function
    name: (identifier) @name)) @reference.call

(new_expression
  type: [(type_identifier) @name
         (qualified_identifier scope: (_) @receiver name: (type_identifier) @name)
         (template_type name: (type_identifier) @name)]) @reference.call

; -- inheritance ---------------------------------------------------------------------

(base_class_clause
  [(type_identifier) (qualified_identifier) (template_type)] @name @reference.class)

; -- imports: #include, `using a::b;`, `using namespace a;` ----------------------------

(preproc_include
  path: (_) @name) @reference.import

(using_declaration
  (qualified_identifier
    scope: (_) @name
    name: (_) @import.name)) @reference.import

(using_declaration
  "namespace"
  [(identifier) (qualified_identifier)] @name) @reference.import
