"""The lark grammar of diffflow's Soufflé-compatible Datalog subset (LALR(1))."""

GRAMMAR = r"""
start: _item*

_item: declaration | type_declaration | directive | pragma | clause | functor_declaration
     | component | init | lattice

// .comp Name<T, U> : Base<T>, Other { ... }   and   .init instance = Name<number, symbol>
component: COMP component_type [":" component_type ("," component_type)*] "{" _component_item* "}"
_component_item: declaration | type_declaration | directive | clause | component | init
               | override
component_type: IDENT ["<" IDENT ("," IDENT)* ">"]
init: INIT IDENT "=" component_type
override: OVERRIDE IDENT

// .decl A, B(x: number) declares A and B alike
declaration: DECL IDENT ("," IDENT)* "(" [attribute ("," attribute)*] ")" qualifier* [choice]
           | DECL IDENT "=" DEBUG_DELTA "(" IDENT ")" qualifier*   -> debug_delta
attribute: IDENT ":" IDENT
qualifier: QUALIFIER
// choice-domain x, (y, z): one tuple per value of each domain
choice: CHOICE_DOMAIN domain ("," domain)*
domain: IDENT | "(" IDENT ("," IDENT)* ")"

// .functor f(a: number, symbol): symbol [stateful]
functor_declaration: FUNCTOR_DECL IDENT "(" [functor_param ("," functor_param)*] ")" ":" IDENT [STATEFUL]
functor_param: IDENT [":" IDENT]

type_declaration: TYPE IDENT SUBTYPE IDENT           -> subtype
                | TYPE IDENT "=" IDENT ("|" IDENT)*   -> type_alias
                | TYPE IDENT "=" "[" [attribute ("," attribute)*] "]"  -> record_type
                | TYPE IDENT "=" adt_branch ("|" adt_branch)*         -> adt_type
                // Soufflé's deprecated forms: subtypes of number, symbol and symbol
                | (NUMBER_TYPE | SYMBOL_TYPE | TYPE) IDENT            -> deprecated_type
adt_branch: IDENT "{" [attribute ("," attribute)*] "}"

directive: DIRECTIVE IDENT ("," IDENT)* [params]
params: "(" [param ("," param)*] ")"
param: IDENT "=" (STRING | IDENT | INT)

pragma: PRAGMA STRING [STRING]

// .lattice T<> { Bottom -> ..., Lub -> @lub(_, _), ... }: read, but lattices are not supported
lattice: LATTICE IDENT "<" ">" "{" lattice_operator ("," lattice_operator)* "}"
lattice_operator: IDENT ARROW term

clause: atom ("," atom)* [IF disjunction] "." [plan]
      | atom COMPARE atom IF disjunction "." [plan]   -> subsumption
plan: PLAN plan_order ("," plan_order)*
plan_order: INT ":" "(" [INT ("," INT)*] ")"

disjunction: conjunction (";" conjunction)*
conjunction: _literal ("," _literal)*
_literal: atom | negation | comparison | group | boolean
// Soufflé negates any body literal: !(a(x) ; b(x)), !!a(x), !x < 3 (De Morgan, by the parser)
negation: "!" _literal
group: "(" disjunction ")"
boolean: TRUE | FALSE
comparison: term COMPARE term

// a relation may be named like a functor Soufflé has no keyword for (abs, itou, ...); in a
// body, (abs(x)) is then an atom in a group, not a parenthesised term (priority 2)
atom.2: (IDENT | FUNCTOR) "(" [term ("," term)*] ")"

// Soufflé's precedence: lor < lxor < land < bor < bxor < band < shifts < + - < * / % <
// unary - bnot lnot < ^
?term: lor
?lor: lxor
    | lor LOR lxor      -> binary
?lxor: land
    | lxor LXOR land    -> binary
?land: bor
    | land LAND bor     -> binary
?bor: bxor
    | bor BOR bxor      -> binary
?bxor: band
    | bxor BXOR band    -> binary
?band: shift
    | band BAND shift   -> binary
?shift: sum
    | shift SHIFT sum   -> binary
?sum: product
    | sum PLUS product   -> binary
    | sum MINUS product  -> binary
?product: unary
    | product TIMES unary  -> binary
    | product DIVIDE unary -> binary
    | product MODULO unary -> binary
// unary minus binds looser than ^ (as in Soufflé and mathematics): -2 ^ 2 = -(2 ^ 2)
?unary: power
    | MINUS unary -> negative
    | NOT_OP unary -> prefix
?power: primary
    | primary CARET unary -> binary
?primary: IDENT        -> variable
    | WILDCARD         -> wildcard
    | INT              -> integer
    | IPV4             -> ipv4
    | FLOAT            -> float
    | STRING           -> string
    | "(" term ")"
    | aggregate
    | FUNCTOR "(" [term ("," term)*] ")"              -> functor
    | (MIN | MAX) "(" term "," term ("," term)* ")"   -> functor
    | AS "(" term "," IDENT ")"                       -> cast
    | USER_FUNCTOR "(" [term ("," term)*] ")"         -> user_functor
    | "[" [term ("," term)*] "]"                      -> record
    | NIL                                             -> nil
    | ITERATION "(" ")"                               -> iteration_counter
    | BRANCH ["(" [term ("," term)*] ")"]             -> branch

aggregate: COUNT ":" _aggregate_body
         | (SUM | MIN | MAX | MEAN) term ":" _aggregate_body
_aggregate_body: "{" aggregate_conjunction "}" | aggregate_atom
aggregate_conjunction: _literal ("," _literal)*
aggregate_atom: atom

DECL: ".decl"
COMP: ".comp"
INIT: ".init"
OVERRIDE: ".override"
FUNCTOR_DECL: ".functor"
CHOICE_DOMAIN.3: /choice-domain(?![A-Za-z0-9_?])/
STATEFUL.2: /stateful(?![A-Za-z0-9_?])/
TYPE: ".type"
NUMBER_TYPE: ".number_type"
SYMBOL_TYPE: ".symbol_type"
IF: ":-"
DIRECTIVE: ".input" | ".output" | ".printsize" | ".limitsize"
PRAGMA: ".pragma"
LATTICE: ".lattice"
ARROW: "->"
PLAN: ".plan"
SUBTYPE: "<:"
COMPARE: "!=" | "<=" | ">=" | "=" | "<" | ">"
PLUS: "+"
MINUS: "-"
TIMES: "*"
DIVIDE: "/"
MODULO: "%"
CARET: "^"
WILDCARD: "_"
COUNT: "count"
SUM: "sum"
MEAN: "mean"
MIN: "min"
MAX: "max"
// operator and functor names are words only where one can stand (contextual lexer); a
// functor name only before "(" (a variable may be called ord)
LOR.3: /lor(?![A-Za-z0-9_?])/
LXOR.3: /lxor(?![A-Za-z0-9_?])/
LAND.3: /land(?![A-Za-z0-9_?])/
BOR.3: /bor(?![A-Za-z0-9_?])/
BXOR.3: /bxor(?![A-Za-z0-9_?])/
BAND.3: /band(?![A-Za-z0-9_?])/
SHIFT.3: /(bshru|bshl|bshr)(?![A-Za-z0-9_?])/
NOT_OP.3: /(bnot|lnot)(?![A-Za-z0-9_?])/
FUNCTOR.3: /(cat|strlen|substr|ord|to_number|to_unsigned|to_float|to_string|itou|itof|utoi|utof|ftoi|ftou|abs|range|autoinc)(?=\s*\()/
AS.3: /as(?=\s*\()/
DEBUG_DELTA: "debug_delta"
ITERATION.3: /recursive_iteration_cnt(?=\s*\()/
USER_FUNCTOR: /@[A-Za-z_?][A-Za-z0-9_?]*/
NIL.3: /nil(?![A-Za-z0-9_?])/
BRANCH: /\$[A-Za-z_?][A-Za-z0-9_?]*(\.[A-Za-z_?][A-Za-z0-9_?]*)*/
TRUE: "true"
FALSE: "false"
// a name after a declaration that does not open an atom (nor a qualified one, G.edge(...)):
// btree, brie, inline, ...
QUALIFIER.2: /[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_?]|\.[A-Za-z_?]|\s*\()/
// a qualified name (instance.relation) is one token: no spaces around its dots
IDENT: /[A-Za-z_?][A-Za-z0-9_?]*(\.[A-Za-z_?][A-Za-z0-9_?]*)*/
// an IPv4 address 1.2.3.4 is a number (Soufflé's lexer): (1 << 24) + (2 << 16) + (3 << 8) + 4
IPV4.3: /\d+\.\d+\.\d+\.\d+/
FLOAT.2: /\d+\.\d+([eE][-+]?\d+)?/ | /\d+[eE][-+]?\d+/
INT: /0x[0-9A-Fa-f]+u?/ | /0b[01]+u?/ | /\d+u?/
STRING: /"(\\.|[^"\\\n])*"/

COMMENT: /\/\/[^\n]*/
BLOCK_COMMENT: /\/\*(.|\n)*?\*\//
%import common.WS
%ignore WS
%ignore COMMENT
%ignore BLOCK_COMMENT
"""
