"""The integers of a lowered loop: node kinds, expression opcodes, table layouts.

A lowered loop (:class:`diffflow.dataflow.rounds.LoopProgram`) is tables of int64:

``nodes`` (one row per node, construction order; :data:`NODE_COLUMNS` columns)
    ``[kind, input width, output width, a, b, c, d, e]`` where, by kind,

    * ``SELECT``: ``a`` = first expression (one per output column);
    * ``FILTER``: ``a`` = its expression;
    * ``FEEDBACK``: ``a`` = the loop's round limit (-1: none);
    * ``ARRANGE``: ``a`` = its trace, ``b`` = key width, ``c`` = offset of its column order
      in ``orders`` (arranged column ``j`` is input column ``orders[c + j]``);
    * ``JOIN``: ``a``, ``b`` = the left and right arrange nodes, ``c`` = key width, ``d`` =
      offset of its ``sources`` (output column ``j`` is column ``sources[d + j]`` of the left
      row followed by the whole right row), ``e`` = the left row's width;
    * ``DISTINCT``: ``a`` = its input trace, ``b`` = its output trace, ``c`` = key width
      (the whole row);
    * ``AGGREGATE``: ``a``, ``b``, ``c`` as for ``DISTINCT`` (the key a prefix of the input
      rows), ``d`` = its first row in ``aggs``, ``e`` = how many: ``(kind, column of the
      input row)`` rows, kinds :data:`AGG_KINDS` over ints (one output column each).

``consumers`` (CSR over nodes: ``(node, port)`` pairs), ``readers`` (CSR over arrange
nodes: ``(reader, side)``, side 0/1 a join's left/right input, 2 a distinct), ``code``
(``(opcode, argument)`` rows, postfix; ``code_ptr[x]`` starts expression ``x``).

>>> NODE_KINDS[DISTINCT], EXPR_OPS[X_WRAP32], AGG_KINDS[AGG_MIN]
('distinct', 'wrap32', 'min')
"""
CONCAT, NEGATE, SELECT, FILTER, ARRANGE, JOIN, DISTINCT, FEEDBACK, EXIT, ENTER, \
    AGGREGATE = range(11)
NODE_KINDS = ("concat", "negate", "select", "filter", "arrange", "join", "distinct",
              "feedback", "leave", "enter", "aggregate")
AGG_COUNT, AGG_SUM, AGG_MIN, AGG_MAX = range(4)
AGG_KINDS = ("count", "sum", "min", "max")
NODE_COLUMNS = 8

(X_COL, X_LIT, X_ADD, X_SUB, X_MUL, X_NEG, X_ABS, X_EQ, X_NE, X_LT, X_LE, X_GT, X_GE,
 X_AND, X_OR, X_NOT, X_MAX, X_MIN, X_WRAP32, X_WRAPU32) = range(20)
EXPR_OPS = ("col", "lit", "+", "-", "*", "neg", "abs", "==", "!=", "<", "<=", ">", ">=", "&",
            "|", "~", "max", "min", "wrap32", "wrapu32")

# why a run of rounds returned
SETTLED, TOO_BIG, ROUND_LIMIT, PAUSED = 0, 1, 2, 3
REASONS = ("settled", "too big", "round limit", "paused")
